package restore

import (
	"io"
	"io/fs"
	"time"
)

// FS is what a restore does to the file system it restores into. Every
// name is relative to root, the target, with "/" between its elements;
// root is resolved as the OS does, and nothing below it: no call follows
// a symlink anywhere in name (on Linux, macOS and FreeBSD each is made
// through a descriptor of its folder, opened beneath root without
// following a symlink, so that a symlink swapped in while the restore
// runs cannot lead it outside root). OS is the one the program uses;
// tests wrap it to inject faults. What the platform cannot do at all
// (owners on Windows, say) is answered with an error the restorer names
// once for the whole restore (Lack).
type FS interface {
	// Mkdir creates a folder.
	Mkdir(root, name string, perm fs.FileMode) error
	// Lstat describes name without following a symlink; SameFile tells
	// whether two answers are one file.
	Lstat(root, name string) (fs.FileInfo, error)
	// CreateExclusive creates a new file (0600), failing if name exists.
	CreateExclusive(root, name string) (File, error)
	// OpenDirect opens f, just created as name, a second time for direct
	// writes (package directio); nil when the file system refuses.
	OpenDirect(root, name string, f File) File
	// OpenBeneath opens the file root/name for reading; a symlink where a
	// folder or the file should be is an error.
	OpenBeneath(root, name string) (ReadFile, error)
	// Rename moves oldname to newname, replacing a file there.
	Rename(root, oldname, newname string) error
	// Remove removes a file or an empty folder.
	Remove(root, name string) error
	// Link makes newname a hard link to oldname.
	Link(root, oldname, newname string) error
	// Symlink makes name a symlink to target.
	Symlink(root, target, name string) error
	// Mknod makes a FIFO or a device node (mode holds the type bits).
	Mknod(root, name string, mode uint32, dev int) error
	// Lchown sets the owner.
	Lchown(root, name string, uid, gid int) error
	// Lsetxattr sets an extended attribute.
	Lsetxattr(root, name, attr string, value []byte) error
	// Chmod sets the permission bits (with setuid, setgid and sticky) of
	// something that is not a symlink, never those of what a symlink
	// points to. On Windows only the read-only attribute exists.
	Chmod(root, name string, mode uint32) error
	// SetMTime sets the access and modification times to mtime.
	SetMTime(root, name string, mtime time.Time) error
}

// exclusiveRenamer is an FS that renames without replacing in one call
// (renameat2 with RENAME_NOREPLACE on Linux), so that placing a restored
// file asks no Lstat first.
type exclusiveRenamer interface {
	// RenameExclusive moves oldname to newname in one call that fails
	// with an error matching fs.ErrExist if newname exists, or
	// errors.ErrUnsupported where the file system cannot.
	RenameExclusive(root, oldname, newname string) error
}

// unnamedCreator is an FS that creates a file with no name in a folder and
// names it once it is complete (O_TMPFILE and linkat on Linux): there is
// no temporary name to make and rename, and the file is under no name at
// all until it is whole.
type unnamedCreator interface {
	// CreateUnnamed creates a file (0600) with no name in the folder that
	// name is in, opened beneath root; an error matching
	// errors.ErrUnsupported where the file system cannot.
	CreateUnnamed(root, name string) (UnnamedFile, error)
	// LinkUnnamed gives f, made by CreateUnnamed for name, that name; an
	// error matching fs.ErrExist if something is there, which stays.
	LinkUnnamed(root, name string, f File) error
}

// UnnamedFile is a file made with no name: it has no name to set its
// metadata by, so it sets it itself.
type UnnamedFile interface {
	File
	metaSetter
}

// unnamedWrapper is an FS that wraps the OS and takes over its own calls
// whole: files with no name (unnamedCreator) and the metadata its Files
// set through their descriptors. The restore uses those only with the OS
// itself or such a wrapper; a wrapper that embeds OS to watch or limit
// file creation and metadata gets temporary names and calls by name, so
// that nothing goes around it.
type unnamedWrapper interface {
	unnamedCreator
	WrapsUnnamed()
}

// File is a file being restored.
type File interface {
	io.WriterAt
	Truncate(size int64) error
	Close() error
}

// metaSetter sets the metadata of an entry being restored: a File that
// can do it through its descriptor (Linux's), which then looks up no
// name, or pathMeta, which names the entry to the FS.
type metaSetter interface {
	// Chown sets the owner.
	Chown(uid, gid int) error
	// Setxattr sets an extended attribute.
	Setxattr(attr string, value []byte) error
	// Chmod sets the permission bits with setuid, setgid and sticky.
	Chmod(mode uint32) error
	// SetMTime sets the access and modification times to mtime.
	SetMTime(mtime time.Time) error
}

// pathMeta sets the metadata of the entry root/name through an FS,
// never following a symlink there.
type pathMeta struct {
	fs         FS
	root, name string
}

func (p pathMeta) Chown(uid, gid int) error { return p.fs.Lchown(p.root, p.name, uid, gid) }
func (p pathMeta) Setxattr(attr string, value []byte) error {
	return p.fs.Lsetxattr(p.root, p.name, attr, value)
}
func (p pathMeta) Chmod(mode uint32) error        { return p.fs.Chmod(p.root, p.name, mode) }
func (p pathMeta) SetMTime(mtime time.Time) error { return p.fs.SetMTime(p.root, p.name, mtime) }

// ReadFile is a restored file read back by verify.
type ReadFile interface {
	io.Reader
	Stat() (fs.FileInfo, error)
	Close() error
}

// OS is the operating system's file system.
type OS struct{}

var _ FS = OS{}
