package restore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Chmod sets the mode of what is at a name and never that of what a
// symlink there points to, both as the program does it (fchmodat2 where
// the kernel has it) and as it does on a kernel without fchmodat2
// (chmodOpened).
func TestChmodDoesNotFollowASymlink(t *testing.T) {
	chmods := []struct {
		name  string
		chmod func(name string, mode uint32) error
	}{
		{"OS.Chmod", func(p string, mode uint32) error { return OS{}.Chmod(filepath.Dir(p), filepath.Base(p), mode) }},
		{"without fchmodat2", func(p string, mode uint32) error {
			dir, err := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				return err
			}
			defer unix.Close(dir)
			return chmodOpened(dir, filepath.Base(p), mode)
		}},
	}
	tests := []struct {
		name string
		// make puts an entry at p; a symlink points to pointee.
		make func(t *testing.T, p, pointee string)
		// pointee says that p is a symlink: what it points to must keep
		// its mode 0600.
		pointee bool
	}{
		{"a file", func(t *testing.T, p, _ string) { mustWrite(t, p) }, false},
		{"a folder", func(t *testing.T, p, _ string) { mustDo(t, os.Mkdir(p, 0o600)) }, false},
		{"a FIFO", func(t *testing.T, p, _ string) { mustDo(t, unix.Mkfifo(p, 0o600)) }, false},
		{"a symlink to a file", func(t *testing.T, p, pointee string) {
			mustWrite(t, pointee)
			mustDo(t, os.Symlink(pointee, p))
		}, true},
		{"a symlink to a folder", func(t *testing.T, p, pointee string) {
			mustDo(t, os.Mkdir(pointee, 0o600))
			mustDo(t, os.Symlink(pointee, p))
		}, true},
	}
	for _, c := range chmods {
		for _, tt := range tests {
			t.Run(c.name+"/"+tt.name, func(t *testing.T) {
				dir := t.TempDir()
				p, pointee := filepath.Join(dir, "entry"), filepath.Join(dir, "pointee")
				tt.make(t, p, pointee)
				if err := c.chmod(p, 0o4751); err != nil {
					t.Fatalf("chmod: %v", err)
				}
				if tt.pointee {
					if got := mode(t, pointee); got != 0o600 {
						t.Errorf("what the symlink points to has mode %o, want 600: the symlink was followed", got)
					}
					return
				}
				if got := mode(t, p); got != 0o4751 {
					t.Errorf("mode %o, want 4751", got)
				}
			})
		}
	}
}

// mustWrite makes a file of mode 0600 (whatever the umask) at p.
func mustWrite(t *testing.T, p string) {
	t.Helper()
	mustDo(t, os.WriteFile(p, []byte("content"), 0o600))
	mustDo(t, os.Chmod(p, 0o600))
}

// mode returns the permission, setuid, setgid and sticky bits of p.
func mode(t *testing.T, p string) uint32 {
	t.Helper()
	var st unix.Stat_t
	mustDo(t, unix.Lstat(p, &st))
	return st.Mode & 0o7777
}

