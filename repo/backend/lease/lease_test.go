package lease_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/lease"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

const password = "pw"

// fakeClock is a Clock that moves only when the test advances it; the test
// learns that a refresher waits on it again by the number of its timers.
type fakeClock struct {
	mu     sync.Mutex
	cond   *sync.Cond
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock {
	c := &fakeClock{now: time.Now()}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, fakeTimer{c.now.Add(d), ch})
	c.cond.Broadcast()
	return ch
}

// Advance moves the clock by d and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	pending := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			pending = append(pending, t)
			continue
		}
		t.c <- c.now
	}
	c.timers = pending
}

// waitTimers blocks until n timers are pending: the refreshers wait again.
func (c *fakeClock) waitTimers(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.timers) < n {
		c.cond.Wait()
	}
}

// step advances the clock by d, in steps no longer than a refresh interval,
// letting the n refreshers that wait on it refresh after each.
func (c *fakeClock) step(d time.Duration, n int) {
	for d > 0 {
		s := min(d, lease.DefaultLease/5)
		c.Advance(s)
		c.waitTimers(n)
		d -= s
	}
}

func initRepo(t *testing.T, be repo.Backend) {
	t.Helper()
	r, err := repo.Init(context.Background(), be, []byte(password), repo.InitOptions{KDF: repotest.FastKDF, Chunker: repotest.SmallChunks})
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	r.Close()
}

func openRepo(t *testing.T, be repo.Backend) *repo.Repository {
	t.Helper()
	r, err := repo.Open(context.Background(), be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte(password), nil }})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

