package backup

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/lease"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// stillClock is a lease clock that moves only when the test sets it; its
// timers never fire, so a lease runs out only when the test moves it.
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

// A backup whose lease runs out while it writes (its host suspended past
// the lease, beside which a prune may have run) fails with ErrLockLost and
// saves no snapshot; releasing its lock reports the loss too.
func TestBackupWhoseLeaseIsLostSavesNoSnapshot(t *testing.T) {
	src := t.TempDir()
	data := make([]byte, 2*repo.DefaultPackSize)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mem := memory.New()
	held := backendtest.NewHeldPacks(mem)
	t.Cleanup(held.Release)
	clock := &stillClock{now: time.Now()}
	r := repotest.New(t, lease.Wrap(held, lease.WithClock(clock)))
	ctx := context.Background()
	lock, err := r.Lock(ctx, false, "backup")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Backup(ctx, r, Options{Paths: []string{src}})
		done <- err
	}()
	select {
	case <-held.Started():
	case err := <-done:
		t.Fatalf("backup ended (%v) before it wrote a pack", err)
	}
	clock.jump(lease.DefaultLease + time.Second)
	held.Release()
	if err := <-done; !errors.Is(err, repo.ErrLockLost) {
		t.Fatalf("backup after its lease ran out: %v, want ErrLockLost", err)
	}
	if err := lock.Unlock(); !errors.Is(err, repo.ErrLockLost) {
		t.Errorf("unlock of a lost lock: %v, want ErrLockLost", err)
	}
	n := 0
	if err := mem.List(ctx, repo.SnapshotFile, func(string, int64) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d snapshots saved by a backup whose lock was lost", n)
	}
}
