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

// parentOf opens the folder of root/name beneath root and returns it,
// which the caller lets go of with release, and name's last element.
// With reuse the folder may come from the held root's cache.
func parentOf(root, name string, reuse bool) (dirHandle, string, error) {
	dir, base, err := splitName(name)
	if err != nil {
		return dirHandle{}, "", err
	}
	d, err := openBeneathDir(root, dir, reuse)
	return d, base, err
}

// heldRoots are the targets of the restores running, each opened once
// for all the calls below it (holdRoot): a call then opens only the
// folder it needs, not the target first, and the folders opened are
// kept for the next calls in them.
var heldRoots sync.Map // root path -> *heldRoot

type heldRoot struct {
	fd   int
	refs atomic.Int32
	// dirs are folders below the target opened beneath it, kept open
	// for the calls that follow in the same folder: a restore makes many
	// entries in one folder one after the other, and opening the folder
	// (openat2 and close) was two of every file's ten system calls.
	mu    sync.Mutex
	dirs  map[string]*cachedDir // by name below the target
	clock uint64                // counts takes, for eviction
}

// cachedDir is a folder's descriptor kept open by its held root.
type cachedDir struct {
	fd    int
	users int    // calls using fd now: it is not closed while they do
	used  uint64 // the held root's clock when last taken
}

// cachedDirs is the most folder descriptors a held root keeps: enough for
// the folders that the file workers and the walk are in at once.
const cachedDirs = 64

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
		h := &heldRoot{fd: fd, dirs: map[string]*cachedDir{}}
		h.refs.Store(1)
		heldRoots.Store(root, h)
	}
	return func() {
		heldMu.Lock()
		defer heldMu.Unlock()
		v, _ := heldRoots.Load(root)
		if h := v.(*heldRoot); h.refs.Add(-1) == 0 {
			heldRoots.Delete(root)
			h.mu.Lock()
			for _, d := range h.dirs {
				unix.Close(d.fd)
			}
			h.dirs = nil
			h.mu.Unlock()
			unix.Close(h.fd)
		}
	}
}

// take returns the folder dir below the held root, from its cache or
// opened beneath it (and cached when there is room).
func (h *heldRoot) take(dir string) (dirHandle, error) {
	h.mu.Lock()
	if d, ok := h.dirs[dir]; ok {
		d.users++
		h.clock++
		d.used = h.clock
		h.mu.Unlock()
		return dirHandle{fd: d.fd, cached: d, held: h}, nil
	}
	h.mu.Unlock()
	fd, err := openDirBeneath(h.fd, dir)
	if err != nil {
		return dirHandle{}, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.dirs[dir]; ok || h.dirs == nil || !h.evict() {
		return dirHandle{fd: fd, owned: true}, nil
	}
	h.clock++
	d := &cachedDir{fd: fd, users: 1, used: h.clock}
	h.dirs[dir] = d
	return dirHandle{fd: fd, cached: d, held: h}, nil
}

// evict makes room for one more folder in the cache, closing the one
// used longest ago that no call is using; false when there is no room.
// h.mu is held.
func (h *heldRoot) evict() bool {
	if len(h.dirs) < cachedDirs {
		return true
	}
	var oldest string
	var found *cachedDir
	for name, d := range h.dirs {
		if d.users == 0 && (found == nil || d.used < found.used) {
			oldest, found = name, d
		}
	}
	if found == nil {
		return false
	}
	delete(h.dirs, oldest)
	unix.Close(found.fd)
	return true
}

// dirHandle is a folder opened beneath a target, for *at calls: a held
// root's own descriptor, one of its cached folders, or a descriptor of
// the caller's own (owned), which release closes.
type dirHandle struct {
	fd     int
	owned  bool
	cached *cachedDir
	held   *heldRoot
}

// release lets go of the folder: a cached one stays open for the next
// call, one of the caller's own is closed.
func (d dirHandle) release() {
	switch {
	case d.owned:
		unix.Close(d.fd)
	case d.cached != nil:
		d.held.mu.Lock()
		d.cached.users--
		d.held.mu.Unlock()
	}
}

// openBeneathDir opens the folder root/dir ("": root) for use as the
// folder of *at calls, following no symlink below root. Below a held root
// and with reuse, the folder comes from the held root's cache: a folder
// replaced by a symlink after it was opened keeps receiving the calls
// made in it wherever it was moved, as a call already under way would;
// nothing is ever followed through the symlink.
func openBeneathDir(root, dir string, reuse bool) (dirHandle, error) {
	if v, ok := heldRoots.Load(root); ok {
		h := v.(*heldRoot)
		switch {
		case dir == "":
			return dirHandle{fd: h.fd}, nil
		case reuse:
			return h.take(dir)
		}
		fd, err := openDirBeneath(h.fd, dir)
		return dirHandle{fd: fd, owned: err == nil}, err
	}
	rootFD, err := unix.Open(root, dirOpenFlags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return dirHandle{}, err
	}
	if dir == "" {
		return dirHandle{fd: rootFD, owned: true}, nil
	}
	fd, err := openDirBeneath(rootFD, dir)
	unix.Close(rootFD)
	if err != nil {
		return dirHandle{}, err
	}
	return dirHandle{fd: fd, owned: true}, nil
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
	dir, base, err := parentOf(root, name, true)
	if err == nil {
		err = op(dir.fd, base)
		dir.release()
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

// openExclusive creates root/name for writing, never through a symlink,
// and returns its descriptor.
func openExclusive(root, name string) (int, error) {
	fd := -1
	err := at("open", root, name, func(dir int, base string) error {
		var err error
		fd, err = unix.Openat(dir, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		return err
	})
	return fd, err
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
		oldDir, err := openBeneathDir(root, oldFolder, true)
		if err != nil {
			return err
		}
		defer oldDir.release()
		return op(oldDir.fd, oldBase, newDir, newBase)
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
// root. Its folder is opened afresh, not taken from the cache: verify
// reads what the target holds now, and a folder moved away since the
// restore wrote it is not the target's any more.
func (OS) OpenBeneath(root, name string) (ReadFile, error) {
	full := filepath.Join(root, name)
	dir, base, err := parentOf(root, name, false)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	fd, err := unix.Openat(dir.fd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	dir.release()
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
