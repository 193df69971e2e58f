package pass

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// busyStore is a fakeStore whose Finish finds the store busy the first
// busy times, writing nothing, as a database locked by another process.
type busyStore struct {
	*fakeStore
	busy int
}

func (s *busyStore) Finish(ctx context.Context, run Run, owner string, next *Run) (bool, error) {
	s.mu.Lock()
	busy := s.busy > 0
	if busy {
		s.busy--
		s.finishes[run.ID]++
	}
	s.mu.Unlock()
	if busy {
		return false, fmt.Errorf("finish run %d: %w", run.ID, ErrStoreBusy)
	}
	return s.fakeStore.Finish(ctx, run, owner, next)
}

// A result that meets a busy store is recorded again until it is written:
// the run ends succeeded instead of staying running for orphan reclaim.
func TestFinishRetriesWhileTheStoreIsBusy(t *testing.T) {
	f := newFixture(t, manual(t, "j"))
	store := &busyStore{fakeStore: f.store, busy: 2}
	f.pass.Store = store
	r := f.queued("j", "normal", at(0))

	sum := f.run(at(h))
	if len(sum.Finished) != 1 || len(sum.Warnings) != 0 {
		t.Fatalf("finished %+v, warnings %q; want run %d finished without a warning", sum.Finished, sum.Warnings, r.ID)
	}
	wantRun(t, f.store.get(r.ID), StatusSucceeded, "", "")
	if n := f.store.finishCalls(r.ID); n != 3 {
		t.Errorf("Finish called %d times, want 3 (two busy, one written)", n)
	}
}

// Any other failure to record is not retried.
func TestFinishDoesNotRetryOtherErrors(t *testing.T) {
	f := newFixture(t, manual(t, "j"))
	calls := 0
	f.pass.Store = finishFunc{f.store, func(context.Context, Run, string, *Run) (bool, error) {
		calls++
		return false, errors.New("disk I/O error")
	}}
	f.queued("j", "normal", at(0))

	_, err := f.pass.Run(context.Background())
	if err == nil || calls != 1 {
		t.Errorf("pass error %v after %d Finish calls; want the error after 1", err, calls)
	}
}

// finishFunc is a fakeStore with Finish replaced.
type finishFunc struct {
	*fakeStore
	finish func(ctx context.Context, run Run, owner string, next *Run) (bool, error)
}

func (s finishFunc) Finish(ctx context.Context, run Run, owner string, next *Run) (bool, error) {
	return s.finish(ctx, run, owner, next)
}