// OpenBeneath opens a file below root, and refuses a symlink where the
// file or a folder on the way should be, and a name that could leave root,
// both with openat2 and with the walk element by element of kernels that
// lack it.
func TestOpenBeneath(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	mustDo(t, os.MkdirAll(filepath.Join(root, "d", "e"), 0o700))
	mustDo(t, os.WriteFile(filepath.Join(root, "d", "e", "f"), []byte("f"), 0o600))
	mustDo(t, os.WriteFile(filepath.Join(base, "outside"), []byte("outside"), 0o600))
	mustDo(t, os.Symlink(filepath.Join(root, "d"), filepath.Join(root, "dlink")))
	mustDo(t, os.Symlink(filepath.Join(root, "d", "e", "f"), filepath.Join(root, "d", "flink")))
	mustDo(t, os.Symlink(root, filepath.Join(base, "rootlink")))
	tests := []struct {
		name       string
		root, file string
		want       error // nil: the file opens and reads "f"
		or         error // another answer as good as want (openat2's or openat's)
	}{
		{"a file below folders", root, "d/e/f", nil, nil},
		{"a root that is a symlink", filepath.Join(base, "rootlink"), "d/e/f", nil, nil},
		{"a symlink as the file", root, "d/flink", unix.ELOOP, nil},
		{"a symlink as a folder", root, "dlink/e/f", unix.ENOTDIR, unix.ELOOP},
		{"a parent element", root, "d/../../outside", unix.EINVAL, nil},
		{"an absolute name", root, "/d/e/f", unix.EINVAL, nil},
		{"a current-folder element", root, "d/./e/f", unix.EINVAL, nil},
	}
	for _, walk := range []string{"openat2", "openat element by element"} {
		noOpenat2.Store(walk != "openat2")
		t.Cleanup(func() { noOpenat2.Store(false) })
		for _, tt := range tests {
			t.Run(walk+"/"+tt.name, func(t *testing.T) {
				testOpenBeneath(t, tt.root, tt.file, tt.want, tt.or)
			})
		}
	}
}

