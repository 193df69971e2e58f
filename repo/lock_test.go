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
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// lockBackends are the backends whose locks are tested: memory, and a local
// folder, whose locks are real flocks.
var lockBackends = []struct {
	name string
	new  func(t *testing.T) repo.Backend
}{
	{"memory", func(t *testing.T) repo.Backend { return memory.New() }},
	{"local", func(t *testing.T) repo.Backend {
		be, err := local.Create(filepath.Join(t.TempDir(), "repo"))
		if err != nil {
			t.Fatal(err)
		}
		return be
	}},
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
