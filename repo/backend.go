package repo

import (
	"context"
	"errors"
	"io"
)

// FileType names a kind of repository object; it is also the name of the
// folder that holds objects of that kind.
type FileType string

// The kinds of objects in a repository.
const (
	ConfigFile   FileType = "config"     // the one encrypted repository config, named "config"
	KeyFile      FileType = "keys"       // one per password, holding the wrapped master key
	PackFile     FileType = "data"       // packs of encrypted blobs, named by their BLAKE3 hash
	IndexFile    FileType = "index"      // sorted lists of blobs and the packs that hold them
	SnapshotFile FileType = "snapshots"  // one record per snapshot, named by its ID
	LockFile     FileType = "locks"      // one per process that works on the repository
	PinFile      FileType = "pins"       // one per pinned snapshot, named by its ID
	ForgetFile   FileType = "forgetting" // one per snapshot being forgotten, named by its ID
)

// VerifyFile objects hold the latest verification of a snapshot, named by
// its ID (see Verification).
const VerifyFile FileType = "verifications"

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

// ErrNotEmpty is returned by a backend's Create for a place that holds
// something other than a repository.
var ErrNotEmpty = errors.New("folder is not empty and is not a nightjar repository")

// Backend is where a repository's objects live. Its guarantees, which every
// implementation must keep and the conformance suite in repo/backend/backendtest
// checks:
//
//   - Save stores the whole object atomically and durably before it returns:
//     a reader sees all of it or nothing, also after a crash. Saving a name
//     that exists replaces it whole (the format does that for config, pins,
//     verification records and a snapshot record whose tags change: the
//     new content refers to the same objects as the old).
//   - Load returns length bytes from offset (length < 0: to the end), in
//     new memory that the caller may change, or an error wrapping
//     ErrNotFound.
//   - List calls fn for every complete object of a type, in no set order.
//   - Remove deletes one object; removing a missing object wraps ErrNotFound.
//
// A Backend never needs to append, rename a visible object or overwrite part
// of one, so that object stores can implement it.
//
// Optional capabilities (BufferLoader, RangeOpener, PackStreamer,
// ProcessLocker, LockKeeper, io.Closer) are found with Capability, never by
// a type assertion, so that they survive wrappers. A wrapper (retries, rate limits,
// metrics, fault injection) has a method Unwrap() Backend that returns the
// backend it wraps; Capability looks at the wrapper first and then down the
// chain. A wrapper that needs to intercept a capability itself (because it
// must see or change the bytes a stream or a LoadInto moves, or must act when
// a lock is taken) implements it: it finds the wrapped backend's own with
// Capability(Unwrap()) and calls it, and when the wrapped backend lacks it, it
// fails with an error wrapping errors.ErrUnsupported, which callers take as
// the capability's absence (they then use Save, Load or no lock, as for a
// backend without it). A wrapper that implements io.Closer closes what it
// wraps.
type Backend interface {
	Save(ctx context.Context, h Handle, data []byte) error
	Load(ctx context.Context, h Handle, offset, length int64) ([]byte, error)
	Stat(ctx context.Context, h Handle) (size int64, err error)
	List(ctx context.Context, t FileType, fn func(name string, size int64) error) error
	Remove(ctx context.Context, h Handle) error
	// Location describes where the repository is, for messages.
	Location() string
}

// Capability returns the first backend in the chain of be and the backends
// it wraps (see Backend) that implements T, typed as T.
func Capability[T any](be Backend) (T, bool) {
	for be != nil {
		if c, ok := be.(T); ok {
			return c, true
		}
		w, ok := be.(interface{ Unwrap() Backend })
		if !ok {
			break
		}
		be = w.Unwrap()
	}
	var none T
	return none, false
}

// BufferLoader is implemented by backends that can read part of an object
// into memory the caller owns, which spares an allocation per read when
// every blob of a snapshot is read (restore, check).
type BufferLoader interface {
	// LoadInto fills buf with the len(buf) bytes at offset, or fails (with
	// an error wrapping ErrNotFound for a missing object).
	LoadInto(ctx context.Context, h Handle, offset int64, buf []byte) error
}

// RangeOpener is implemented by backends that can read part of an object
// as a stream: one request whose bytes the caller takes as it goes, so that
// a whole pack is read with one request (check --read-data) without being
// whole in memory.
type RangeOpener interface {
	// OpenRange starts reading length bytes of h from offset. The reader
	// yields exactly those bytes and then io.EOF; an object that ends
	// before, or a read that fails for good, is an error of Read (never a
	// short io.EOF). A missing object fails OpenRange or the first Read
	// with an error wrapping ErrNotFound. Close ends the read early.
	OpenRange(ctx context.Context, h Handle, offset, length int64) (io.ReadCloser, error)
}

// TreePackLoader is implemented by backends that keep the packs that hold
// trees near (the local cache of a remote repository): every backup reads
// its parent's trees again, and every restore and check reads them first.
// The repository reads tree blobs through it; an error wrapping
// errors.ErrUnsupported means it keeps no such copies now.
type TreePackLoader interface {
	// LoadTreePackInto is BufferLoader.LoadInto of a pack that holds trees.
	LoadTreePackInto(ctx context.Context, h Handle, offset int64, buf []byte) error
}

// TransferPacer is implemented by backends that cap their bandwidth at the
// wire themselves (object storage): a pack stream's bytes go out only when
// it is committed, and reads fetch windows ahead of what is asked, so a
// cap charged on the calls (package limit) would let whole packs and
// windows out at line speed. PaceTransfers hands the backend the waits of
// each direction (nil: no cap): every request body it sends and every
// answer body it reads waits for its bytes as they go.
type TransferPacer interface {
	PaceTransfers(up, down func(ctx context.Context, n int) error)
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

// LockKeeper is a storage's lock protocol: how a lock object is kept alive
// while its holder works, and how another holder's lock is judged.
// Repository.Lock takes it from the backend (found with Capability) and does
// the rest itself: the lock's content and sealing, listing the other locks,
// removing dead ones and deciding conflicts. A backend that implements
// ProcessLocker (a local folder: flock) needs no LockKeeper: the repository
// keeps its locks held by the process. An object store, where no lock can be
// tied to a process, implements LockKeeper with a lease (issue 15, which
// adds the refresh time to LockInfo): KeepLock saves the object and saves it
// again with a fresh refresh time well within the lease until release
// (which stops that and removes it), and LockAlive says a lock
// is dead only when its refresh stopped for longer than the lease or, on its
// own host, its process is provably gone, never because it is old. A backend
// with neither cannot hold locks, and Repository.Lock fails.
type LockKeeper interface {
	// KeepLock stores the lock object h with the content seal makes of
	// info, and keeps it alive until release is called. The protocol may
	// seal a changed info again (a refresh).
	KeepLock(ctx context.Context, h Handle, info LockInfo, seal func(LockInfo) ([]byte, error)) (release func() error, err error)
	// LockAlive reports whether another holder's lock object h still
	// protects its work; load reads the lock's content, for protocols that
	// need it. An error wrapping ErrNotFound means the lock is gone.
	LockAlive(ctx context.Context, h Handle, load func() (LockInfo, error)) (bool, error)
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
