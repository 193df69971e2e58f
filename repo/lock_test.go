package repo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// lockBackends are the backends whose locks are tested: memory, and a local
// folder, whose locks are real flocks, each also through a wrapper that
// only unwraps (as a retry or metrics wrapper would).
var lockBackends = []struct {
	name string
	new  func(t *testing.T) repo.Backend
}{
	{"memory", func(t *testing.T) repo.Backend { return memory.New() }},
	{"local", newLocal},
	{"memory through a wrapper", func(t *testing.T) repo.Backend { return unwrapping{memory.New()} }},
	{"local through a wrapper", func(t *testing.T) repo.Backend { return unwrapping{newLocal(t)} }},
}

func newLocal(t *testing.T) repo.Backend {
	be, err := local.Create(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// unwrapping is a wrapper that intercepts nothing and has Unwrap.
type unwrapping struct{ repo.Backend }

func (u unwrapping) Unwrap() repo.Backend { return u.Backend }

// hiding is a wrapper without Unwrap: it hides every capability of what it
// wraps.
type hiding struct{ repo.Backend }

// A backend without a lock protocol cannot be locked, also through a
// wrapper that would pass a lock capability on, and says so in one line.
func TestLockNeedsALockingBackend(t *testing.T) {
	tests := []struct {
		name string
		be   repo.Backend
	}{
		{"no capability", hiding{memory.New()}},
		{"through an unwrapping wrapper", unwrapping{hiding{memory.New()}}},
		{"through a wrapper that intercepts locks", backendtest.NewFaulty(hiding{memory.New()})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := initRepo(t, tt.be)
			l, err := r.Lock(context.Background(), false, "backup")
			if err == nil {
				l.Unlock()
				t.Fatal("a backend without a lock protocol gave a lock")
			}
			want := "storage at " + tt.be.Location() + " cannot hold locks"
			if err.Error() != want {
				t.Errorf("lock: %q, want %q", err, want)
			}
		})
	}
}

// leases is a LockKeeper of the kind an object store plugs in: its locks
// are plain objects, and a lock is dead when the test says its lease ran
// out. It wraps a backend without ProcessLocker.
type leases struct {
	repo.Backend
	kept    []repo.LockInfo
	expired map[string]bool
}

func (l *leases) KeepLock(ctx context.Context, h repo.Handle, info repo.LockInfo, seal func(repo.LockInfo) ([]byte, error)) (func() error, error) {
	data, err := seal(info)
	if err != nil {
		return nil, err
	}
	if err := l.Save(ctx, h, data); err != nil {
		return nil, err
	}
	l.kept = append(l.kept, info)
	return func() error { return l.Remove(ctx, h) }, nil
}

func (l *leases) LockAlive(ctx context.Context, h repo.Handle, load func() (repo.LockInfo, error)) (bool, error) {
	if _, err := load(); err != nil {
		return false, err
	}
	return !l.expired[h.Name], nil
}

// A backend's own LockKeeper decides which locks are alive: the plug for
// object stores' leases.
func TestLockKeeperOfTheBackend(t *testing.T) {
	ctx := context.Background()
	be := &leases{Backend: hiding{memory.New()}, expired: map[string]bool{}}
	initRepo(t, be)
	a, b := openRepo(t, be), openRepo(t, be)
	held := mustLock(t, a, true, "prune")
	if len(be.kept) != 1 || !be.kept[0].Exclusive || be.kept[0].Purpose != "prune" {
		t.Fatalf("KeepLock got %+v, want one exclusive lock for prune", be.kept)
	}
	if _, err := b.Lock(ctx, false, "backup"); !errors.Is(err, repo.ErrBusy) {
		t.Fatalf("lock beside a live lease: %v, want ErrBusy", err)
	}
	lockNames := names(t, be, repo.LockFile)
	if len(lockNames) != 1 {
		t.Fatalf("lock objects %v, want the holder's only", lockNames)
	}
	be.expired[lockNames[0]] = true
	l := mustLock(t, b, false, "backup")
	defer l.Unlock()
	if _, err := be.Stat(ctx, repo.Handle{Type: repo.LockFile, Name: lockNames[0]}); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("the lock whose lease ran out was not removed: %v", err)
	}
	if err := held.Unlock(); err != nil && !errors.Is(err, repo.ErrNotFound) {
		t.Fatal(err)
	}
}

func mustLock(t *testing.T, r *repo.Repository, exclusive bool, purpose string) *repo.Lock {
	t.Helper()
	l, err := r.Lock(context.Background(), exclusive, purpose)
	if err != nil {
		t.Fatalf("lock (exclusive %v) for %s: %v", exclusive, purpose, err)
	}
	return l
}

