package local

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/nightjar-backup/nightjar/directio"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nightjar-backup/nightjar/hostid"
	"github.com/nightjar-backup/nightjar/repo"
)

const (
	dirMode  = 0o700
	fileMode = 0o600
	tmpDir   = "tmp"
)

var folders = []repo.FileType{repo.KeyFile, repo.PackFile, repo.IndexFile, repo.SnapshotFile, repo.LockFile, repo.PinFile, repo.ForgetFile, repo.VerifyFile}

// Backend is a repository in a local folder.
type Backend struct {
	root   string
	packs  *fileCache
	stages chan []byte // staging buffers of finished pack streams, for the next
	queues chan *directio.Queue
}

func newBackend(root string) *Backend {
	return &Backend{root: root, packs: newFileCache(openPacks), stages: make(chan []byte, keptStages),
		queues: make(chan *directio.Queue, keptQueues)}
}

// openPacks is how many pack files a Backend keeps open for reading.
const openPacks = 64

var (
	_ repo.Backend       = (*Backend)(nil)
	_ repo.ProcessLocker = (*Backend)(nil)
	_ repo.ObjectTimer   = (*Backend)(nil)
	_ repo.TempFiles     = (*Backend)(nil)
	_ repo.TempSweeper   = (*Backend)(nil)
)

// Create prepares an empty or missing folder to hold a new repository. It
// refuses a folder that holds anything.
func Create(path string) (*Backend, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("create repository at %s: %w", path, err)
	}
	entries, err := os.ReadDir(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(abs, dirMode); err != nil {
			return nil, fmt.Errorf("create repository folder: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("create repository at %s: %w", abs, err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(abs, string(repo.ConfigFile))); err == nil {
			return nil, fmt.Errorf("create repository at %s: %w", abs, repo.ErrAlreadyExists)
		}
		return nil, fmt.Errorf("create repository at %s: %w", abs, repo.ErrNotEmpty)
	}
	for _, t := range append(folders, tmpDir) {
		if err := os.MkdirAll(filepath.Join(abs, string(t)), dirMode); err != nil {
			return nil, fmt.Errorf("create repository folder: %w", err)
		}
	}
	for i := 0; i < 256; i++ {
		dir := filepath.Join(abs, string(repo.PackFile), fmt.Sprintf("%02x", i))
		if err := os.Mkdir(dir, dirMode); err != nil {
			return nil, fmt.Errorf("create repository folder: %w", err)
		}
	}
	return newBackend(abs), nil
}

// Open opens the repository in an existing folder. It fails with an error
// wrapping repo.ErrNoRepository when the folder holds no repository.
func Open(path string) (*Backend, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open repository at %s: %w", path, err)
	}
	if _, err := os.Stat(filepath.Join(abs, string(repo.ConfigFile))); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", abs, repo.ErrNoRepository)
		}
		return nil, fmt.Errorf("open repository at %s: %w", abs, err)
	}
	return newBackend(abs), nil
}

// Close closes the pack files kept open for reading and releases the
// direct-write queues kept for the next pack streams.
func (b *Backend) Close() error {
	b.packs.close()
	for {
		select {
		case q := <-b.queues:
			q.Close()
		default:
			return nil
		}
	}
}

// Location returns the repository's absolute folder.
func (b *Backend) Location() string { return b.root }

func (b *Backend) path(h repo.Handle) (string, error) {
	if h.Type == repo.ConfigFile {
		return filepath.Join(b.root, string(repo.ConfigFile)), nil
	}
	if !repo.ValidObjectName(h.Name) {
		return "", fmt.Errorf("invalid object name %q", h.Name)
	}
	switch h.Type {
	case repo.PackFile:
		if len(h.Name) < 2 {
			return "", fmt.Errorf("invalid pack name %q", h.Name)
		}
		return filepath.Join(b.root, string(h.Type), h.Name[:2], h.Name), nil
	case repo.KeyFile, repo.IndexFile, repo.SnapshotFile, repo.LockFile, repo.PinFile, repo.ForgetFile, repo.VerifyFile:
		return filepath.Join(b.root, string(h.Type), h.Name), nil
	}
	return "", fmt.Errorf("unknown object type %q", h.Type)
}