// testOpenBeneath opens root/file with OS.OpenBeneath: it must fail with
// want (or with or, when set), or read "f" when want is nil.
func testOpenBeneath(t *testing.T, root, file string, want, or error) {
	t.Helper()
	f, err := OS{}.OpenBeneath(root, file)
	if want != nil {
		if !errors.Is(err, want) && (or == nil || !errors.Is(err, or)) {
			t.Errorf("OpenBeneath returns %v, want %v", err, want)
		}
		if f != nil {
			f.Close()
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil || string(data) != "f" {
		t.Errorf("read %q (%v), want f", data, err)
	}
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// A held target keeps the folders its calls use open, at most cachedDirs
// of them: calls in more folders than that all succeed, a folder
// evicted and used again is opened again, and releasing the target
// closes every descriptor it kept.
func TestHeldRootCachesFolders(t *testing.T) {
	root := t.TempDir()
	before := openFDs(t)
	release := holdRoot(root)
	folders := 2*cachedDirs + 3
	create := func(name string) {
		t.Helper()
		f, err := (OS{}).CreateExclusive(root, name)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for i := range folders {
		dir := fmt.Sprintf("d%03d", i)
		for _, d := range []string{dir, dir + "/sub"} {
			if err := (OS{}).Mkdir(root, d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		create(dir + "/sub/x")
		create(dir + "/sub/y")
	}
	create("d000/sub/again") // its folder was evicted long ago
	v, ok := heldRoots.Load(root)
	if !ok {
		t.Fatal("the target is not held")
	}
	h := v.(*heldRoot)
	h.mu.Lock()
	cached := len(h.dirs)
	h.mu.Unlock()
	if cached != cachedDirs {
		t.Errorf("%d folders kept open after calls in %d, want %d", cached, folders, cachedDirs)
	}
	if n := openFDs(t); n != before+1+cachedDirs {
		t.Errorf("%d descriptors open while the target is held, want %d (the target and %d folders)", n, before+1+cachedDirs, cachedDirs)
	}
	release()
	if n := openFDs(t); n != before {
		t.Errorf("%d descriptors open after the target was released, want %d as before", n, before)
	}
}

// A folder swapped for a symlink after its descriptor was cached keeps
// receiving the calls made in it where it was moved to, inside the
// target; the symlink is never followed, and a call that opens the
// folder afresh (OpenBeneath, for verify) is refused.
func TestCachedFolderSwappedForASymlink(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "target"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	defer holdRoot(root)()
	if err := (OS{}).Mkdir(root, "d", 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := (OS{}).CreateExclusive(root, "d/first")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Rename(filepath.Join(root, "d"), filepath.Join(root, "parked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "d")); err != nil {
		t.Fatal(err)
	}
	f, err = (OS{}).CreateExclusive(root, "d/second")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := os.Lstat(filepath.Join(root, "parked", "second")); err != nil {
		t.Errorf("the second file is not in the folder moved inside the target: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("the symlink was followed: %d entries outside the target", len(entries))
	}
	if _, err := (OS{}).OpenBeneath(root, "d/first"); !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("OpenBeneath through the swapped folder answers %v, want ELOOP or ENOTDIR", err)
	}
}

// A file the OS creates takes its metadata through its descriptor: the
// owner, an extended attribute, the mode with setuid and the times reach
// the file written even when its name now leads to a symlink, and what
// the symlink points to keeps its own.
func TestOSFileSetsMetadataThroughItsDescriptor(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OS{}.CreateExclusive(dir, "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	meta, ok := f.(metaSetter)
	if !ok {
		t.Fatalf("CreateExclusive gives a %T, which sets no metadata through its descriptor", f)
	}
	if _, err := f.WriteAt([]byte("content"), 0); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "f")
	var written unix.Stat_t
	if err := unix.Stat(name, &written); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(os.Remove(name), os.Symlink(outside, name)); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		uid, gid = 1234, 5678
	}
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 123456789, time.UTC)
	for _, step := range []struct {
		what string
		err  error
	}{
		{"chown", meta.Chown(uid, gid)},
		{"setxattr", meta.Setxattr("user.nightjar", []byte("v"))},
		{"chmod", meta.Chmod(0o4750)},
		{"times", meta.SetMTime(mtime)},
	} {
		if step.err != nil && !(step.what == "setxattr" && errors.Is(step.err, unix.EOPNOTSUPP)) {
			t.Errorf("%s: %v", step.what, step.err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(f.(*fdFile).fd, &st); err != nil {
		t.Fatal(err)
	}
	if st.Ino != written.Ino {
		t.Fatalf("the descriptor holds inode %d, not the file written (%d)", st.Ino, written.Ino)
	}
	if st.Mode&0o7777 != 0o4750 || int(st.Uid) != uid || int(st.Gid) != gid || st.Mtim.Nano() != mtime.UnixNano() {
		t.Errorf("the file has mode %o, owner %d:%d, mtime %d; want 4750, %d:%d, %d",
			st.Mode&0o7777, st.Uid, st.Gid, st.Mtim.Nano(), uid, gid, mtime.UnixNano())
	}
	fi, err := os.Stat(outside)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o600 || fi.ModTime().Equal(mtime) {
		t.Errorf("what the symlink points to changed: mode %v, mtime %v", fi.Mode(), fi.ModTime())
	}
}

// A file with no name is in no folder until LinkUnnamed names it, by
// linkat with AT_EMPTY_PATH or, where that is refused, through
// /proc/self/fd; neither replaces an entry, nor follows a dangling
// symlink at the name.
func TestOSCreateUnnamed(t *testing.T) {
	for _, byProc := range []bool{false, true} {
		t.Run(fmt.Sprintf("through /proc %v", byProc), func(t *testing.T) {
			defer linkByProc.Store(linkByProc.Load())
			linkByProc.Store(byProc)
			dir := t.TempDir()
			mustDo(t, os.Symlink(filepath.Join(dir, "pointee"), filepath.Join(dir, "dangling")))
			f, err := OS{}.CreateUnnamed(dir, "f")
			if errors.Is(err, errors.ErrUnsupported) {
				t.Skipf("no O_TMPFILE here: %v", err)
			}
			mustDo(t, err)
			defer f.Close()
			if _, err := f.WriteAt([]byte("content"), 0); err != nil {
				t.Fatal(err)
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
				t.Errorf("the folder holds %v (%v), want the symlink alone", entries, err)
			}
			mustDo(t, OS{}.LinkUnnamed(dir, "f", f))
			if got, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(got) != "content" {
				t.Errorf("f holds %q (%v), want the content written", got, err)
			}
			for _, name := range []string{"dangling", "f"} {
				if err := (OS{}).LinkUnnamed(dir, name, f); !errors.Is(err, os.ErrExist) {
					t.Errorf("LinkUnnamed over %s: %v, want it to exist", name, err)
				}
			}
			if _, err := os.Lstat(filepath.Join(dir, "pointee")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a file was made where the dangling symlink points: %v", err)
			}
		})
	}
}
