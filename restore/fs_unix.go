//go:build linux || darwin || freebsd

package restore

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// The OS's calls on Linux, macOS and FreeBSD each open the folder that
// holds their name beneath the target (openBeneathDir: openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS on Linux, else one openat with
// O_NOFOLLOW|O_DIRECTORY per element) and act on the name's last element
// in it with an *at call that does not follow a symlink there either. A
// folder swapped for a symlink while the restore runs is then refused
// (ELOOP, ENOTDIR), never followed.

// splitName checks that name is relative with "/" between real elements
// and returns its folder ("" for root itself) and its last element.
func splitName(name string) (dir, base string, err error) {
	for _, e := range strings.Split(name, "/") {
		if e == "" || e == "." || e == ".." {
			return "", "", unix.EINVAL
		}
	}
	dir, base = path.Split(name)
	return strings.TrimSuffix(dir, "/"), base, nil
}

// parentOf opens the folder of root/name beneath root and returns its
// descriptor, which the caller closes with closeDir, and name's last
// element.
func parentOf(root, name string) (int, string, error) {
	dir, base, err := splitName(name)
	if err != nil {
		return -1, "", err
	}
	fd, err := openBeneathDir(root, dir)
	return fd, base, err
}

// heldRoots are the targets of the restores running, each opened once
// for all the calls below it (holdRoot): a call then opens only the
// folder it needs, not the target first.
var heldRoots sync.Map // root path -> *heldRoot

type heldRoot struct {
	fd   int
	refs atomic.Int32
}

// heldMu orders holdRoot and its release, so that a root's descriptor is
// closed only when no restore holds it.
var heldMu sync.Mutex

// holdRoot opens root for the calls that name it until release is
// called; a root that cannot be opened is opened by each call instead,
// which then report why.
func holdRoot(root string) (release func()) {
	heldMu.Lock()
	defer heldMu.Unlock()
	if v, ok := heldRoots.Load(root); ok {
		v.(*heldRoot).refs.Add(1)
	} else {
		fd, err := unix.Open(root, dirOpenFlags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return func() {}
		}
		h := &heldRoot{fd: fd}
		h.refs.Store(1)
		heldRoots.Store(root, h)
	}
	return func() {
		heldMu.Lock()
		defer heldMu.Unlock()
		v, _ := heldRoots.Load(root)
		if h := v.(*heldRoot); h.refs.Add(-1) == 0 {
			heldRoots.Delete(root)
			unix.Close(h.fd)
		}
	}
}

// heldDir marks a descriptor that is a held root's: closeDir leaves it
// open. Descriptors are never negative, so no real one is mistaken.
const heldDir = -2

