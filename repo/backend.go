package repo

import (
	"context"
	"errors"
)

// FileType names a kind of repository object; it is also the name of the
// folder that holds objects of that kind.
type FileType string

// The kinds of objects in a repository.
const (
	ConfigFile   FileType = "config"    // the one encrypted repository config, named "config"
	KeyFile      FileType = "keys"      // one per password, holding the wrapped master key
	PackFile     FileType = "data"      // packs of encrypted blobs, named by their BLAKE3 hash
	IndexFile    FileType = "index"     // sorted lists of blobs and the packs that hold them
	SnapshotFile FileType = "snapshots" // one record per snapshot, named by its ID
	LockFile     FileType = "locks"     // one per process that works on the repository
)

// Handle names one object of a repository.
type Handle struct {
	Type FileType
	Name string
}

func (h Handle) String() string {
	if h.Type == ConfigFile {
		return "config"
	}
	return string(h.Type) + "/" + h.Name
}

// ValidObjectName reports whether name can name an object of a repository
// (other than its config): letters, digits, '.', '-' and '_', not starting
// with '.', at most 128 bytes. Backends refuse other names, so that a
// crafted name cannot reach outside its folder.
func ValidObjectName(name string) bool {
	if name == "" || len(name) > 128 || name[0] == '.' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ErrNotFound is returned by a Backend for an object that does not exist.
var ErrNotFound = errors.New("object not found")

// Backend is where a repository's objects live. Its guarantees, which every
// implementation must keep and the conformance suite in repo/backend/backendtest
// checks:
//
//   - Save stores the whole object atomically and durably before it returns:
//     a reader sees all of it or nothing, also after a crash. Saving a name
//     that exists replaces it whole (the format only does that for config,
//     never for a name that another object refers to).
//   - Load returns length bytes from offset (length < 0: to the end), in
//     new memory that the caller may change, or an error wrapping
//     ErrNotFound.
//   - List calls fn for every complete object of a type, in no set order.
//   - Remove deletes one object; removing a missing object wraps ErrNotFound.
//
// A Backend never needs to append, rename a visible object or overwrite part
// of one, so that object stores can implement it.
type Backend interface {
	Save(ctx context.Context, h Handle, data []byte) error
	Load(ctx context.Context, h Handle, offset, length int64) ([]byte, error)
	Stat(ctx context.Context, h Handle) (size int64, err error)
	List(ctx context.Context, t FileType, fn func(name string, size int64) error) error
	Remove(ctx context.Context, h Handle) error
	// Location describes where the repository is, for messages.
	Location() string
}

// BufferLoader is implemented by backends that can read part of an object
// into memory the caller owns, which spares an allocation per read when
// every blob of a snapshot is read (restore, check).
type BufferLoader interface {
	// LoadInto fills buf with the len(buf) bytes at offset, or fails (with
	// an error wrapping ErrNotFound for a missing object).
	LoadInto(ctx context.Context, h Handle, offset int64, buf []byte) error
}

// PackStreamer is implemented by backends that take a pack while it is
// being written, so that no pack is ever whole in memory.
type PackStreamer interface {
	NewPackStream(ctx context.Context, kind PackKind) (PackStream, error)
}

// PackKind says what a pack holds, for backends that store them
// differently: trees are read again by the next backup (its parent's
// trees), data is rarely read soon.
type PackKind int

// Pack kinds.
const (
	DataPack PackKind = iota
	TreePack
)

// PackStream is a pack being written. List does not see it, and no reader
// finds it, until Commit.
type PackStream interface {
	Write(p []byte) (int, error)
	// Commit stores what was written as the pack named name, atomically
	// and durably like Save. The stream is finished whatever the outcome.
	Commit(ctx context.Context, name string) error
	// Abort throws away what was written.
	Abort()
}

// ProcessLocker is implemented by backends that can tie a lock object to the
// life of the process that made it (a local directory does, with flock). A
// lock whose owner died is then known to be dead at once, whatever its age.
type ProcessLocker interface {
	// SaveHeld stores a lock object whole and keeps it held by this process
	// until release is called or the process ends.
	SaveHeld(ctx context.Context, h Handle, data []byte) (release func() error, err error)
	// Held reports whether a live process still holds the lock object h.
	Held(ctx context.Context, h Handle) (bool, error)
}
