package jobs

import (
	"context"
	"testing"
	"time"
)

// fakeTimeout makes the timers of duration d of the commands started from
// now on fire when the test sends on fire (an unbuffered channel: the send
// returns once a watcher took it); stopped is closed when such a timer is
// stopped, as its watcher returns. Other timers are real.
func fakeTimeout(t *testing.T, d time.Duration) (fire chan<- time.Time, stopped <-chan struct{}) {
	t.Helper()
	ch := make(chan time.Time)
	done := make(chan struct{})
	real := commandTimer
	commandTimer = func(got time.Duration) (<-chan time.Time, func() bool) {
		if got != d {
			return real(got)
		}
		var once bool
		return ch, func() bool {
			if !once {
				once = true
				close(done)
			}
			return true
		}
	}
	t.Cleanup(func() { commandTimer = real })
	return ch, done
}

// A command that exited with status 0 before its timeout passed is not
// reported as timed out, however late its caller waits for it.
func TestCommandThatExitedBeforeItsTimeoutSucceeded(t *testing.T) {
	fire, stopped := fakeTimeout(t, time.Hour)
	p, err := startProcess(context.Background(), commandSpec{what: "after hook", argv: []string{"true"}, timeout: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-p.done // it exited; nobody has waited for it yet
	select {
	case fire <- time.Now(): // the timeout passes now
	case <-stopped: // the watcher saw the exit first and is gone
	}
	if cerr := p.wait(); cerr != nil {
		t.Errorf("a command that exited 0 before its timeout: %v", cerr)
	}
}