// openBeneathDir opens the folder root/dir ("": root) for use as the
// folder of *at calls, following no symlink below root. For a held root
// and dir "" it returns the held descriptor, which closeDir leaves open.
func openBeneathDir(root, dir string) (int, error) {
	if v, ok := heldRoots.Load(root); ok {
		rootFD := v.(*heldRoot).fd
		if dir == "" {
			return heldDir - rootFD, nil
		}
		return openDirBeneath(rootFD, dir)
	}
	rootFD, err := unix.Open(root, dirOpenFlags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || dir == "" {
		return rootFD, err
	}
	fd, err := openDirBeneath(rootFD, dir)
	unix.Close(rootFD)
	return fd, err
}

// dirFD is the descriptor to pass to an *at call for what openBeneathDir
// returned.
func dirFD(fd int) int {
	if fd <= heldDir {
		return heldDir - fd
	}
	return fd
}

// closeDir closes what openBeneathDir returned, unless it is a held root.
func closeDir(fd int) {
	if fd > heldDir {
		unix.Close(fd)
	}
}

// walkBeneath opens dir below the folder rootFD one element at a time,
// each with O_NOFOLLOW|O_DIRECTORY: a symlink is refused (ENOTDIR or
// ELOOP), never followed. dir's elements are checked by splitName.
func walkBeneath(rootFD int, dir string) (int, error) {
	cur := rootFD
	for _, e := range strings.Split(dir, "/") {
		next, err := unix.Openat(cur, e, dirOpenFlags|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if cur != rootFD {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

// at runs op on name's last element in its folder, opened beneath root.
// An error is a *fs.PathError naming root/name, as the os package's, or
// with what "" the bare errno, as the metadata calls of x/sys answer.
func at(what, root, name string, op func(dir int, base string) error) error {
	dir, base, err := parentOf(root, name)
	if err == nil {
		err = op(dirFD(dir), base)
		closeDir(dir)
	}
	if err != nil && what != "" {
		return &fs.PathError{Op: what, Path: filepath.Join(root, name), Err: err}
	}
	return err
}

// Mkdir creates a folder.
func (OS) Mkdir(root, name string, perm fs.FileMode) error {
	return at("mkdir", root, name, func(dir int, base string) error {
		return unix.Mkdirat(dir, base, uint32(perm.Perm()))
	})
}

// Lstat describes name without following a symlink.
func (OS) Lstat(root, name string) (fs.FileInfo, error) {
	var fi *fileInfo
	err := at("lstat", root, name, func(dir int, base string) error {
		fi = &fileInfo{name: base}
		return unix.Fstatat(dir, base, &fi.st, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err != nil {
		return nil, err
	}
	return fi, nil
}

// CreateExclusive creates a new file, never through a symlink.
func (OS) CreateExclusive(root, name string) (File, error) {
	var f *os.File
	err := at("open", root, name, func(dir int, base string) error {
		fd, err := unix.Openat(dir, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			f = os.NewFile(uintptr(fd), filepath.Join(root, name))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Rename moves oldname to newname, each in its folder opened beneath root.
func (OS) Rename(root, oldname, newname string) error {
	return atTwo("rename", root, oldname, newname, func(oldDir int, oldBase string, newDir int, newBase string) error {
		return unix.Renameat(oldDir, oldBase, newDir, newBase)
	})
}

// Link makes newname a hard link to oldname, which is not followed if it
// is a symlink.
func (OS) Link(root, oldname, newname string) error {
	return atTwo("link", root, oldname, newname, func(oldDir int, oldBase string, newDir int, newBase string) error {
		return unix.Linkat(oldDir, oldBase, newDir, newBase, 0)
	})
}

// atTwo runs op on the last elements of two names, each in its folder
// opened beneath root (once, when it is the same).
func atTwo(what, root, oldname, newname string, op func(oldDir int, oldBase string, newDir int, newBase string) error) error {
	return at(what, root, newname, func(newDir int, newBase string) error {
		oldFolder, oldBase, err := splitName(oldname)
		if err != nil {
			return err
		}
		if newFolder, _, _ := splitName(newname); newFolder == oldFolder {
			return op(newDir, oldBase, newDir, newBase)
		}
		oldDir, err := openBeneathDir(root, oldFolder)
		if err != nil {
			return err
		}
		defer closeDir(oldDir)
		return op(dirFD(oldDir), oldBase, newDir, newBase)
	})
}

// Remove removes a file or an empty folder, never what a symlink points
// to.
func (OS) Remove(root, name string) error {
	return at("remove", root, name, func(dir int, base string) error {
		err := unix.Unlinkat(dir, base, 0)
		if err == nil {
			return nil
		}
		if rmErr := unix.Unlinkat(dir, base, unix.AT_REMOVEDIR); rmErr == nil || rmErr != unix.ENOTDIR {
			return rmErr
		}
		return err
	})
}

// Symlink makes a symlink.
func (OS) Symlink(root, target, name string) error {
	return at("symlink", root, name, func(dir int, base string) error {
		return unix.Symlinkat(target, dir, base)
	})
}

// Lchown sets the owner without following a symlink.
func (OS) Lchown(root, name string, uid, gid int) error {
	return at("", root, name, func(dir int, base string) error {
		return unix.Fchownat(dir, base, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Lsetxattr sets an extended attribute without following a symlink.
func (OS) Lsetxattr(root, name, attr string, value []byte) error {
	return xattrError(attr, at("", root, name, func(dir int, base string) error {
		return setxattrAt(dir, base, attr, value)
	}))
}

// SetMTime sets the access and modification times without following a
// symlink, to the nanosecond (utimensat).
func (OS) SetMTime(root, name string, mtime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(mtime.UnixNano()), unix.NsecToTimespec(mtime.UnixNano())}
	return at("", root, name, func(dir int, base string) error {
		return unix.UtimesNanoAt(dir, base, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// OpenBeneath opens root/name for reading, never through a symlink below
// root.
func (OS) OpenBeneath(root, name string) (ReadFile, error) {
	full := filepath.Join(root, name)
	dir, base, err := parentOf(root, name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	fd, err := unix.Openat(dirFD(dir), base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	closeDir(dir)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	return os.NewFile(uintptr(fd), full), nil
}

// fileInfo is what Lstat tells of an entry (fstatat in its folder).
type fileInfo struct {
	name string
	st   unix.Stat_t
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *fileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *fileInfo) Sys() any           { return &fi.st }

func (fi *fileInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.st.Mode & 0o777)
	switch uint32(fi.st.Mode) & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	}
	if fi.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if fi.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if fi.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// sameFile tells whether two of Lstat's answers are one file: the same
// device and inode.
func sameFile(a, b fs.FileInfo) bool {
	sa, okA := a.Sys().(*unix.Stat_t)
	sb, okB := b.Sys().(*unix.Stat_t)
	if !okA || !okB {
		return os.SameFile(a, b)
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
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