// heldTempPrefix begins the name of every temporary file this version
// writes, followed by its host's tag (hostTag) and a dash: its writer
// holds a lock on it (tryLock) from its creation until it is renamed into
// place or removed, so that a file of this host whose lock can be taken
// is provably a dead writer's (SweepTemp). A network file system may not
// carry a flock between hosts, so another host's file gives no such
// proof; nor do files of older versions (no host tag). Prune removes
// those by age, under its exclusive lock.
const heldTempPrefix = "held-"

// hostTag names this host and boot in temporary file names: 16 hex digits
// of the SHA-256 of the host name and, where the system has one, the boot
// ID, so that the files of an earlier boot (whose writers are gone, and
// whose flocks with them) stay this host's but another host's never are.
var hostTag = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\n" + hostid.BootID()))
	return hex.EncodeToString(sum[:8])
})

// ownTempPrefix begins the names of the temporary files this host makes.
func ownTempPrefix() string { return heldTempPrefix + hostTag() + "-" }

// openTemps holds the names of the temporary files this process has open:
// a sweep in the same process skips them whatever its lock says (on NFS,
// flock is a POSIX lock, which a process's second descriptor gets, and
// closing that descriptor would drop the writer's lock).
var openTemps = struct {
	sync.Mutex
	names map[string]bool
}{names: map[string]bool{}}

// trackTemp records name as open (open true) or done with.
func trackTemp(name string, open bool) {
	openTemps.Lock()
	defer openTemps.Unlock()
	if open {
		openTemps.names[name] = true
	} else {
		delete(openTemps.names, name)
	}
}

// isOpenTemp reports whether this process has the temporary file open.
func isOpenTemp(name string) bool {
	openTemps.Lock()
	defer openTemps.Unlock()
	return openTemps.names[name]
}

// removeTemp removes a temporary file this process made and forgets it.
func removeTemp(name string) error {
	defer trackTemp(name, false)
	return os.Remove(name)
}

// tempAttempts bounds how often createTemp makes a new file when a sweep
// took the one it made before it could lock it.
const tempAttempts = 8

// createTemp creates a new, empty temporary file, locked by this process
// until it is closed.
func (b *Backend) createTemp() (*os.File, error) {
	for range tempAttempts {
		f, err := b.createTempOnce()
		if err != nil || f != nil {
			return f, err
		}
	}
	return nil, fmt.Errorf("create temporary file: taken by a sweep %d times", tempAttempts)
}

// createTempOnce creates and locks a temporary file; nil and no error when
// a sweep took it between its creation and its lock (the sweep removes it).
func (b *Backend) createTempOnce() (*os.File, error) {
	var rnd [12]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	name := filepath.Join(b.root, tmpDir, ownTempPrefix()+hex.EncodeToString(rnd[:]))
	// Known as open before it exists, so that no sweep of this process
	// ever takes it.
	trackTemp(name, true)
	f, err := b.createTempIn(name)
	if f == nil {
		trackTemp(name, false)
	}
	return f, err
}

// createTempIn creates and locks the temporary file name (createTempOnce).
func (b *Backend) createTempIn(name string) (*os.File, error) {
	f, err := createExclusive(name)
	if errors.Is(err, fs.ErrNotExist) {
		// Copies of a repository may lose empty folders (git, some sync
		// tools): make them again.
		if mkErr := os.MkdirAll(filepath.Dir(name), dirMode); mkErr == nil {
			f, err = createExclusive(name)
		}
	}
	if err != nil {
		return nil, err
	}
	switch err := tryLock(f); {
	case errors.Is(err, errLocked):
		f.Close()
		return nil, nil
	case err != nil:
		f.Close()
		os.Remove(name) // forgotten by createTempOnce
		return nil, fmt.Errorf("lock temporary file: %w", err)
	}
	// A sweep that locked the file before this process did removed it
	// before letting go: the name must still be this file.
	if !sameFile(f, name) {
		f.Close()
		return nil, nil
	}
	return f, nil
}

