package restore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirOpenFlags open a folder on the way to a name: O_PATH needs no
// permission to read it, and serves as the folder of *at calls.
const dirOpenFlags = unix.O_PATH

// noOpenat2 is set once openat2 is found missing (Linux before 5.6, or a
// seccomp filter that refuses it): every later walk goes element by
// element.
var noOpenat2 atomic.Bool

// openDirBeneath opens dir below the folder rootFD with one openat2 call
// that refuses to leave rootFD (RESOLVE_BENEATH) or to follow any symlink
// (RESOLVE_NO_SYMLINKS), or element by element where the kernel lacks it.
func openDirBeneath(rootFD int, dir string) (int, error) {
	if !noOpenat2.Load() {
		how := unix.OpenHow{
			Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		}
		for {
			fd, err := unix.Openat2(rootFD, dir, &how)
			switch err {
			case unix.EAGAIN:
				// A rename elsewhere raced the lookup: the kernel asks
				// for another try.
				continue
			case unix.ENOSYS, unix.EPERM:
				noOpenat2.Store(true)
			default:
				return fd, err
			}
			break
		}
	}
	return walkBeneath(rootFD, dir)
}

var _ exclusiveRenamer = OS{}

// RenameExclusive moves oldname to newname unless something is there
// (renameat2 RENAME_NOREPLACE, Linux 3.15, on the file systems that take
// it; others answer EINVAL, an older kernel ENOSYS).
func (OS) RenameExclusive(root, oldname, newname string) error {
	err := atTwo("rename", root, oldname, newname, func(oldDir int, oldBase string, newDir int, newBase string) error {
		return unix.Renameat2(oldDir, oldBase, newDir, newBase, unix.RENAME_NOREPLACE)
	})
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
	}
	return err
}

// Mknod makes a FIFO or a device node.
func (OS) Mknod(root, name string, mode uint32, dev int) error {
	return at("", root, name, func(dir int, base string) error {
		return unix.Mknodat(dir, base, mode, dev)
	})
}

// xattrError is err: Linux sets every attribute name it is given or says
// why not.
func xattrError(_ string, err error) error { return err }

// setxattrAt sets an attribute of base in the folder dir, not following
// a symlink there. Linux has no *at call for it before 6.13: the folder
// is named through /proc/self/fd, which leads to the folder opened
// whatever its path holds by then.
func setxattrAt(dir int, base, attr string, value []byte) error {
	return unix.Lsetxattr(procFD(dir)+"/"+base, attr, value, 0)
}

