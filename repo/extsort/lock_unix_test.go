//go:build unix

package extsort

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// A lock that fails for any reason but a file system without flock
// (ENOLCK: the kernel's lock table is full) fails the spill: runs
// without a lock held would be swept from under a live sort. Without
// flock at all, the sort goes on (a Sweep cannot lock the file either).
func TestSpillFailsWithoutALock(t *testing.T) {
	for _, tt := range []struct {
		errno  error
		spills bool
	}{{unix.ENOLCK, false}, {unix.EIO, false}, {unix.EOPNOTSUPP, true}, {unix.ENOSYS, true}} {
		t.Run(tt.errno.Error(), func(t *testing.T) {
			dir := t.TempDir()
			flock = func(*os.File) error { return tt.errno }
			t.Cleanup(func() {
				flock = func(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) }
			})
			s := New(Options{Dir: dir, MemoryBudget: IDSize})
			defer s.Close()
			var err error
			for _, id := range randomIDs(3, 3, 0) {
				if err = s.Add(id); err != nil {
					break
				}
			}
			if tt.spills != (err == nil) || (err != nil && !errors.Is(err, tt.errno)) {
				t.Fatalf("spill with flock failing with %v: %v, want spilled %v", tt.errno, err, tt.spills)
			}
			if !tt.spills {
				if left := filesIn(t, dir); len(left) > 0 {
					t.Errorf("a failed spill left %v", left)
				}
			}
		})
	}
}

// Another user's files (runs, and a lock even as root could open) are
// left to that user and counted apart: not failures, no error.
func TestSweepLeavesAnotherUsersFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	dir := t.TempDir()
	theirs := []string{namePrefix + "5-1" + runSuffix, namePrefix + "5" + lockSuffix, namePrefix + "6-1" + runSuffix} // as listed
	for _, name := range theirs {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(path, 4242, 4242); err != nil {
			t.Fatal(err)
		}
	}
	ours := filepath.Join(dir, namePrefix+"7-1"+runSuffix)
	if err := os.WriteFile(ours, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	sw, err := Sweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Swept{Runs: 1, Others: 3}); sw != want {
		t.Errorf("sweep: %+v, want %+v", sw, want)
	}
	if left := filesIn(t, dir); !slices.Equal(left, theirs) {
		t.Errorf("left %v, want another user's %v", left, theirs)
	}
}
