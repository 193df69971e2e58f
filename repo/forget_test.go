package repo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// forgetBase is the time of the oldest snapshot of the forget tests.
var forgetBase = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// forgetSnapID is the fixed ID of the forget tests' snapshot i of a group.
func forgetSnapID(group, i int) string { return fmt.Sprintf("%02d%030d", group, i) }

// repoWithSnapshots makes a repository in be with two groups (hosts a and
// b) of n snapshots each, an hour apart, with fixed IDs.
func repoWithSnapshots(t *testing.T, be repo.Backend, n int) *repo.Repository {
	t.Helper()
	ctx := context.Background()
	r := initRepoWith(t, be, password, repo.InitOptions{Now: func() time.Time { return forgetBase }})
	tree, err := writer(t, r).SaveTree(ctx, &repo.Tree{})
	if err != nil {
		t.Fatal(err)
	}
	written := flush(t, r)
	for g, host := range []string{"a", "b"} {
		for i := 0; i < n; i++ {
			s := &repo.Snapshot{ID: forgetSnapID(g, i), Time: forgetBase.Add(time.Duration(i) * time.Hour),
				Hostname: host, Paths: []string{"/data"}, Tree: tree}
			if err := written.SaveSnapshot(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

// byHost is the grouping of the forget tests.
func byHost(s *repo.Snapshot) string { return s.Hostname }

// keepNewest returns a plan that forgets all but the newest keep
// snapshots of each host, and is not pinned.
func keepNewest(keep int) repo.ForgetPlan {
	return func(snaps []*repo.Snapshot, pinned map[string]bool) ([]string, error) {
		seen := map[string]int{}
		var victims []string
		for i := len(snaps) - 1; i >= 0; i-- { // newest first
			s := snaps[i]
			seen[s.Hostname]++
			if seen[s.Hostname] > keep && !pinned[s.ID] {
				victims = append(victims, s.ID)
			}
		}
		return victims, nil
	}
}

// forgetIDs returns a plan that forgets exactly ids.
func forgetIDs(ids ...string) repo.ForgetPlan {
	return func([]*repo.Snapshot, map[string]bool) ([]string, error) { return ids, nil }
}

// state is what a forget may change in a repository: its snapshots, marks,
// pins and locks.
type state struct {
	snapshots, marks, pins, locks []string
}

func stateOf(t *testing.T, be repo.Backend) state {
	t.Helper()
	sorted := func(ft repo.FileType) []string {
		s := names(t, be, ft)
		slices.Sort(s)
		return s
	}
	return state{sorted(repo.SnapshotFile), sorted(repo.ForgetFile), sorted(repo.PinFile), sorted(repo.LockFile)}
}

func (s state) String() string {
	return fmt.Sprintf("snapshots %v marks %v pins %v locks %v", s.snapshots, s.marks, s.pins, s.locks)
}

func sameState(a, b state) bool {
	return slices.Equal(a.snapshots, b.snapshots) && slices.Equal(a.marks, b.marks) &&
		slices.Equal(a.pins, b.pins) && slices.Equal(a.locks, b.locks)
}

// Forget removes exactly the plan's snapshots on every backend, leaves no
// mark and no lock, and reports them.
func TestForgetRemovesThePlansSnapshots(t *testing.T) {
	ctx := context.Background()
	backends := []struct {
		name string
		new  func(t *testing.T) repo.Backend
	}{
		{"local", newLocal},
		{"memory", func(*testing.T) repo.Backend { return memory.New() }},
	}
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.new(t)
			r := repoWithSnapshots(t, be, 4)
			res, err := r.Forget(ctx, repo.ForgetOptions{Plan: keepNewest(2), GroupKey: byHost})
			if err != nil {
				t.Fatal(err)
			}
			wantGone := []string{forgetSnapID(0, 0), forgetSnapID(0, 1), forgetSnapID(1, 0), forgetSnapID(1, 1)}
			if !slices.Equal(res.Forgotten, wantGone) || len(res.Completed) != 0 || len(res.KeptPinned) != 0 {
				t.Errorf("result %+v, want forgotten %v only", res, wantGone)
			}
			want := state{snapshots: []string{forgetSnapID(0, 2), forgetSnapID(0, 3), forgetSnapID(1, 2), forgetSnapID(1, 3)}}
			if got := stateOf(t, be); !sameState(got, want) {
				t.Errorf("after forget: %v, want %v", got, want)
			}
			// A second run with the same policy has nothing to do.
			res, err = r.Forget(ctx, repo.ForgetOptions{Plan: keepNewest(2), GroupKey: byHost})
			if err != nil || len(res.Forgotten)+len(res.Completed)+len(res.KeptPinned) != 0 {
				t.Errorf("second forget: %+v, %v; want nothing done", res, err)
			}
		})
	}
}

// Forget refuses, before writing anything, a plan that names the newest
// snapshot of a group, an unknown snapshot or one snapshot twice.
func TestForgetRefusesBadPlans(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		victims []string
		wantErr error
	}{
		{"newest of a group", []string{forgetSnapID(0, 0), forgetSnapID(1, 2)}, nil},
		{"only snapshot named wrongly", []string{"ffff"}, repo.ErrSnapshotNotFound},
		{"twice", []string{forgetSnapID(0, 0), forgetSnapID(0, 0)}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			be := memory.New()
			r := repoWithSnapshots(t, be, 3)
			before := stateOf(t, be)
			_, err := r.Forget(ctx, repo.ForgetOptions{Plan: forgetIDs(tc.victims...), GroupKey: byHost})
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("forget of %v: %v, want an error (%v)", tc.victims, err, tc.wantErr)
			}
			if after := stateOf(t, be); !sameState(before, after) {
				t.Errorf("a refused forget changed the repository: %v, was %v", after, before)
			}
		})
	}
}

