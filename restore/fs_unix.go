//go:build linux || darwin || freebsd

package restore

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CreateExclusive creates a new file, never through a symlink.
func (OS) CreateExclusive(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// OpenBeneath opens root/name for reading, never through a symlink below
// root: each folder of name is opened in the one before it with
// O_NOFOLLOW, and so is the file.
func (OS) OpenBeneath(root, name string) (ReadFile, error) {
	full := filepath.Join(root, name)
	fd, err := openBeneath(root, name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	return os.NewFile(uintptr(fd), full), nil
}

// openBeneath returns a read-only descriptor of root/name, opened element
// by element without following a symlink or leaving root. Folders are
// opened with dirOpenFlags (O_PATH where the platform has it).
func openBeneath(root, name string) (int, error) {
	elems := strings.Split(name, "/")
	for _, e := range elems {
		if e == "" || e == "." || e == ".." {
			return -1, unix.EINVAL
		}
	}
	dir, err := unix.Open(root, dirOpenFlags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	last := len(elems) - 1
	for _, e := range elems[:last] {
		// A symlink opened with O_NOFOLLOW|O_DIRECTORY is ENOTDIR.
		next, err := unix.Openat(dir, e, dirOpenFlags|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(dir)
		if err != nil {
			return -1, err
		}
		dir = next
	}
	fd, err := unix.Openat(dir, elems[last], unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	unix.Close(dir)
	return fd, err
}

// Symlink makes a symlink.
func (OS) Symlink(target, name string) error { return os.Symlink(target, name) }

// Lchown sets the owner without following a symlink.
func (OS) Lchown(name string, uid, gid int) error { return unix.Lchown(name, uid, gid) }

// Lsetxattr sets an extended attribute without following a symlink.
func (OS) Lsetxattr(name, attr string, value []byte) error {
	return xattrError(attr, unix.Lsetxattr(name, attr, value, 0))
}

// SetMTime sets the access and modification times without following a
// symlink, to the nanosecond (utimensat).
func (OS) SetMTime(name string, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(mtime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// localPath is where the entry at snapshot path p goes below the target:
// p itself, with "/" between its elements.
func localPath(p string) string { return p }

// refusedName says why the last element of snapshot path p cannot be a
// name here: never, as the walker already refuses a name with "/" in it
// or one that is "." or "..".
func refusedName(string) string { return "" }

// platformLacks is what this platform never restores, whatever the
// snapshot: nothing here (owners need root, which Result says).
func platformLacks() []Lack { return nil }

// mtimeResolution is the precision of a file's times: the nanosecond.
const mtimeResolution = time.Nanosecond
