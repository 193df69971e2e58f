package restore

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nightjar-backup/nightjar/directio"
)

// FS is what a restore does to the file system it restores into. No call
// follows a symlink in the last element of a name, and OpenBeneath none in
// any. OS is the one the program uses; tests wrap it to inject faults.
type FS interface {
	// Mkdir creates a folder.
	Mkdir(name string, perm fs.FileMode) error
	// Lstat describes name without following a symlink; Sys() is a
	// *syscall.Stat_t.
	Lstat(name string) (fs.FileInfo, error)
	// CreateExclusive creates a new file (0600), failing if name exists.
	CreateExclusive(name string) (File, error)
	// OpenDirect opens f, just created as name, a second time for direct
	// writes (package directio); nil when the file system refuses.
	OpenDirect(name string, f File) File
	// OpenBeneath opens the file root/name for reading. name is relative,
	// with "/" between its elements, and no symlink in it is followed: a
	// symlink where a folder or the file should be is an error. root is
	// resolved as the OS does.
	OpenBeneath(root, name string) (ReadFile, error)
	// Rename moves oldname to newname, replacing a file there.
	Rename(oldname, newname string) error
	// Remove removes a file or an empty folder.
	Remove(name string) error
	// Link makes newname a hard link to oldname.
	Link(oldname, newname string) error
	// Symlink makes name a symlink to target.
	Symlink(target, name string) error
	// Mknod makes a FIFO or a device node (mode holds the type bits).
	Mknod(name string, mode uint32, dev int) error
	// Lchown sets the owner.
	Lchown(name string, uid, gid int) error
	// Lsetxattr sets an extended attribute.
	Lsetxattr(name, attr string, value []byte) error
	// Chmod sets the permission bits (with setuid, setgid and sticky) of
	// something that is not a symlink; a symlink is left as it is.
	Chmod(name string, mode uint32) error
	// SetMTime sets the access and modification times to mtime.
	SetMTime(name string, mtime time.Time) error
}

// File is a file being restored.
type File interface {
	io.WriterAt
	Truncate(size int64) error
	Close() error
}

// ReadFile is a restored file read back by verify.
type ReadFile interface {
	io.Reader
	Stat() (fs.FileInfo, error)
	Close() error
}

// OS is the operating system's file system.
type OS struct{}

var _ FS = OS{}

// Mkdir creates a folder.
func (OS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }

// Lstat describes name without following a symlink.
func (OS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// CreateExclusive creates a new file, never through a symlink.
func (OS) CreateExclusive(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// OpenDirect opens f again with O_DIRECT, if f is an *os.File.
func (OS) OpenDirect(name string, f File) File {
	osf, ok := f.(*os.File)
	if !ok {
		return nil
	}
	if d := directio.OpenSecond(name, osf); d != nil {
		return d
	}
	return nil
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
// by element without following a symlink or leaving root.
func openBeneath(root, name string) (int, error) {
	elems := strings.Split(name, "/")
	for _, e := range elems {
		if e == "" || e == "." || e == ".." {
			return -1, unix.EINVAL
		}
	}
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	last := len(elems) - 1
	for _, e := range elems[:last] {
		// A symlink opened with O_NOFOLLOW|O_DIRECTORY is ENOTDIR.
		next, err := unix.Openat(dir, e, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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

// Rename moves oldname to newname.
func (OS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Remove removes a file or an empty folder.
func (OS) Remove(name string) error { return os.Remove(name) }

// Link makes a hard link.
func (OS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

// Symlink makes a symlink.
func (OS) Symlink(target, name string) error { return os.Symlink(target, name) }

// Mknod makes a FIFO or a device node.
func (OS) Mknod(name string, mode uint32, dev int) error { return unix.Mknod(name, mode, dev) }

// Lchown sets the owner without following a symlink.
func (OS) Lchown(name string, uid, gid int) error { return unix.Lchown(name, uid, gid) }

// Lsetxattr sets an extended attribute without following a symlink.
func (OS) Lsetxattr(name, attr string, value []byte) error {
	return unix.Lsetxattr(name, attr, value, 0)
}

// Chmod sets the permission bits without following a symlink; a symlink
// has no mode of its own on Linux, so for one nothing is done. It asks
// fchmodat2 (Linux 6.6) not to follow; that answers EOPNOTSUPP for a
// symlink, and so does an older kernel, which lacks it.
func (OS) Chmod(name string, mode uint32) error {
	err := unix.Fchmodat(unix.AT_FDCWD, name, mode, unix.AT_SYMLINK_NOFOLLOW)
	if err != unix.EOPNOTSUPP {
		return err
	}
	return chmodOpened(name, mode)
}

// chmodOpened sets the permission bits of what name is when it is opened
// without following a symlink (O_PATH|O_NOFOLLOW): through
// /proc/self/fd, which leads to the inode opened whatever the name holds
// by then. It does nothing to a symlink; without /proc it fails.
func chmodOpened(name string, mode uint32) error {
	fd, err := unix.Open(name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode); err != nil {
		return fmt.Errorf("through /proc/self/fd: %w", err)
	}
	return nil
}

// SetMTime sets the access and modification times without following a
// symlink.
func (OS) SetMTime(name string, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(mtime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	return unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}