// A plan's error stops the forget before anything is written.
func TestForgetStopsOnAPlansError(t *testing.T) {
	be := memory.New()
	r := repoWithSnapshots(t, be, 2)
	before := stateOf(t, be)
	planErr := errors.New("no such policy")
	_, err := r.Forget(context.Background(), repo.ForgetOptions{
		Plan:     func([]*repo.Snapshot, map[string]bool) ([]string, error) { return nil, planErr },
		GroupKey: byHost,
	})
	if !errors.Is(err, planErr) {
		t.Fatalf("forget: %v, want the plan's error", err)
	}
	if after := stateOf(t, be); !sameState(before, after) {
		t.Errorf("forget changed the repository: %v, was %v", after, before)
	}
}

// Beside any other lock, forget is busy at once and changes nothing.
func TestForgetIsBusyBesideALock(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("exclusive=%v", exclusive), func(t *testing.T) {
			ctx := context.Background()
			be := memory.New()
			r := repoWithSnapshots(t, be, 3)
			lock, err := openRepo(t, be).Lock(ctx, exclusive, "backup")
			if err != nil {
				t.Fatal(err)
			}
			defer lock.Unlock()
			before := stateOf(t, be)
			_, err = r.Forget(ctx, repo.ForgetOptions{Plan: keepNewest(1), GroupKey: byHost})
			if !errors.Is(err, repo.ErrBusy) {
				t.Fatalf("forget beside a lock: %v, want ErrBusy", err)
			}
			if after := stateOf(t, be); !sameState(before, after) {
				t.Errorf("a busy forget changed the repository: %v, was %v", after, before)
			}
		})
	}
}

// The plan sees the pins; a pinned snapshot that a plan names anyway is
// marked, then unmarked when the pins are listed, and kept.
func TestForgetKeepsPinnedSnapshots(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := repoWithSnapshots(t, be, 3)
	pinned := forgetSnapID(0, 0)
	if _, err := r.Pin(ctx, pinned, "audit"); err != nil {
		t.Fatal(err)
	}
	var seen map[string]bool
	res, err := r.Forget(ctx, repo.ForgetOptions{
		Plan: func(_ []*repo.Snapshot, p map[string]bool) ([]string, error) {
			seen = p
			return []string{pinned, forgetSnapID(0, 1)}, nil
		},
		GroupKey: byHost,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !seen[pinned] || len(seen) != 1 {
		t.Errorf("the plan saw pins %v, want %s", seen, pinned)
	}
	if !slices.Equal(res.KeptPinned, []string{pinned}) || !slices.Equal(res.Forgotten, []string{forgetSnapID(0, 1)}) {
		t.Errorf("result %+v, want %s kept for its pin and %s forgotten", res, pinned, forgetSnapID(0, 1))
	}
	got := stateOf(t, be)
	if !slices.Contains(got.snapshots, pinned) || slices.Contains(got.snapshots, forgetSnapID(0, 1)) || len(got.marks) != 0 {
		t.Errorf("after forget: %v", got)
	}
}

// crashing is a memory backend whose process "dies" at its nth write
// (Save or Remove of anything but a lock): that write and every later
// call fail, and its lock stays behind as a dead process's would, until
// Abandon.
type crashing struct {
	*memory.Backend
	mu    sync.Mutex
	at    int // the write that fails; 0: none
	n     int // writes so far
	dead  bool
	locks []repo.Handle
}

var errCrashed = errors.New("process died")

func (c *crashing) write(h repo.Handle) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dead && h.Type != repo.LockFile {
		c.n++
		c.dead = c.n == c.at
	}
	if c.dead {
		return errCrashed
	}
	return nil
}

func (c *crashing) alive() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return errCrashed
	}
	return nil
}

