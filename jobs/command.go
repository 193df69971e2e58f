package jobs

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"
)

// killGrace is how long a stopped command (a hook or a command source past
// its timeout, or whose run was cancelled) has between SIGTERM and SIGKILL
// to its whole process group.
const killGrace = 10 * time.Second

// CommandError is a hook or a command source that failed: it could not
// start, exited with a failure, or was stopped at its timeout or by the
// run's cancellation. Tail is the end of what it printed, on one line.
type CommandError struct {
	What     string        // "before hook", "command source mydb.sql"
	Err      error         // why it failed to start or to end well; nil when it timed out
	TimedOut bool          // stopped at its timeout
	Timeout  time.Duration // the timeout it had
	Tail     string
}

func (e *CommandError) Error() string {
	var msg string
	if e.TimedOut {
		msg = fmt.Sprintf("%s did not end within %s and was stopped", e.What, e.Timeout)
	} else {
		msg = fmt.Sprintf("%s failed: %v", e.What, e.Err)
	}
	if e.Tail != "" {
		msg += ": " + e.Tail
	}
	return msg
}

func (e *CommandError) Unwrap() error { return e.Err }

// Why a command was stopped.
const (
	notStopped int32 = iota
	stoppedTimeout
	stoppedCancelled
	stoppedAborted
	stoppedShutdown
)

// commandSpec is what startProcess starts.
type commandSpec struct {
	what    string   // "before hook", "command source mydb.sql"
	argv    []string // the program and its arguments
	env     []string // exactly its environment
	dir     string   // its working folder; "": nightjar's
	timeout time.Duration
	// killBy, when set, is the deadline of a run stopped by a shutdown
	// (pass.Shutdown.Deadline, a little before the pass stops waiting):
	// the group is sent SIGTERM in time to be SIGKILLed by then.
	killBy time.Time
	// run, when set, is the context of the run a command outlives the
	// cancellation of (after and on_* hooks): a shutdown that ends it
	// while the command runs sets killBy then.
	run context.Context
}

// process is a command started in a process group of its own. Its
// timeout, the end of its context, abort or its killBy stop it: SIGTERM
// to the whole group, then SIGKILL killGrace later (at the latest at
// killBy) unless it has ended by then.
type process struct {
	spec      commandSpec
	cmd       *exec.Cmd
	done      chan struct{} // closed when cmd.Wait returned
	waitErr   error
	ended     chan struct{} // closed by wait: the caller has all it wants of it
	endOnce   sync.Once
	aborted   chan struct{}
	abortOnce sync.Once
	why       atomic.Int32
}

