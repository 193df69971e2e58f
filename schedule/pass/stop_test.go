package pass

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A run's context says why it ended (StoppedStatus and the executor read
// it): a shutdown hands the executor a deadline a little before the pass
// stops waiting, so that what it still runs (an after hook) ends in time
// for its result to be recorded; a user's cancellation is
// ErrCancelRequested.
func TestRunContextSaysWhyItEnded(t *testing.T) {
	cases := []struct {
		name       string
		shutdown   bool // else a user's cancellation
		execErr    error
		wantStatus string // StoppedStatus, and what the pass records
	}{
		{name: "a shutdown that interrupted the work", shutdown: true, execErr: errors.New("stopped"), wantStatus: StatusInterrupted},
		{name: "a shutdown after the work was done", shutdown: true, wantStatus: StatusSucceeded},
		{name: "a user's cancellation", execErr: errors.New("stopped"), wantStatus: StatusCancelled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, manual(t, "daten"))
			const wait = 10 * time.Second
			f.pass.ShutdownWait = wait
			f.run(at(0))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var cause error
			var stopped string
			var shutdownAt time.Time
			f.exec.do = func(runCtx context.Context, _ JobDef, run Run) (Result, error) {
				if c.shutdown {
					shutdownAt = time.Now()
					cancel()
				} else {
					f.store.requestCancel(run.ID)
				}
				waitDone(t, runCtx)
				cause, stopped = context.Cause(runCtx), StoppedStatus(runCtx, c.execErr)
				return Result{}, c.execErr
			}
			first := f.queued("daten", "normal", at(h))
			f.clock.Set(at(h))
			if _, err := f.pass.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if got := f.store.get(first.ID).Status; got != c.wantStatus {
				t.Errorf("recorded %s, want %s", got, c.wantStatus)
			}
			if want := c.wantStatus; want == StatusSucceeded && stopped != "" || want != StatusSucceeded && stopped != want {
				t.Errorf("StoppedStatus %q: the executor and the pass disagree (recorded %s)", stopped, c.wantStatus)
			}
			var s *Shutdown
			switch {
			case !c.shutdown:
				if !errors.Is(cause, ErrCancelRequested) {
					t.Errorf("cause %v, want ErrCancelRequested", cause)
				}
			case !errors.As(cause, &s):
				t.Errorf("cause %v, want a *Shutdown", cause)
			case !s.Deadline.After(shutdownAt) || s.Deadline.After(shutdownAt.Add(wait-shutdownMargin(wait)).Add(time.Second)):
				t.Errorf("deadline %s after the shutdown, want a little before ShutdownWait %s", s.Deadline.Sub(shutdownAt), wait)
			}
		})
	}
}

// After a user's cancellation, the run's heartbeat is still renewed until
// the executor returns (its after hook may run for minutes), so that no
// other pass reclaims the run as orphaned meanwhile; then the run is
// recorded cancelled.
func TestHeartbeatGoesOnAfterACancellation(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.run(at(0))
	var afterCancel atomic.Bool
	beats := make(chan struct{}, 64)
	f.store.mu.Lock()
	f.store.onBeat = func() {
		if afterCancel.Load() {
			select {
			case beats <- struct{}{}:
			default:
			}
		}
	}
	f.store.mu.Unlock()
	var renewed bool
	f.exec.do = func(ctx context.Context, _ JobDef, run Run) (Result, error) {
		f.store.requestCancel(run.ID)
		waitDone(t, ctx)
		afterCancel.Store(true)
		// The executor is held (as by an after hook) until three more
		// heartbeats came. The minute is only a bound on how long a
		// failing test hangs: heartbeats that go on come every few
		// milliseconds, and load cannot stretch that to a minute.
		renewed = true
		for range 3 {
			select {
			case <-beats:
			case <-time.After(time.Minute):
				renewed = false
			}
			if !renewed {
				break
			}
		}
		return Result{}, &ClassError{Class: ClassCancelled, Code: CodeCancelled, Err: ctx.Err()}
	}
	first := f.queued("daten", "normal", at(h))
	f.run(at(h))
	if !renewed {
		t.Error("the heartbeat stopped at the cancellation while the executor still ran")
	}
	wantRun(t, f.store.get(first.ID), StatusCancelled, ClassCancelled, CodeCancelled)
}
