package backup

import (
	"context"
	"io"
	"io/fs"

	"github.com/nightjar-backup/nightjar/repo"
)

// Repository is what the archiver needs of a repository: a write session
// to store blobs, trees and the snapshot, the parent snapshot and its
// trees, and the keys and sizes of the chunker. *repo.Repository is one.
type Repository interface {
	WriteSession(ctx context.Context, opts repo.WriteOptions, fn func(ctx context.Context, w *repo.Writer) error) (*repo.Written, error)
	FindSnapshot(ctx context.Context, ref string, paths []string) (*repo.Snapshot, error)
	LoadTree(ctx context.Context, id repo.ID) (*repo.Tree, error)
	Config() repo.Config
	ChunkerKey() [32]byte
	BlobID(data []byte) repo.ID
}

var _ Repository = (*repo.Repository)(nil)

// FS is what the archiver does to the source tree. Names are absolute
// paths of the system. Metadata (FileInfo.Sys) is as the OS gives it: a
// *syscall.Stat_t on Linux, macOS and FreeBSD, a
// *syscall.Win32FileAttributeData on Windows. OSFS is the file system
// itself; a test wraps it to inject faults, and a command's output can
// become a source through it.
type FS interface {
	// Lstat describes an entry without following a symlink.
	Lstat(name string) (fs.FileInfo, error)
	// Stat describes an entry, following symlinks: for the folders above a
	// source, which may be reached through one (FreeBSD's /home, macOS's
	// /tmp), as restic follows them.
	Stat(name string) (fs.FileInfo, error)
	// ReadDirNames lists a directory's names, in no set order.
	ReadDirNames(name string) ([]string, error)
	// Readlink returns a symlink's target.
	Readlink(name string) (string, error)
	// OpenFile opens a regular file for reading its content.
	OpenFile(name string) (File, error)
	// ListXattrs lists the names of an entry's extended attributes,
	// without following a symlink; nil where the file system has none.
	ListXattrs(name string) ([]string, error)
	// GetXattr reads one extended attribute without following a symlink;
	// an attribute removed since it was listed fails with ErrNoXattr.
	GetXattr(name, attr string) ([]byte, error)
}

// File is an open regular file of an FS.
type File interface {
	io.Reader
	// Stat describes the open file (fstat).
	Stat() (fs.FileInfo, error)
	Close() error
}
