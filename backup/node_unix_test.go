//go:build linux || darwin || freebsd

package backup

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// statOf reads the platform's stat fields into what a node records: the
// nanoseconds of the modification time, the type and permission bits, the
// size, and equal device and inode numbers (and a link count of 2) for
// two hard links of one file.
func TestStatOfReadsThePlatformsFields(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("twelve bytes"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, 0o640); err != nil { // whatever the umask
		t.Fatal(err)
	}
	mtime := time.Date(2024, 2, 29, 12, 30, 45, 123456789, time.UTC)
	if err := os.Chtimes(name, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "g")
	if err := os.Link(name, link); err != nil {
		t.Fatal(err)
	}
	stat := func(p string) unixStat {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return statOf(fi.Sys().(*syscall.Stat_t))
	}
	a, b := stat(name), stat(link)
	if !a.mtime.Equal(mtime) {
		t.Errorf("mtime %v, want %v (nanoseconds kept)", a.mtime, mtime)
	}
	if a.mode&unix.S_IFMT != unix.S_IFREG || a.mode&0o7777 != 0o640 {
		t.Errorf("mode %#o, want a regular file with 0640", a.mode)
	}
	if a.size != 12 {
		t.Errorf("size %d, want 12", a.size)
	}
	if a.nlink != 2 || a.ino != b.ino || a.dev != b.dev || a.ino == 0 {
		t.Errorf("two links: nlink %d, (dev %d, ino %d) and (dev %d, ino %d): want 2 and one (dev, ino)", a.nlink, a.dev, a.ino, b.dev, b.ino)
	}
	if a.uid != uint32(os.Getuid()) {
		t.Errorf("uid %d, want the test's %d", a.uid, os.Getuid())
	}
	if a.ctime.IsZero() {
		t.Error("no ctime")
	}
}

// OSFS lists and reads a user extended attribute with the platform's
// calls, under its Linux-style name, and a missing one fails with
// ErrNoXattr.
func TestOSFSReadsUserXattrs(t *testing.T) {
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Lsetxattr(name, "user.nightjar", []byte("value"), 0); err != nil {
		t.Skipf("the temporary folder's file system takes no user extended attributes: %v", err)
	}
	names, err := OSFS{}.ListXattrs(name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "user.nightjar") {
		t.Errorf("ListXattrs = %q, want user.nightjar among them", names)
	}
	value, err := OSFS{}.GetXattr(name, "user.nightjar")
	if err != nil || string(value) != "value" {
		t.Errorf("GetXattr = %q, %v; want value", value, err)
	}
	if _, err := (OSFS{}).GetXattr(name, "user.missing"); !errors.Is(err, ErrNoXattr) {
		t.Errorf("GetXattr of a missing attribute: %v, want ErrNoXattr", err)
	}
}
