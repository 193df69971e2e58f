package cmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
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

// clockJumper is a repository's storage under a lease whose clock it
// moves past the lease the first time the command reads a pack: the
// command's lock then runs out while the command runs. It names the lock
// objects saved.
type clockJumper struct {
	repo.Backend // the repository's own storage
	clock        *stoppedClock
	jumped       sync.Once
	mu           sync.Mutex
	locks        []string
}

var (
	_ repo.BufferLoader = (*clockJumper)(nil)
	_ repo.RangeOpener  = (*clockJumper)(nil)
)

func (j *clockJumper) Unwrap() repo.Backend { return j.Backend }

// read jumps the clock at the first read of a pack.
func (j *clockJumper) read(h repo.Handle) {
	if h.Type == repo.PackFile {
		j.jumped.Do(func() { j.clock.jump(lease.DefaultLease + time.Second) })
	}
}

func (j *clockJumper) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if h.Type == repo.LockFile {
		j.mu.Lock()
		j.locks = append(j.locks, h.Name)
		j.mu.Unlock()
	}
	return j.Backend.Save(ctx, h, data)
}

func (j *clockJumper) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	j.read(h)
	return j.Backend.Load(ctx, h, offset, length)
}

func (j *clockJumper) LoadInto(ctx context.Context, h repo.Handle, offset int64, buf []byte) error {
	j.read(h)
	bl, ok := repo.Capability[repo.BufferLoader](j.Backend)
	if !ok {
		return fmt.Errorf("load into a buffer: %w", errors.ErrUnsupported)
	}
	return bl.LoadInto(ctx, h, offset, buf)
}

func (j *clockJumper) OpenRange(ctx context.Context, h repo.Handle, offset, length int64) (io.ReadCloser, error) {
	j.read(h)
	ro, ok := repo.Capability[repo.RangeOpener](j.Backend)
	if !ok {
		return nil, fmt.Errorf("open a range: %w", errors.ErrUnsupported)
	}
	return ro.OpenRange(ctx, h, offset, length)
}

// A read-only command run whole by the app (restore, check) whose lease
// runs out while it reads the repository's packs ends with the exit code
// of a busy repository and one line naming its lost lock: a prune may have
// removed what it read meanwhile.
func TestReadOnlyCommandReportsLostLease(t *testing.T) {
	e := newCLIEnv(t)
	dir := e.initRepo("repo")
	src := filepath.Join(e.dir, "src")
	writeTree(t, src, map[string]string{"a": "lease", "sub/b": strings.Repeat("nightjar ", 1000)})
	e.expect(ExitOK, "backup", "-r", dir, src)

	defer func(open func(context.Context, string, backend.Options) (repo.Backend, error)) { openStorage = open }(openStorage)
	var jumper *clockJumper
	openStorage = func(ctx context.Context, location string, opts backend.Options) (repo.Backend, error) {
		be, err := backend.OpenWith(ctx, location, opts)
		if err != nil {
			return nil, err
		}
		jumper = &clockJumper{Backend: be, clock: &stoppedClock{now: time.Now()}}
		return lease.Wrap(jumper, lease.WithClock(jumper.clock)), nil
	}
	for _, args := range [][]string{
		{"restore", "-r", dir, "latest", "--target", filepath.Join(e.dir, "target")},
		{"check", "-r", dir},
	} {
		t.Run(args[0], func(t *testing.T) {
			res := e.run(args...)
			if jumper == nil || len(jumper.locks) != 1 {
				t.Fatalf("%s saved the locks %v, want one (through the test's storage)", args[0], jumper)
			}
			lock := jumper.locks[0]
			if res.code != ExitBusy {
				t.Errorf("%s whose lease ran out: exit %d, want %d (busy)\nstderr:\n%s", args[0], res.code, ExitBusy, res.stderr)
			}
			if lines := lines(res.stderr); len(lines) != 1 || !strings.Contains(lines[0], lock) || !strings.Contains(lines[0], "lost") {
				t.Errorf("%s whose lease ran out: stderr %q, want one line naming the lost lock %s", args[0], res.stderr, lock)
			}
			if _, err := os.Stat(filepath.Join(dir, "locks", lock)); err == nil {
				t.Errorf("%s left its lost lock %s behind", args[0], lock)
			}
		})
	}
}