// commandTimer starts a timer of d for a command's watcher (tests replace
// it to decide when a timeout passes); stop releases it.
var commandTimer = func(d time.Duration) (c <-chan time.Time, stop func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// startProcess starts spec's command, its standard input empty; setup
// connects its output before it starts. A timeout of 0 or less is none.
func startProcess(ctx context.Context, spec commandSpec, setup func(*exec.Cmd) error) (*process, error) {
	if len(spec.argv) == 0 {
		return nil, &CommandError{What: spec.what, Err: errors.New("no command")}
	}
	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Env = append([]string{}, spec.env...) // never nil: nil would inherit nightjar's environment
	cmd.Dir = spec.dir
	ownProcessGroup(cmd)
	cmd.WaitDelay = killGrace // a background child holding its output open does not hold the run
	if setup != nil {
		if err := setup(cmd); err != nil {
			return nil, &CommandError{What: spec.what, Err: err}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, &CommandError{What: spec.what, Err: err}
	}
	if err := cmd.Start(); err != nil {
		return nil, &CommandError{What: spec.what, Err: err}
	}
	p := &process{spec: spec, cmd: cmd, done: make(chan struct{}), ended: make(chan struct{}), aborted: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	go p.watch(ctx, commandTimer) // read now, not in the goroutine: tests replace it
	return p, nil
}

// watch stops the process group when the timeout passes, the context
// ends, abort is called or killBy nears (set at the start, or when a
// shutdown ends the run meanwhile), whichever comes first, unless the
// process has exited or the caller is done with it.
func (p *process) watch(ctx context.Context, timer func(time.Duration) (<-chan time.Time, func() bool)) {
	var expired, shutdown <-chan time.Time
	if p.spec.timeout > 0 {
		c, stop := timer(p.spec.timeout)
		defer stop()
		expired = c
	}
	grace := killGrace
	// armShutdown leaves the command killGrace after SIGTERM, or half
	// the time left when that is shorter, before the SIGKILL at killBy.
	armShutdown := func(killBy time.Time) (stop func() bool) {
		left := time.Until(killBy)
		grace = max(min(killGrace, left/2), 0)
		shutdown, stop = timer(max(left-grace, 0))
		return stop
	}
	var runEnded <-chan struct{}
	if !p.spec.killBy.IsZero() {
		defer armShutdown(p.spec.killBy)()
	} else if p.spec.run != nil {
		runEnded = p.spec.run.Done()
	}
	var why int32
	for why == 0 {
		select {
		case <-p.done:
			return
		case <-p.ended:
			return
		case <-ctx.Done():
			why = stoppedCancelled
		case <-expired:
			why = stoppedTimeout
		case <-shutdown:
			why = stoppedShutdown
		case <-p.aborted:
			why = stoppedAborted
		case <-runEnded:
			// A user's cancellation does not stop it; a shutdown bounds it.
			runEnded = nil
			if killBy := shutdownDeadline(p.spec.run); !killBy.IsZero() {
				defer armShutdown(killBy)()
			}
		}
	}
	select {
	case <-p.done:
		if why != stoppedAborted {
			// It exited before it was stopped: it ended well or not by
			// itself.
			return
		}
	default:
	}
	p.why.Store(why)
	pid := p.cmd.Process.Pid
	signalGroup(pid, syscall.SIGTERM)
	kill, stop := timer(grace)
	defer stop()
	select {
	case <-p.ended:
	case <-kill:
		signalGroup(pid, syscall.SIGKILL)
	}
}

// wait waits for the process to end and says how it failed (nil: it
// exited with status 0 and was not stopped).
func (p *process) wait() *CommandError {
	<-p.done
	p.endOnce.Do(func() { close(p.ended) })
	err := p.waitErr
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // it exited well; a child it left kept its output open
	}
	what := p.spec.what
	switch p.why.Load() {
	case stoppedTimeout:
		return &CommandError{What: what, TimedOut: true, Timeout: p.spec.timeout}
	case stoppedCancelled:
		return &CommandError{What: what, Err: context.Canceled}
	case stoppedAborted:
		return &CommandError{What: what, Err: errors.New("stopped, as the backup failed")}
	case stoppedShutdown:
		return &CommandError{What: what, Err: errors.New("stopped, as nightjar is shutting down")}
	}
	if err != nil {
		return &CommandError{What: what, Err: err}
	}
	return nil
}

// abort stops the process group now and waits for the process to end.
func (p *process) abort() {
	p.abortOnce.Do(func() { close(p.aborted) })
	p.wait()
}

// tailBuffer keeps the last limit bytes written to it, and counts them all.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	total int64
}

func newTailBuffer(limit int) *tailBuffer { return &tailBuffer{limit: limit} }

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	b.buf = append(b.buf, p...)
	if len(b.buf) > 2*b.limit {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.limit:]...)
	}
	return len(p), nil
}

// String returns the last limit bytes (from the first whole character on),
// preceded by a line saying how many bytes before them were cut.
func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	data := b.buf
	if len(data) > b.limit {
		data = data[len(data)-b.limit:]
	}
	for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.RuneStart(data[0]); i++ {
		data = data[1:]
	}
	if cut := b.total - int64(len(data)); cut > 0 {
		return fmt.Sprintf("... %d bytes cut\n%s", cut, data)
	}
	return string(data)
}

// tailLine is the end of text on one line, at most max bytes: its lines
// that are not blank, joined by " | ".
func tailLine(text string, max int) string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines, " | ")
	if len(s) <= max {
		return s
	}
	s = s[len(s)-max:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return "..." + s
}
