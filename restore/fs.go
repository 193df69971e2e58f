package restore

import (
	"io"
	"io/fs"
	"os"
	"time"
)

// FS is what a restore does to the file system it restores into. No call
// follows a symlink in the last element of a name, and OpenBeneath none in
// any. OS is the one the program uses; tests wrap it to inject faults.
// What the platform cannot do at all (owners on Windows, say) is answered
// with an error the restorer names once for the whole restore (Lack).
type FS interface {
	// Mkdir creates a folder.
	Mkdir(name string, perm fs.FileMode) error
	// Lstat describes name without following a symlink, as os.Lstat does:
	// os.SameFile tells whether two answers are one file.
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
	// something that is not a symlink, never those of what a symlink
	// points to. On Windows only the read-only attribute exists.
	Chmod(name string, mode uint32) error
	// SetMTime sets the access and modification times to mtime, without
	// following a symlink.
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

// Rename moves oldname to newname.
func (OS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

// Remove removes a file or an empty folder.
func (OS) Remove(name string) error { return os.Remove(name) }

// Link makes a hard link.
func (OS) Link(oldname, newname string) error { return os.Link(oldname, newname) }
