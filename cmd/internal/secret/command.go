package secret

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/nightjar-backup/nightjar/jobs"
)

// DefaultCommandTimeout is how long a password command may run: the
// --password-command of the CLI's, and a repository's unless it sets
// password_command_timeout.
const DefaultCommandTimeout = 30 * time.Second

// waitDelay is how long a password command's output is waited for after
// it ended or was killed: a child that left the process group (setsid)
// and holds the output open does not hold nightjar.
const waitDelay = 2 * time.Second

var (
	errTimedOut    = errors.New("password command timed out")
	errOutputLimit = errors.New("password command's first line too long")
)

// afterFunc calls f after d, unless stopped first; tests replace it to
// decide when a timeout passes.
var afterFunc = func(d time.Duration, f func()) (stop func() bool) { return time.AfterFunc(d, f).Stop }

// Command runs argv and returns the first line of its standard output as
// the password. It reads at most MaxLine bytes of it (the rest is
// discarded), gives the command no standard input, and never reads its
// standard error: a command that fails may print there the token it
// failed to use. A command still running after timeout, or printing a
// first line longer than MaxLine, is killed with its process group. Its
// errors say only how the command ended.
func Command(ctx context.Context, argv []string, timeout time.Duration) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("is empty")
	}
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	run, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := afterFunc(timeout, func() { cancel(errTimedOut) })
	defer stop()

	cmd := exec.CommandContext(run, argv[0], argv[1:]...)
	jobs.OwnProcessGroup(cmd)
	cmd.Cancel = func() error {
		jobs.KillProcessGroup(cmd.Process.Pid)
		return nil
	}
	cmd.WaitDelay = waitDelay
	out := &firstLine{onTooLong: func() { cancel(errOutputLimit) }}
	cmd.Stdout = out // standard input and error: the null device
	err := cmd.Run()
	switch cause := context.Cause(run); {
	case out.tooLong:
		return nil, fmt.Errorf("%w: it was stopped", errTooLong)
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return out.line()
	case errors.Is(cause, errTimedOut):
		return nil, fmt.Errorf("did not finish within %s and was stopped with everything it started (set password_command_timeout to allow longer)", timeout)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("was stopped: %w", ctx.Err())
	}
	return nil, fmt.Errorf("failed: %s (its standard error is not shown, as it may hold the password: run the command by hand to see why)", exitText(err))
}

// exitText says how a command ended, without anything it printed.
func exitText(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if exit.ExitCode() >= 0 {
			return fmt.Sprintf("exit status %d", exit.ExitCode())
		}
		return "was ended (" + exit.String() + ")" // "signal: killed"
	}
	return "could not be started: " + err.Error()
}