func (c *crashing) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if err := c.write(h); err != nil {
		return err
	}
	return c.Backend.Save(ctx, h, data)
}

func (c *crashing) Remove(ctx context.Context, h repo.Handle) error {
	if err := c.write(h); err != nil {
		return err
	}
	return c.Backend.Remove(ctx, h)
}

func (c *crashing) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if err := c.alive(); err != nil {
		return nil, err
	}
	return c.Backend.Load(ctx, h, offset, length)
}

func (c *crashing) List(ctx context.Context, t repo.FileType, fn func(string, int64) error) error {
	if err := c.alive(); err != nil {
		return err
	}
	return c.Backend.List(ctx, t, fn)
}

func (c *crashing) SaveHeld(ctx context.Context, h repo.Handle, data []byte) (func() error, error) {
	if err := c.alive(); err != nil {
		return nil, err
	}
	release, err := c.Backend.SaveHeld(ctx, h, data)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.locks = append(c.locks, h)
	c.mu.Unlock()
	return func() error {
		if err := c.alive(); err != nil {
			return err // a dead process releases nothing
		}
		return release()
	}, nil
}

// abandonLocks makes the dead process's locks those of a process that is
// gone.
func (c *crashing) abandonLocks() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, h := range c.locks {
		c.Backend.Abandon(h)
	}
}