// sameFile reports whether name is still the file f has open.
func sameFile(f *os.File, name string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	ni, err := os.Lstat(name)
	return err == nil && os.SameFile(fi, ni)
}

// writeTemp writes data to a new synced temporary file and returns it open.
func (b *Backend) writeTemp(data []byte) (*os.File, error) {
	f, err := b.createTemp()
	if err != nil {
		return nil, err
	}
	name := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		removeTemp(name)
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		removeTemp(name)
		return nil, err
	}
	return f, nil
}

// publish renames the synced temporary file into place and syncs the folder.
func publish(tmp, final string) error {
	defer trackTemp(tmp, false)
	err := os.Rename(tmp, final)
	if errors.Is(err, fs.ErrNotExist) {
		if mkErr := os.MkdirAll(filepath.Dir(final), dirMode); mkErr == nil {
			err = os.Rename(tmp, final)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(final))
}

// Save stores data under h atomically and durably.
func (b *Backend) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	final, err := b.path(h)
	if err != nil {
		return err
	}
	if h.Type == repo.PackFile {
		b.packs.forget(final)
	}
	f, err := b.writeTemp(data)
	if err != nil {
		return fmt.Errorf("save %s: %w", h, err)
	}
	// Renamed while open, and so locked: a sweep never takes it.
	tmp := f.Name()
	if err := publish(tmp, final); err != nil {
		f.Close()
		return fmt.Errorf("save %s: %w", h, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("save %s: %w", h, err)
	}
	if h.Type == repo.PackFile {
		// A reader may have cached the old file while this one was written.
		b.packs.forget(final)
	}
	return nil
}

// NewPackStream starts a pack in a temporary file: a backup then never
// holds a whole pack in memory.
func (b *Backend) NewPackStream(ctx context.Context, kind repo.PackKind) (repo.PackStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := b.createTemp()
	if err != nil {
		return nil, fmt.Errorf("new pack: %w", err)
	}
	return &packStream{b: b, f: f, w: newPackWriter(f, kind == repo.DataPack, b.stage, b.queue)}, nil
}

type packStream struct {
	b *Backend
	f *os.File
	w *packWriter
}

func (s *packStream) Write(p []byte) (int, error) { return s.w.Write(p) }

// Commit syncs the temporary file and renames it into place, as Save does.
func (s *packStream) Commit(ctx context.Context, name string) error {
	h := repo.Handle{Type: repo.PackFile, Name: name}
	tmp := s.f.Name()
	defer s.close()
	fail := func(err error) error {
		s.f.Close()
		removeTemp(tmp)
		return fmt.Errorf("save %s: %w", h, err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	final, err := s.b.path(h)
	if err != nil {
		return fail(err)
	}
	if err := s.w.Flush(); err != nil {
		return fail(err)
	}
	if err := s.f.Sync(); err != nil {
		return fail(err)
	}
	// Renamed while open, and so locked: a sweep never takes it.
	if err := publish(tmp, final); err != nil {
		s.f.Close()
		return fmt.Errorf("save %s: %w", h, err)
	}
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("save %s: %w", h, err)
	}
	s.b.packs.forget(final)
	return nil
}

func (s *packStream) Abort() {
	s.close()
	s.f.Close()
	removeTemp(s.f.Name())
}

// Load reads length bytes from offset (length < 0: to the end).
func (b *Backend) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	f, done, err := b.openForRead(ctx, h)
	if err != nil {
		return nil, err
	}
	defer done()
	if length < 0 {
		fi, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", h, err)
		}
		length = fi.Size() - offset
		if length < 0 {
			return nil, fmt.Errorf("load %s: offset %d beyond size %d", h, offset, fi.Size())
		}
	}
	buf := make([]byte, length)
	if err := readFull(f, h, offset, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// LoadInto reads len(buf) bytes at offset of an object into buf.
func (b *Backend) LoadInto(ctx context.Context, h repo.Handle, offset int64, buf []byte) error {
	f, done, err := b.openForRead(ctx, h)
	if err != nil {
		return err
	}
	defer done()
	return readFull(f, h, offset, buf)
}

// openForRead opens an object for reading: a pack through the cache of
// open pack files, anything else on its own. done releases it.
func (b *Backend) openForRead(ctx context.Context, h repo.Handle) (f *os.File, done func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	name, err := b.path(h)
	if err != nil {
		return nil, nil, err
	}
	if h.Type == repo.PackFile {
		f, done, err = b.packs.open(name)
		if err != nil {
			return nil, nil, notFound(h, err)
		}
		return f, done, nil
	}
	f, err = openNoFollow(name)
	if err != nil {
		return nil, nil, notFound(h, err)
	}
	return f, func() { f.Close() }, nil
}

func readFull(f *os.File, h repo.Handle, offset int64, buf []byte) error {
	n, err := f.ReadAt(buf, offset)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		return fmt.Errorf("load %s at %d+%d: %w", h, offset, len(buf), err)
	}
	return nil
}

// Stat returns the size of an object.
func (b *Backend) Stat(ctx context.Context, h repo.Handle) (int64, error) {
	name, err := b.path(h)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(name)
	if err != nil {
		return 0, notFound(h, err)
	}
	return fi.Size(), nil
}

// ModTime returns when an object was stored: its file's modification
// time (repo.ObjectTimer, for prune's age of leftover packs).
func (b *Backend) ModTime(ctx context.Context, h repo.Handle) (time.Time, error) {
	name, err := b.path(h)
	if err != nil {
		return time.Time{}, err
	}
	fi, err := os.Stat(name)
	if err != nil {
		return time.Time{}, notFound(h, err)
	}
	return fi.ModTime(), nil
}

// SweepTemp removes the temporary files whose writer is provably gone
// (repo.TempSweeper): those this version names and locks on this host
// (ownTempPrefix) whose lock can be taken and that this process does not
// have open. A file is removed while its lock is held, and
// only while its name still is that file, so a writer that locks it later
// sees it gone and makes another. Live writers' files are counted.
func (b *Backend) SweepTemp(ctx context.Context) (repo.TempSweep, error) {
	var sw repo.TempSweep
	dir := filepath.Join(b.root, tmpDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return sw, nil
	}
	if err != nil {
		return sw, fmt.Errorf("sweep temporary files: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return sw, err
		}
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), ownTempPrefix()) {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if isOpenTemp(name) {
			sw.Live++ // this process writes it
			continue
		}
		removed, size, err := sweepOne(name)
		if err != nil {
			return sw, fmt.Errorf("sweep temporary files: %w", err)
		}
		if removed {
			sw.Removed++
			sw.BytesRemoved += size
		} else if size >= 0 {
			sw.Live++
		}
	}
	if sw.Removed > 0 {
		if err := syncDir(dir); err != nil {
			return sw, fmt.Errorf("sweep temporary files: %w", err)
		}
	}
	return sw, nil
}