func lockNames(t *testing.T, be repo.Backend) []string {
	t.Helper()
	var names []string
	if err := be.List(context.Background(), repo.LockFile, func(name string, _ int64) error {
		names = append(names, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return names
}

// A lock that is refreshed stays alive however long it is held, past
// several leases and past the skew margin.
func TestRefreshKeepsALockAlivePastTheLease(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	clock := newFakeClock()
	initRepo(t, mem)
	holder := openRepo(t, lease.Wrap(mem, lease.WithClock(clock)))
	judge := openRepo(t, lease.Wrap(mem, lease.WithClock(clock)))

	l, err := holder.Lock(ctx, true, "prune")
	if err != nil {
		t.Fatal(err)
	}
	clock.waitTimers(1)
	clock.step(3*(lease.DefaultLease+lease.DefaultSkew), 1)
	if other, err := judge.Lock(ctx, false, "backup"); !errors.Is(err, repo.ErrBusy) {
		if other != nil {
			other.Unlock()
		}
		t.Fatalf("lock beside a refreshed lease three leases old: %v, want ErrBusy", err)
	}
	select {
	case <-l.Lost():
		t.Fatal("a refreshed lock was lost")
	default:
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	if names := lockNames(t, mem); len(names) != 0 {
		t.Errorf("lock objects %v left after unlock", names)
	}
}

// A lock whose refreshes stopped (its holder froze or died elsewhere) is
// alive until its lease and the skew margin have passed, and dead after.
func TestStoppedRefreshMakesALockDeadAfterTheLease(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	initRepo(t, mem)
	frozen := newFakeClock() // the holder's: never moves, so it never refreshes
	holder := openRepo(t, lease.Wrap(mem, lease.WithClock(frozen)))
	l, err := holder.Lock(ctx, true, "prune")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	// The judge's clock starts after the lock was saved, so that the
	// storage's time of the save (memory's ModTime) is not later.
	clock := newFakeClock()
	judge := openRepo(t, lease.Wrap(mem, lease.WithClock(clock)))

	clock.Advance(lease.DefaultLease + lease.DefaultSkew - time.Second)
	if other, err := judge.Lock(ctx, true, "prune"); !errors.Is(err, repo.ErrBusy) {
		if other != nil {
			other.Unlock()
		}
		t.Fatalf("lock beside a lease a second short of running out: %v, want ErrBusy", err)
	}
	clock.Advance(2 * time.Second)
	other, err := judge.Lock(ctx, true, "prune")
	if err != nil {
		t.Fatalf("lock beside a lease that ran out: %v", err)
	}
	if names := lockNames(t, mem); len(names) != 1 {
		t.Errorf("lock objects %v, want the new holder's only (the dead one removed)", names)
	}
	if err := other.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// failingLocks fails every Save of a lock object while fail is set.
type failingLocks struct {
	repo.Backend
	fail  atomic.Bool
	saves atomic.Int64
}

func (f *failingLocks) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if h.Type == repo.LockFile {
		f.saves.Add(1)
		if f.fail.Load() {
			return errors.New("injected save failure")
		}
	}
	return f.Backend.Save(ctx, h, data)
}

func (f *failingLocks) Unwrap() repo.Backend { return f.Backend }

// A holder whose refreshes fail until its lease runs out learns it: Lost is
// closed, Unlock fails with ErrLockLost, and it never saves the lock again
// (which would bring back a lock another process may have judged dead).
func TestHolderLearnsThatItsLeaseRanOut(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	initRepo(t, mem)
	failing := &failingLocks{Backend: mem}
	clock := newFakeClock()
	holder := openRepo(t, lease.Wrap(failing, lease.WithClock(clock)))
	l, err := holder.Lock(ctx, false, "backup")
	if err != nil {
		t.Fatal(err)
	}
	clock.waitTimers(1)
	failing.fail.Store(true)
	clock.step(lease.DefaultLease-time.Second, 1)
	select {
	case <-l.Lost():
		t.Fatal("the lock was lost before its lease ran out")
	default:
	}
	saves := failing.saves.Load()
	clock.Advance(time.Second)
	<-l.Lost()
	failing.fail.Store(false)
	clock.Advance(lease.DefaultLease) // no refresher is left to wake
	err = l.Unlock()
	if !errors.Is(err, repo.ErrLockLost) {
		t.Fatalf("unlock after the lease ran out: %v, want ErrLockLost", err)
	}
	if n := failing.saves.Load(); n != saves {
		t.Errorf("%d saves of the lock after its lease ran out, want none", n-saves)
	}
}

// A holder whose lock object another process removed (unlock --all) learns
// it at its next refresh, and does not bring the object back.
func TestHolderLearnsThatItsLockWasRemoved(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	initRepo(t, mem)
	clock := newFakeClock()
	holder := openRepo(t, lease.Wrap(mem, lease.WithClock(clock)))
	l, err := holder.Lock(ctx, true, "prune")
	if err != nil {
		t.Fatal(err)
	}
	clock.waitTimers(1)
	names := lockNames(t, mem)
	if len(names) != 1 {
		t.Fatalf("lock objects %v, want one", names)
	}
	if err := mem.Remove(ctx, repo.Handle{Type: repo.LockFile, Name: names[0]}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(lease.DefaultLease / 5)
	<-l.Lost()
	if err := l.Unlock(); !errors.Is(err, repo.ErrLockLost) {
		t.Fatalf("unlock of a removed lock: %v, want ErrLockLost", err)
	}
	if names := lockNames(t, mem); len(names) != 0 {
		t.Errorf("lock objects %v after the holder learnt its lock was removed", names)
	}
}

// Several processes (each its own Repository, one storage) taking locks at
// once never hold conflicting ones: of exclusive takers at most one wins,
// and an exclusive lock never stands beside another lock.
func TestRacingTakersNeverHoldConflictingLocks(t *testing.T) {
	const takers, rounds = 8, 25
	for _, mix := range []struct {
		name      string
		exclusive func(i int) bool
	}{
		{"all exclusive", func(int) bool { return true }},
		{"shared and exclusive", func(i int) bool { return i%2 == 0 }},
	} {
		t.Run(mix.name, func(t *testing.T) {
			ctx := context.Background()
			mem := memory.New()
			initRepo(t, mem)
			repos := make([]*repo.Repository, takers)
			for i := range repos {
				repos[i] = openRepo(t, lease.Wrap(mem))
			}
			won := 0 // rounds in which some taker got a lock
			for round := range rounds {
				var start, tried, done sync.WaitGroup
				start.Add(1)
				tried.Add(takers)
				var held [takers]bool
				for i, r := range repos {
					done.Go(func() {
						start.Wait()
						l, err := r.Lock(ctx, mix.exclusive(i), "race")
						if err != nil && !errors.Is(err, repo.ErrBusy) {
							t.Errorf("taker %d: %v", i, err)
						}
						held[i] = err == nil
						tried.Done()
						tried.Wait() // hold until every taker has tried
						if l != nil {
							if err := l.Unlock(); err != nil {
								t.Errorf("taker %d unlock: %v", i, err)
							}
						}
					})
				}
				start.Done()
				done.Wait()
				var holders, exclusive int
				for i, h := range held {
					if h {
						holders++
						if mix.exclusive(i) {
							exclusive++
						}
					}
				}
				if exclusive > 0 && holders > 1 {
					t.Fatalf("round %d: %d takers held locks at once, %d of them exclusive", round, holders, exclusive)
				}
				if holders > 0 {
					won++
				}
				if names := lockNames(t, mem); len(names) != 0 {
					t.Fatalf("round %d: lock objects %v left", round, names)
				}
			}
			// The protocol lets every taker of one round back off (each
			// saw another's lock before it was removed), so a round may
			// have no winner; but a taker that lists before the others
			// save wins, and over many rounds some must, or Lock fails
			// every contended try.
			if won == 0 {
				t.Fatalf("no taker got a lock in any of %d rounds", rounds)
			}
			t.Logf("%d of %d rounds had a winner", won, rounds)
		})
	}
}

// LockAlive of a lock taken on this host and boot by a process that has
// ended is false at once; the same lock from another host, or from this host
// before a reboot, lives until its lease runs out.
func TestLockOfAGoneProcessOnThisHost(t *testing.T) {
	ctx := context.Background()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	gone := cmd.Process.Pid
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.New()
	h := repo.Handle{Type: repo.LockFile, Name: "lock1"}
	if err := mem.Save(ctx, h, []byte("x")); err != nil {
		t.Fatal(err)
	}
	// Without Unwrap, the lease sees no ObjectTimer: only the lock's
	// content tells its refresh time.
	be := lease.Wrap(timeless{mem})
	ownBoot, ownNS := bootOfThisHost(t, be)
	now := time.Now()
	tests := []struct {
		name      string
		info      repo.LockInfo
		wantAlive bool
	}{
		{"this host, gone", repo.LockInfo{Hostname: host, BootID: ownBoot, PIDNamespace: ownNS, PID: gone, Refreshed: now}, false},
		{"this host, live", repo.LockInfo{Hostname: host, BootID: ownBoot, PIDNamespace: ownNS, PID: os.Getppid(), Refreshed: now}, true},
		{"another host", repo.LockInfo{Hostname: host + "-other", BootID: ownBoot, PIDNamespace: ownNS, PID: gone, Refreshed: now}, true},
		{"an earlier boot", repo.LockInfo{Hostname: host, BootID: ownBoot + "-earlier", PIDNamespace: ownNS, PID: gone, Refreshed: now}, true},
		// Another container on this kernel, with this host name: its PIDs
		// are not this namespace's, so a PID unknown here proves nothing.
		{"another PID namespace", repo.LockInfo{Hostname: host, BootID: ownBoot, PIDNamespace: "pid:[1]", PID: gone, Refreshed: now}, true},
		{"a holder that wrote no namespace", repo.LockInfo{Hostname: host, BootID: ownBoot, PID: gone, Refreshed: now}, ownNS != ""},
		{"another host, lease ran out", repo.LockInfo{Hostname: host + "-other", PID: gone, Refreshed: now.Add(-lease.DefaultLease - lease.DefaultSkew - time.Minute)}, false},
		{"a shorter lease of its holder ran out", repo.LockInfo{Hostname: host + "-other", PID: gone, LeaseSeconds: 10, Refreshed: now.Add(-lease.DefaultSkew - time.Minute)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "an earlier boot" && ownBoot == "" {
				t.Skip("this system has no boot ID") // only Linux has one
			}
			if tt.name == "another PID namespace" && ownNS == "" {
				t.Skip("this system has no PID namespaces") // only Linux has them
			}
			alive, err := be.LockAlive(ctx, h, func() (repo.LockInfo, error) { return tt.info, nil })
			if err != nil {
				t.Fatal(err)
			}
			if alive != tt.wantAlive {
				t.Errorf("alive %v, want %v", alive, tt.wantAlive)
			}
		})
	}
}

// timeless hides every capability of the backend it wraps, among them
// repo.ObjectTimer.
type timeless struct{ repo.Backend }

// A lock whose content says it was refreshed long ago, but which the storage
// saved within the lease (a holder whose clock is behind), is alive: the
// later of the two times counts.
func TestStorageTimeOfALockCounts(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	h := repo.Handle{Type: repo.LockFile, Name: "lock1"}
	if err := mem.Save(ctx, h, []byte("x")); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-lease.DefaultLease - lease.DefaultSkew - time.Hour)
	info := repo.LockInfo{Hostname: "elsewhere", PID: 1, Refreshed: long}
	load := func() (repo.LockInfo, error) { return info, nil }
	for _, tt := range []struct {
		name      string
		be        repo.Backend
		wantAlive bool
	}{
		{"storage with modification times", mem, true},
		{"storage without", timeless{mem}, false},
	} {
		alive, err := lease.Wrap(tt.be).LockAlive(ctx, h, load)
		if err != nil {
			t.Fatal(err)
		}
		if alive != tt.wantAlive {
			t.Errorf("%s: alive %v, want %v", tt.name, alive, tt.wantAlive)
		}
	}
}

// bootOfThisHost returns the boot ID and PID namespace the lease protocol
// writes into a lock.
func bootOfThisHost(t *testing.T, be *lease.Backend) (boot, pidns string) {
	t.Helper()
	var got repo.LockInfo
	release, err := be.KeepLock(context.Background(), repo.Handle{Type: repo.LockFile, Name: "probe"}, repo.LockInfo{},
		func(info repo.LockInfo) ([]byte, error) { got = info; return []byte("x"), nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	return got.BootID, got.PIDNamespace
}

// holderEnv names the repository folder a helper process locks.
const holderEnv = "NIGHTJAR_LEASE_TEST_HOLDER"

// racerEnv names the repository folder a racing helper process locks.
const racerEnv = "NIGHTJAR_LEASE_TEST_RACER"

// TestMain runs as a lock holder when started by a test: it takes an
// exclusive lock on the folder's repository, says so, and waits to be
// killed; or as a racer (see race).
func TestMain(m *testing.M) {
	if dir := os.Getenv(holderEnv); dir != "" {
		holdLock(dir)
		return
	}
	if dir := os.Getenv(racerEnv); dir != "" {
		race(dir)
		return
	}
	os.Exit(m.Run())
}

// race opens the folder's repository, says "ready", waits for a line on
// stdin, tries to take an exclusive lock and says "locked" or "busy", holds
// what it got until stdin ends, and releases it.
func race(dir string) {
	ctx := context.Background()
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	be, err := local.Open(dir)
	if err != nil {
		fail(err)
	}
	r, err := repo.Open(ctx, lease.Wrap(be), repo.OpenOptions{Password: func() ([]byte, error) { return []byte(password), nil }})
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		fail(err)
	}
	l, err := r.Lock(ctx, true, "prune")
	switch {
	case errors.Is(err, repo.ErrBusy):
		fmt.Println("busy")
	case err != nil:
		fail(err)
	default:
		fmt.Println("locked")
	}
	_, _ = io.Copy(io.Discard, in)
	if l != nil {
		if err := l.Unlock(); err != nil {
			fail(err)
		}
	}
}

// Several processes that try to take the exclusive lock of one repository
// at once never both hold it, and leave no lock behind.
func TestRacingProcessesNeverBothHoldTheExclusiveLock(t *testing.T) {
	const racers, rounds = 4, 3
	dir := filepath.Join(t.TempDir(), "repo")
	be, err := local.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	initRepo(t, be)
	won := 0 // rounds in which a racer got the lock
	for round := range rounds {
		type racer struct {
			cmd   *exec.Cmd
			stdin io.WriteCloser
			out   *bufio.Reader
		}
		var all []racer
		for range racers {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), racerEnv+"="+dir)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { stdin.Close(); cmd.Wait() })
			all = append(all, racer{cmd, stdin, bufio.NewReader(out)})
		}
		for i, r := range all {
			if line, _ := r.out.ReadString('\n'); line != "ready\n" {
				t.Fatalf("round %d: racer %d said %q, want ready", round, i, line)
			}
		}
		for _, r := range all {
			if _, err := io.WriteString(r.stdin, "go\n"); err != nil {
				t.Fatal(err)
			}
		}
		var locked int
		for i, r := range all {
			switch line, _ := r.out.ReadString('\n'); line {
			case "locked\n":
				locked++
			case "busy\n":
			default:
				t.Fatalf("round %d: racer %d said %q, want locked or busy", round, i, line)
			}
		}
		if locked > 1 {
			t.Fatalf("round %d: %d processes held the exclusive lock at once", round, locked)
		}
		won += locked
		for i, r := range all {
			r.stdin.Close()
			if err := r.cmd.Wait(); err != nil {
				t.Fatalf("round %d: racer %d: %v", round, i, err)
			}
		}
		if names := lockNames(t, be); len(names) != 0 {
			t.Fatalf("round %d: lock objects %v left", round, names)
		}
	}
	// All racers of one round may back off (the protocol does not promise
	// a winner under contention), but a Lock that never wins one fails
	// here: over the rounds, some racer that listed before the others
	// saved must have won.
	if won == 0 {
		t.Fatalf("no racer got the lock in any of %d rounds", rounds)
	}
	t.Logf("%d of %d rounds had a winner", won, rounds)
}

func holdLock(dir string) {
	ctx := context.Background()
	be, err := local.Open(dir)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	r, err := repo.Open(ctx, lease.Wrap(be), repo.OpenOptions{Password: func() ([]byte, error) { return []byte(password), nil }})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	if _, err := r.Lock(ctx, true, "prune"); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("locked")
	// Hold until killed, or until the test's end of stdin closes.
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// A process killed while it holds a lock leaves its lock object behind; on
// the same host another process takes the lock at once, long before the
// lease would run out.
func TestLockOfAKilledHolderIsDeadAtOnceOnItsHost(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	be, err := local.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	initRepo(t, be)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holderEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("holder said %q, want locked", line)
	}
	r := openRepo(t, lease.Wrap(be))
	if l, err := r.Lock(ctx, true, "prune"); !errors.Is(err, repo.ErrBusy) {
		if l != nil {
			l.Unlock()
		}
		t.Fatalf("lock beside a live holder: %v, want ErrBusy", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the killed holder ended without an error")
	}
	if names := lockNames(t, be); len(names) != 1 {
		t.Fatalf("lock objects %v after the holder was killed, want its one", names)
	}
	l, err := r.Lock(ctx, true, "prune")
	if err != nil {
		t.Fatalf("lock after its holder was killed: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}