// procFD names the file of descriptor fd through /proc.
func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// Chmod sets the permission bits without following a symlink; a symlink
// has no mode of its own on Linux, so for one nothing is done. It asks
// fchmodat2 (Linux 6.6) not to follow; that answers EOPNOTSUPP for a
// symlink, and so does an older kernel, which lacks it.
func (OS) Chmod(root, name string, mode uint32) error {
	return at("", root, name, func(dir int, base string) error {
		err := unix.Fchmodat(dir, base, mode, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EOPNOTSUPP {
			return err
		}
		return chmodOpened(dir, base, mode)
	})
}

// chmodOpened sets the permission bits of base in the folder dir when it
// is opened without following a symlink (O_PATH|O_NOFOLLOW): through
// /proc/self/fd, which leads to the inode opened whatever the name holds
// by then. It does nothing to a symlink; without /proc it fails.
func chmodOpened(dir int, base string, mode uint32) error {
	fd, err := unix.Openat(dir, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
	if err := unix.Chmod(procFD(fd), mode); err != nil {
		return fmt.Errorf("through /proc/self/fd: %w", err)
	}
	return nil
}

// CreateExclusive creates a new file, never through a symlink. It is
// opened with openat(2) and kept as a bare descriptor (fdFile): os.NewFile
// would ask fcntl, for every file, whether it blocks, and a regular file
// needs no poller.
func (OS) CreateExclusive(root, name string) (File, error) {
	fd, err := openExclusive(root, name)
	if err != nil {
		return nil, err
	}
	return &fdFile{fd: fd, name: filepath.Join(root, name)}, nil
}

var _ unnamedCreator = OS{}

// CreateUnnamed creates a file with no name (O_TMPFILE, Linux 3.11) in
// the folder of name, opened beneath root. A file system without it
// answers EOPNOTSUPP; a kernel before 3.11 takes O_TMPFILE for
// O_DIRECTORY and answers EISDIR (or EINVAL).
func (OS) CreateUnnamed(root, name string) (UnnamedFile, error) {
	var f *fdFile
	err := at("open", root, name, func(dir int, _ string) error {
		fd, err := unix.Openat(dir, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
		if err == nil {
			f = &fdFile{fd: fd, name: filepath.Join(root, name)}
		}
		return err
	})
	switch {
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
		return nil, fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
	case err != nil:
		return nil, err
	}
	return f, nil
}

// linkByProc is set once linkat with AT_EMPTY_PATH is refused (ENOENT:
// before Linux 6.10 it needs CAP_DAC_READ_SEARCH): files are then linked
// by their /proc/self/fd name, one more lookup.
var linkByProc atomic.Bool

// LinkUnnamed gives f, made by CreateUnnamed, the name name in its folder
// opened beneath root; linkat never replaces what is there (EEXIST) and
// does not follow a symlink at name.
func (OS) LinkUnnamed(root, name string, f File) error {
	file, ok := f.(*fdFile)
	if !ok {
		return &fs.PathError{Op: "link", Path: filepath.Join(root, name), Err: errors.ErrUnsupported}
	}
	return at("link", root, name, func(dir int, base string) error {
		byProc := func() error {
			return unix.Linkat(unix.AT_FDCWD, procFD(file.fd), dir, base, unix.AT_SYMLINK_FOLLOW)
		}
		if linkByProc.Load() {
			return byProc()
		}
		err := unix.Linkat(file.fd, "", dir, base, unix.AT_EMPTY_PATH)
		if err != unix.ENOENT {
			return err
		}
		// Refused, or the folder is gone: /proc tells which, and is the
		// way from then on only if it worked.
		if err := byProc(); err != nil {
			return err
		}
		linkByProc.Store(true)
		return nil
	})
}

// fdFile is a file being restored on Linux: a descriptor written with
// pwrite, whose metadata is set through the descriptor too (metaSetter:
// fchown, fsetxattr, fchmod, futimens) rather than by its name, which
// each call would look up again in its folder.
type fdFile struct {
	fd   int
	name string // root/name, for errors
}

var _ UnnamedFile = (*fdFile)(nil)

func (f *fdFile) WriteAt(p []byte, off int64) (int, error) {
	written := 0
	for written < len(p) {
		n, err := unix.Pwrite(f.fd, p[written:], off+int64(written))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return written, &fs.PathError{Op: "write", Path: f.name, Err: err}
		case n == 0:
			return written, &fs.PathError{Op: "write", Path: f.name, Err: io.ErrShortWrite}
		}
		written += n
	}
	return written, nil
}

func (f *fdFile) Truncate(size int64) error {
	if err := unix.Ftruncate(f.fd, size); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	return nil
}

func (f *fdFile) Close() error {
	if err := unix.Close(f.fd); err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// Chown sets the owner (fchown).
func (f *fdFile) Chown(uid, gid int) error { return unix.Fchown(f.fd, uid, gid) }

// Setxattr sets an extended attribute (fsetxattr).
func (f *fdFile) Setxattr(attr string, value []byte) error {
	return unix.Fsetxattr(f.fd, attr, value, 0)
}

// Chmod sets the permission bits, setuid, setgid and sticky (fchmod).
func (f *fdFile) Chmod(mode uint32) error { return unix.Fchmod(f.fd, mode) }

// SetMTime sets the access and modification times to the nanosecond:
// utimensat with no path, which is futimens.
func (f *fdFile) SetMTime(mtime time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(mtime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	_, _, errno := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(f.fd), 0, uintptr(unsafe.Pointer(&ts[0])), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// openDirect opens the file a second time for direct writes (O_DIRECT),
// through /proc/self/fd, which leads to the file's own inode whatever its
// name holds by then; nil without /proc, or where the file system
// refuses O_DIRECT.
func (f *fdFile) openDirect() File {
	fd, err := unix.Open(procFD(f.fd), unix.O_WRONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return &fdFile{fd: fd, name: f.name}
}
