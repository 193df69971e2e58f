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
)

// process is a command started in a process group of its own. Its
// timeout, the end of its context or abort stop it: SIGTERM to the whole
// group, then SIGKILL killGrace later unless it has ended by then.
type process struct {
	what      string
	cmd       *exec.Cmd
	timeout   time.Duration
	done      chan struct{} // closed when cmd.Wait returned
	waitErr   error
	ended     chan struct{} // closed by wait: the caller has all it wants of it
	endOnce   sync.Once
	aborted   chan struct{}
	abortOnce sync.Once
	why       atomic.Int32
}

// startProcess starts argv with exactly env as its environment, its
// standard input empty; setup connects its output before it starts. A
// timeout of 0 or less is none.
func startProcess(ctx context.Context, what string, argv, env []string, timeout time.Duration, setup func(*exec.Cmd) error) (*process, error) {
	if len(argv) == 0 {
		return nil, &CommandError{What: what, Err: errors.New("no command")}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{}, env...) // never nil: nil would inherit nightjar's environment
	ownProcessGroup(cmd)
	cmd.WaitDelay = killGrace // a background child holding its output open does not hold the run
	if setup != nil {
		if err := setup(cmd); err != nil {
			return nil, &CommandError{What: what, Err: err}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, &CommandError{What: what, Err: err}
	}
	if err := cmd.Start(); err != nil {
		return nil, &CommandError{What: what, Err: err}
	}
	p := &process{what: what, cmd: cmd, timeout: timeout, done: make(chan struct{}), ended: make(chan struct{}), aborted: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	go p.watch(ctx)
	return p, nil
}

// watch stops the process group when the timeout passes, the context
// ends or abort is called, whichever comes first, unless the caller is
// done with the process.
func (p *process) watch(ctx context.Context) {
	var expired <-chan time.Time
	if p.timeout > 0 {
		timer := time.NewTimer(p.timeout)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case <-p.ended:
		return
	case <-ctx.Done():
		p.why.Store(stoppedCancelled)
	case <-expired:
		p.why.Store(stoppedTimeout)
	case <-p.aborted:
		p.why.Store(stoppedAborted)
	}
	pid := p.cmd.Process.Pid
	signalGroup(pid, syscall.SIGTERM)
	grace := time.NewTimer(killGrace)
	defer grace.Stop()
	select {
	case <-p.ended:
	case <-grace.C:
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
	switch p.why.Load() {
	case stoppedTimeout:
		return &CommandError{What: p.what, TimedOut: true, Timeout: p.timeout}
	case stoppedCancelled:
		return &CommandError{What: p.what, Err: context.Canceled}
	case stoppedAborted:
		return &CommandError{What: p.what, Err: errors.New("stopped, as the backup failed")}
	}
	if err != nil {
		return &CommandError{What: p.what, Err: err}
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
