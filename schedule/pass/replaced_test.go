package pass

import (
	"context"
	"errors"
	"testing"
)

// A replaced repository stays replaced until the operator acts: its run
// is not retried, though its class (repository) is; a missing one is.
func TestReplacedRepositoryIsNotRetried(t *testing.T) {
	for _, c := range []struct {
		code  string
		retry bool
	}{{CodeRepositoryReplaced, false}, {"NO_REPOSITORY", true}} {
		t.Run(c.code, func(t *testing.T) {
			f := newFixture(t, manual(t, "daten"))
			f.run(at(0))
			f.exec.do = func(context.Context, JobDef, Run) (Result, error) {
				return Result{}, &ClassError{Class: ClassRepository, Code: c.code, Err: errors.New("repository main")}
			}
			first := f.queued("daten", "normal", at(h))
			sum := f.run(at(h))
			wantRun(t, f.store.get(first.ID), StatusFailed, ClassRepository, c.code)
			if got := len(f.store.runsOf("daten")) == 2; got != c.retry || (len(sum.Requeued) == 1) != c.retry {
				t.Errorf("retry queued: %v, want %v", got, c.retry)
			}
		})
	}
}
