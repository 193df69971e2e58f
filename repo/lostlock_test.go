package repo_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/lease"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// stillClock is a lease clock that moves only when the test sets it; its
// timers never fire, so the refresher never runs and a lease runs out
// only when the test moves the clock past it (as a host suspended for
// longer than its lease finds on waking).
type stillClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stillClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (*stillClock) After(time.Duration) <-chan time.Time { return nil }

func (c *stillClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A prune whose lease runs out after it planned (its host was suspended)
// deletes nothing: no pack, no index file, and says its lock was lost;
// the same prune with its lease kept deletes packs, so the first one had
// something to delete.
func TestPruneWhoseLeaseIsLostDeletesNothing(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	f := newPruneFixture(t, mem)
	if err := mem.Remove(ctx, repo.Handle{Type: repo.SnapshotFile, Name: f.old.ID}); err != nil {
		t.Fatal(err)
	}
	clock := &stillClock{now: time.Now()}
	r, err := repo.Open(ctx, lease.Wrap(mem, lease.WithClock(clock)), repo.OpenOptions{Password: pw(password), Now: later})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	packs, indexes := names(t, mem, repo.PackFile), names(t, mem, repo.IndexFile)
	opts := repo.PruneOptions{TempDir: t.TempDir(), MaxUnused: repo.UnusedLimit{Unlimited: true}}
	planned := false
	opts.Progress = func(p repo.PruneProgress) {
		if p.Phase == "plan" && !planned {
			planned = true
			clock.jump(lease.DefaultLease + time.Second)
		}
	}
	_, err = r.Prune(ctx, opts)
	if !errors.Is(err, repo.ErrLockLost) {
		t.Fatalf("prune after its lease ran out: %v, want ErrLockLost", err)
	}
	if !planned {
		t.Fatal("prune never reached its plan")
	}
	for _, want := range [][2][]string{{packs, names(t, mem, repo.PackFile)}, {indexes, names(t, mem, repo.IndexFile)}} {
		for _, name := range want[0] {
			if !slices.Contains(want[1], name) {
				t.Errorf("%s was deleted by a prune whose lock was lost", name)
			}
		}
	}
	if locks := names(t, mem, repo.LockFile); len(locks) != 0 {
		t.Errorf("locks left behind: %v", locks)
	}

	opts.Progress = nil
	res, err := r.Prune(ctx, opts)
	if err != nil {
		t.Fatalf("prune with its lease kept: %v", err)
	}
	if res.PacksDeleted == 0 {
		t.Fatal("the prune deleted no pack: the test proves nothing")
	}
}

// A forget whose lease ran out before it removed anything removes no
// snapshot record, and fails with ErrLockLost.
func TestForgetWhoseLeaseIsLostRemovesNothing(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	f := newPruneFixture(t, mem)
	clock := &stillClock{now: time.Now()}
	r, err := repo.Open(ctx, lease.Wrap(mem, lease.WithClock(clock)), repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before := names(t, mem, repo.SnapshotFile)
	_, err = r.Forget(ctx, repo.ForgetOptions{
		GroupKey: func(*repo.Snapshot) string { return "" },
		Plan: func([]*repo.Snapshot, map[string]bool) ([]string, error) {
			clock.jump(lease.DefaultLease + time.Second)
			return []string{f.old.ID}, nil
		},
	})
	if !errors.Is(err, repo.ErrLockLost) {
		t.Fatalf("forget after its lease ran out: %v, want ErrLockLost", err)
	}
	after := names(t, mem, repo.SnapshotFile)
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Errorf("snapshots %v became %v", before, after)
	}
}
