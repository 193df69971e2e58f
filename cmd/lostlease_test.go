package cmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/lease"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// stoppedClock is a lease clock that moves only when the test moves it;
// its timers never fire.
type stoppedClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stoppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (*stoppedClock) After(time.Duration) <-chan time.Time { return nil }

func (c *stoppedClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// The lock of a command that only reads (restore, check, dump) fails the
// command when its lease ran out while it was held (a prune may have
// removed what it read meanwhile): releasing it sets the command's error,
// one line naming the lost lock, with the exit code of a busy repository.
// A command that failed already keeps its own error.
func TestReadLockReportsLostLease(t *testing.T) {
	clock := &stoppedClock{now: time.Now()}
	r := repotest.New(t, lease.Wrap(memory.New(), lease.WithClock(clock)))
	var out, errOut bytes.Buffer
	set := flag.NewFlagSet("restore", flag.ContinueOnError)
	set.Bool("no-lock", false, "")
	c := cli.NewContext(newApp(&out, &errOut), set, nil)
	c.Context = context.Background()
	var names []string
	lockNames := func() {
		names = nil
		if err := r.Backend().List(c.Context, repo.LockFile, func(name string, _ int64) error {
			names = append(names, name)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}

	lock, err := readLockRepo(c, newPrinter(c), r, "restore")
	if err != nil {
		t.Fatal(err)
	}
	var kept error
	lock.Release(&kept)
	if kept != nil {
		t.Fatalf("release of a lock held within its lease: %v", kept)
	}

	lock, err = readLockRepo(c, newPrinter(c), r, "restore")
	if err != nil {
		t.Fatal(err)
	}
	lockNames()
	if len(names) != 1 {
		t.Fatalf("lock objects while one is held: %v", names)
	}
	clock.jump(lease.DefaultLease + time.Second)
	var runErr error
	lock.Release(&runErr)
	if !errors.Is(runErr, repo.ErrLockLost) {
		t.Fatalf("release after the lease ran out: %v, want ErrLockLost", runErr)
	}
	msg := errorMessage(runErr)
	if strings.Contains(msg, "\n") || !strings.Contains(msg, names[0]) {
		t.Errorf("error %q: want one line naming the lock %s", msg, names[0])
	}
	if code := exitCode(runErr); code != ExitBusy {
		t.Errorf("exit code %d, want %d (busy)", code, ExitBusy)
	}

	lock, err = readLockRepo(c, newPrinter(c), r, "restore")
	if err != nil {
		t.Fatal(err)
	}
	clock.jump(lease.DefaultLease + time.Second)
	failed := errors.New("the restore's own failure")
	runErr = failed
	lock.Release(&runErr)
	if runErr != failed {
		t.Errorf("a failed command's error after its lock was lost: %v, want its own", runErr)
	}
}
