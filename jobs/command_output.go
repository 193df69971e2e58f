package jobs

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Command is a command whose standard output is read as it writes it: a
// command source, or backup --stdin-from-command.
type Command struct {
	What    string        // what it is, in messages: "command source mydb.sql"
	Argv    []string      // the program and its arguments
	Env     []string      // exactly its environment: start from ScrubEnviron
	Dir     string        // its working folder; "": nightjar's
	Timeout time.Duration // 0: none
	// Stderr gets its standard error; nil: the end of it is kept
	// (CommandOutput.Stderr) and quoted in its error.
	Stderr io.Writer
}

// errLeftChild is why a command source whose output stayed open after its
// command exited failed.
var errLeftChild = errors.New("the command exited but a process it started kept its output open")

// CommandOutput is the standard output of a started Command. Its reads
// fail at the end of the output when the command did not exit with status
// 0, was stopped, or left a process holding the output open killGrace
// after it exited (which is then killed with its whole group), so that no
// snapshot is saved of an output cut short.
type CommandOutput struct {
	what    string
	r       *os.File
	p       *process
	stderr  *tailBuffer // nil when Command.Stderr was given
	closed  chan struct{}
	closeMu sync.Once
	err     *CommandError
}

// StartCommand starts c in a process group of its own with its standard
// output on a pipe that the returned CommandOutput reads. Its timeout or
// the end of ctx stops the whole group: SIGTERM, then SIGKILL killGrace
// later. Close it in any case.
func StartCommand(ctx context.Context, c Command) (*CommandOutput, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, &CommandError{What: c.What, Err: err}
	}
	o := &CommandOutput{what: c.What, r: pr, closed: make(chan struct{})}
	stderr := c.Stderr
	if stderr == nil {
		o.stderr = newTailBuffer(MaxCommandOutput)
		stderr = o.stderr
	}
	spec := commandSpec{what: c.What, argv: c.Argv, env: c.Env, dir: c.Dir, timeout: c.Timeout}
	p, err := startProcess(ctx, spec, func(cmd *exec.Cmd) error {
		// The pipe itself, not a copy: the output is read as it comes,
		// and to its end whenever the command exits.
		cmd.Stdout, cmd.Stderr = pw, stderr
		return nil
	})
	pw.Close() // the command holds its own copy
	if err != nil {
		pr.Close()
		return nil, err
	}
	o.p = p
	go o.boundAfterExit()
	return o, nil
}

// boundAfterExit gives the rest of the output killGrace once the command
// has exited: a background child it started (a daemon) may hold the
// output open for ever.
func (o *CommandOutput) boundAfterExit() {
	select {
	case <-o.p.done:
		// A pipe that cannot take a deadline is read to its end.
		_ = o.r.SetReadDeadline(time.Now().Add(killGrace))
	case <-o.closed:
	}
}

// Read reads the command's standard output; at its end it waits for the
// command and fails when the command failed.
func (o *CommandOutput) Read(b []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.r.Read(b)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The command exited killGrace ago and its output is still
		// open: what holds it is stopped.
		signalGroup(o.p.cmd.Process.Pid, syscall.SIGKILL)
		o.err = o.p.wait()
		if o.err == nil {
			o.err = &CommandError{What: o.what, Err: errLeftChild}
		}
	case err != io.EOF:
		return n, err
	default:
		o.err = o.p.wait()
		if o.err == nil {
			return n, io.EOF
		}
	}
	o.err.Tail = tailLine(o.Stderr(), tailInMessage)
	return n, o.err
}

// Err says how the command failed once its output was read to its end or
// it was closed: nil when it exited with status 0 (or was not waited for).
func (o *CommandOutput) Err() *CommandError { return o.err }

// Stderr returns the end of what the command wrote to its standard error
// ("" when Command.Stderr was given).
func (o *CommandOutput) Stderr() string {
	if o.stderr == nil {
		return ""
	}
	return o.stderr.String()
}

// Close stops the command when it still runs (the whole group: SIGTERM,
// then SIGKILL killGrace later), waits for it and closes the pipe.
func (o *CommandOutput) Close() error {
	o.closeMu.Do(func() {
		close(o.closed)
		o.r.Close() // a command blocked writing gets SIGPIPE
		if o.err == nil {
			select {
			case <-o.p.done:
				o.p.wait()
			default:
				o.p.abort()
			}
		}
	})
	return nil
}