func TestLocks(t *testing.T) {
	ctx := context.Background()
	for _, bk := range lockBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.new(t)
			initRepo(t, be)
			a, b := openRepo(t, be), openRepo(t, be) // two processes, as far as locks go

			t.Run("shared locks coexist", func(t *testing.T) {
				la := mustLock(t, a, false, "backup")
				lb := mustLock(t, b, false, "check")
				if n := len(names(t, be, repo.LockFile)); n != 2 {
					t.Errorf("%d lock objects for two shared locks", n)
				}
				if err := la.Unlock(); err != nil {
					t.Fatal(err)
				}
				if err := lb.Unlock(); err != nil {
					t.Fatal(err)
				}
				if n := len(names(t, be, repo.LockFile)); n != 0 {
					t.Errorf("%d lock objects left after unlocking", n)
				}
			})

			conflicts := []struct {
				name          string
				held, wanted  bool // exclusive?
				holderPurpose string
				conflictsWith string
			}{
				{"exclusive while shared is held", false, true, "backup", "shared lock for backup"},
				{"shared while exclusive is held", true, false, "prune", "exclusive lock for prune"},
				{"exclusive while exclusive is held", true, true, "prune", "exclusive lock for prune"},
			}
			for _, tt := range conflicts {
				t.Run(tt.name, func(t *testing.T) {
					held := mustLock(t, a, tt.held, tt.holderPurpose)
					defer held.Unlock()
					l, err := b.Lock(ctx, tt.wanted, "other")
					if !errors.Is(err, repo.ErrBusy) {
						if l != nil {
							l.Unlock()
						}
						t.Fatalf("lock: %v, want ErrBusy", err)
					}
					msg := err.Error()
					if !strings.Contains(msg, tt.conflictsWith) || !strings.Contains(msg, fmt.Sprintf("pid %d", os.Getpid())) {
						t.Errorf("busy error %q does not name the holder (%s, pid %d)", msg, tt.conflictsWith, os.Getpid())
					}
					if n := len(names(t, be, repo.LockFile)); n != 1 {
						t.Errorf("%d lock objects after a refused lock, want only the holder's", n)
					}
				})
			}

			t.Run("free again after unlock", func(t *testing.T) {
				held := mustLock(t, a, true, "prune")
				if err := held.Unlock(); err != nil {
					t.Fatal(err)
				}
				mustLock(t, b, true, "prune").Unlock()
			})
		})
	}
}

// A lock of a dead process is removed by the next locker; a lock is never
// broken for being old.
func TestStaleAndOldLocks(t *testing.T) {
	ctx := context.Background()
	for _, bk := range lockBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.new(t)
			initRepo(t, be)
			a, b := openRepo(t, be), openRepo(t, be)

			t.Run("dead holder", func(t *testing.T) {
				// The object a killed process leaves: a real lock object
				// that no live process holds.
				l := mustLock(t, a, true, "prune")
				lockNames := names(t, be, repo.LockFile)
				if len(lockNames) != 1 {
					t.Fatalf("lock objects %v, want one", lockNames)
				}
				h := repo.Handle{Type: repo.LockFile, Name: lockNames[0]}
				data := load(t, be, h)
				if err := l.Unlock(); err != nil {
					t.Fatal(err)
				}
				store(t, be, h, data)

				nl, err := b.Lock(ctx, true, "prune")
				if err != nil {
					t.Fatalf("lock with a dead process's lock present: %v", err)
				}
				defer nl.Unlock()
				if _, err := be.Stat(ctx, h); !errors.Is(err, repo.ErrNotFound) {
					t.Errorf("the dead process's lock was not removed: %v", err)
				}
			})

			t.Run("old but live holder", func(t *testing.T) {
				old, err := repo.Open(ctx, be, repo.OpenOptions{Password: pw(password),
					Now: func() time.Time { return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) }})
				if err != nil {
					t.Fatal(err)
				}
				defer old.Close()
				held := mustLock(t, old, false, "backup")
				defer held.Unlock()
				if _, err := b.Lock(ctx, true, "prune"); !errors.Is(err, repo.ErrBusy) {
					t.Errorf("exclusive lock beside a live lock from 2001: %v, want ErrBusy", err)
				}
			})
		})
	}
}

// A live lock whose object was damaged cannot be read: it is treated as an
// exclusive lock, and the error says why.
func TestDamagedLiveLock(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	be, err := local.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	initRepo(t, be)
	a, b := openRepo(t, be), openRepo(t, be)
	held := mustLock(t, a, false, "backup")
	defer held.Unlock()
	lockNames := names(t, be, repo.LockFile)
	if len(lockNames) != 1 {
		t.Fatalf("lock objects %v", lockNames)
	}
	// Change one byte in place: the file, and so its flock, stays.
	path := filepath.Join(dir, "locks", lockNames[0])
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range spread(len(data), 12) {
		t.Run(fmt.Sprintf("byte %d", at), func(t *testing.T) {
			if err := os.WriteFile(path, flipped(data, at), 0o600); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(path, data, 0o600)
			l, err := b.Lock(ctx, false, "check")
			if err == nil {
				l.Unlock()
				t.Fatal("a shared lock was granted beside a live lock that cannot be read")
			}
			if !errors.Is(err, repo.ErrBusy) || !strings.Contains(err.Error(), repo.ErrIntegrity.Error()) {
				t.Errorf("lock: %v, want ErrBusy saying the lock is damaged", err)
			}
		})
	}
}