// A forget that dies at any of its writes leaves a repository that the
// next forget completes: once all victims are marked, each is marked or
// removed at every moment, the next forget removes the marked ones whatever
// its own plan, and with the same plan the result equals that of a forget
// that was never interrupted; nothing the policy keeps is lost on the way.
func TestForgetCompletesAfterACrashAtEveryStep(t *testing.T) {
	ctx := context.Background()
	const perGroup, keep = 4, 1
	plan := repo.ForgetOptions{Plan: keepNewest(keep), GroupKey: byHost}
	nothing := repo.ForgetOptions{Plan: forgetIDs(), GroupKey: byHost}

	// An uninterrupted forget: its result, its victims and its writes.
	counter := &crashing{Backend: memory.New()}
	r := repoWithSnapshots(t, counter, perGroup)
	counter.mu.Lock()
	made := counter.n
	counter.mu.Unlock()
	res, err := r.Forget(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	counter.mu.Lock()
	writes := counter.n - made
	counter.mu.Unlock()
	victims := res.Forgotten
	want := stateOf(t, counter.Backend)
	// A mark, the removal of the record and of the mark, for each victim.
	if len(victims) != 2*(perGroup-keep) || writes != 3*len(victims) {
		t.Fatalf("an uninterrupted forget removed %v in %d writes, want %d victims in 3 writes each", victims, writes, 2*(perGroup-keep))
	}

	for at := 1; at <= writes; at++ {
		t.Run(fmt.Sprintf("dies at write %d", at), func(t *testing.T) {
			mem := memory.New()
			repoWithSnapshots(t, mem, perGroup)
			all := stateOf(t, mem).snapshots
			be := &crashing{Backend: mem}
			r := openRepo(t, be)
			be.mu.Lock()
			be.at = be.n + at
			be.mu.Unlock()
			if _, err := r.Forget(ctx, plan); !errors.Is(err, errCrashed) {
				t.Fatalf("forget that dies: %v, want it to fail", err)
			}
			mid := stateOf(t, mem)
			var removed []string
			for _, id := range all {
				if !slices.Contains(mid.snapshots, id) {
					removed = append(removed, id)
				}
			}
			for _, id := range want.snapshots {
				if !slices.Contains(mid.snapshots, id) {
					t.Fatalf("after the crash, snapshot %s that the policy keeps is gone: %v", id, mid)
				}
			}
			if at <= len(victims) {
				if len(removed) != 0 || len(mid.marks) != at-1 {
					t.Fatalf("died while marking: removed %v, marks %v; want no removal and %d marks", removed, mid.marks, at-1)
				}
			} else if covered := slices.Sorted(slices.Values(append(slices.Clone(mid.marks), removed...))); !slices.Equal(slices.Compact(covered), victims) {
				t.Fatalf("died after marking: marks %v and removed %v, want every victim %v marked or removed", mid.marks, removed, victims)
			}
			if len(mid.locks) != 1 {
				t.Fatalf("the dead forget left locks %v, want its one", mid.locks)
			}
			be.abandonLocks()

			// A forget with a plan of its own completes the marks first.
			res, err := openRepo(t, mem).Forget(ctx, nothing)
			if err != nil {
				t.Fatalf("the next forget: %v", err)
			}
			after := stateOf(t, mem)
			wantLeft := slices.DeleteFunc(slices.Clone(mid.snapshots), func(id string) bool { return slices.Contains(mid.marks, id) })
			if !slices.Equal(after.snapshots, wantLeft) || len(after.marks) != 0 || len(after.locks) != 0 {
				t.Errorf("after the next forget: %v, want snapshots %v and no marks or locks", after, wantLeft)
			}
			if !slices.Equal(res.Completed, mid.marks) {
				t.Errorf("the next forget completed %v, want the marked %v", res.Completed, mid.marks)
			}
			// The same plan again ends where an uninterrupted forget did.
			if _, err := openRepo(t, mem).Forget(ctx, plan); err != nil {
				t.Fatal(err)
			}
			if got := stateOf(t, mem); !sameState(got, want) {
				t.Errorf("after the plan ran again: %v, want %v", got, want)
			}
		})
	}
}

// A pin written between a crashed forget and the next one wins: the
// marked snapshot is unmarked and kept.
func TestForgetAfterACrashKeepsAPinMadeMeanwhile(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	repoWithSnapshots(t, mem, 3)
	be := &crashing{Backend: mem}
	r := openRepo(t, be)
	// Die at the first removal: both groups' two victims are marked.
	be.mu.Lock()
	be.at = be.n + 5
	be.mu.Unlock()
	if _, err := r.Forget(ctx, repo.ForgetOptions{Plan: keepNewest(1), GroupKey: byHost}); !errors.Is(err, errCrashed) {
		t.Fatalf("forget that dies: %v", err)
	}
	victim := forgetSnapID(0, 0)
	if marks := stateOf(t, mem).marks; !slices.Contains(marks, victim) {
		t.Fatalf("marks after the crash %v, want %s among them", marks, victim)
	}
	be.abandonLocks()
	after := openRepo(t, mem)
	if _, err := after.Pin(ctx, victim, "changed my mind"); err != nil {
		t.Fatalf("pin beside a dead forget's lock: %v", err)
	}
	marked, err := after.ForgettingIDs(ctx)
	if err != nil || !slices.Contains(marked, victim) {
		t.Fatalf("ForgettingIDs: %v, %v; want %s listed", marked, err, victim)
	}
	res, err := after.Forget(ctx, repo.ForgetOptions{Plan: keepNewest(1), GroupKey: byHost})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.KeptPinned, []string{victim}) {
		t.Errorf("kept for pins %v, want %s", res.KeptPinned, victim)
	}
	want := []string{victim, forgetSnapID(0, 2), forgetSnapID(1, 2)}
	if got := stateOf(t, mem); !slices.Equal(got.snapshots, want) || len(got.marks) != 0 {
		t.Errorf("after the completing forget: %v, want snapshots %v and no marks", got, want)
	}
}

// A preview writes nothing, takes no lock, and says what Forget then does.
func TestPreviewForgetMatchesForget(t *testing.T) {
	ctx := context.Background()
	be := newLocal(t)
	r := repoWithSnapshots(t, be, 4)
	pinned := forgetSnapID(1, 0)
	if _, err := r.Pin(ctx, pinned, ""); err != nil {
		t.Fatal(err)
	}
	// A busy repository does not stop a preview.
	lock, err := openRepo(t, be).Lock(ctx, false, "backup")
	if err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, be)
	opts := repo.ForgetOptions{Plan: forgetIDs(forgetSnapID(0, 0), forgetSnapID(0, 1), pinned), GroupKey: byHost}
	preview, err := r.PreviewForget(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if after := stateOf(t, be); !sameState(before, after) {
		t.Errorf("a preview changed the repository: %v, was %v", after, before)
	}
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	res, err := r.Forget(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(*preview) != fmt.Sprint(*res) {
		t.Errorf("preview %+v, forget did %+v", *preview, *res)
	}
}