// sweepOne removes the temporary file name if no writer holds it; size
// is its size, or -1 when it was gone already.
func sweepOne(name string) (removed bool, size int64, err error) {
	f, err := openNoFollow(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, -1, nil
	}
	if err != nil {
		return false, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, 0, err
	}
	switch err := tryLock(f); {
	case errors.Is(err, errLocked):
		return false, fi.Size(), nil // a live writer's
	case err != nil:
		return false, 0, err
	}
	defer unlockFile(f)
	if !sameFile(f, name) {
		return false, -1, nil // renamed into place or removed by its writer meanwhile
	}
	if err := os.Remove(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, -1, nil
		}
		return false, 0, err
	}
	return true, fi.Size(), nil
}

// ListTemp calls fn for each temporary file in tmp/ (repo.TempFiles) that
// gives no proof of its writer's life: a write that was killed leaves its
// file there. The files SweepTemp judges (this host's) are not listed;
// other hosts' and older versions' are.
func (b *Backend) ListTemp(ctx context.Context, fn func(name string, size int64, modTime time.Time) error) error {
	entries, err := os.ReadDir(filepath.Join(b.root, tmpDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list temporary files: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(e.Name(), ownTempPrefix()) {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.Mode().IsRegular() {
			continue
		}
		if err != nil {
			return fmt.Errorf("list temporary files: %w", err)
		}
		if err := fn(e.Name(), fi.Size(), fi.ModTime()); err != nil {
			return err
		}
	}
	return nil
}

// RemoveTemp removes a temporary file that ListTemp named.
func (b *Backend) RemoveTemp(ctx context.Context, name string) error {
	if !repo.ValidObjectName(name) {
		return fmt.Errorf("invalid temporary file name %q", name)
	}
	err := os.Remove(filepath.Join(b.root, tmpDir, name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove temporary file: %w", err)
	}
	return nil
}

// List calls fn for each object of type t.
func (b *Backend) List(ctx context.Context, t repo.FileType, fn func(name string, size int64) error) error {
	dirs := []string{filepath.Join(b.root, string(t))}
	if t == repo.PackFile {
		dirs = dirs[:0]
		for i := 0; i < 256; i++ {
			dirs = append(dirs, filepath.Join(b.root, string(t), fmt.Sprintf("%02x", i)))
		}
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", t, err)
		}
		for _, e := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !e.Type().IsRegular() || !repo.ValidObjectName(e.Name()) {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("list %s: %w", t, err)
			}
			if err := fn(e.Name(), fi.Size()); err != nil {
				return err
			}
		}
	}
	return nil
}

// Remove deletes one object.
func (b *Backend) Remove(ctx context.Context, h repo.Handle) error {
	name, err := b.path(h)
	if err != nil {
		return err
	}
	if h.Type == repo.PackFile {
		b.packs.forget(name)
	}
	if err := os.Remove(name); err != nil {
		return notFound(h, err)
	}
	return syncDir(filepath.Dir(name))
}

// SaveHeld stores a lock object that stays locked (flock; LockFileEx on
// Windows) by this process until release is called. The lock is taken
// before the object becomes visible, so no other process ever sees it
// unheld while its owner lives.
func (b *Backend) SaveHeld(ctx context.Context, h repo.Handle, data []byte) (func() error, error) {
	final, err := b.path(h)
	if err != nil {
		return nil, err
	}
	// The temporary file is locked from its creation (createTemp): the
	// lock object is held before it becomes visible.
	f, err := b.writeTemp(data)
	if err != nil {
		return nil, fmt.Errorf("save %s: %w", h, err)
	}
	if err := publish(f.Name(), final); err != nil {
		f.Close()
		return nil, fmt.Errorf("save %s: %w", h, err)
	}
	release := func() error {
		rmErr := os.Remove(final)
		closeErr := f.Close()
		if rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", h, rmErr)
		}
		return closeErr
	}
	return release, nil
}

// Held reports whether some live process holds the lock of lock object h.
func (b *Backend) Held(ctx context.Context, h repo.Handle) (bool, error) {
	name, err := b.path(h)
	if err != nil {
		return false, err
	}
	f, err := openNoFollow(name)
	if err != nil {
		return false, notFound(h, err)
	}
	defer f.Close()
	err = tryLock(f)
	if errors.Is(err, errLocked) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("test %s: %w", h, err)
	}
	_ = unlockFile(f)
	return false, nil
}

func notFound(h repo.Handle, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", h, repo.ErrNotFound)
	}
	return fmt.Errorf("%s: %w", h, err)
}
