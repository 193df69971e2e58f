package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"lukechampine.com/blake3"

	"github.com/nightjar-backup/nightjar/repo"
)

// The capabilities a Backend intercepts; the others are found through
// Unwrap.
var (
	_ repo.BufferLoader   = (*Backend)(nil)
	_ repo.PackStreamer   = (*Backend)(nil)
	_ repo.TreePackLoader = (*Backend)(nil)
)

// Backend is a repository's backend with a local cache in front of it. It
// passes everything through until Attach names the repository's folder.
// Safe for concurrent use.
type Backend struct {
	repo.Backend
	dir atomic.Pointer[string] // the repository's folder, once attached

	mu       sync.Mutex
	verified map[string]bool          // cache paths checked against their name by this process
	fetching map[string]chan struct{} // cache paths being fetched, closed when done
	// unmatched holds the cache paths of objects whose content, fetched
	// by this process, did not match their name (damage in the
	// repository): they are read through, in ranges, from then on, so
	// that a damaged tree pack is not downloaded whole again for every
	// tree read from it.
	unmatched map[string]bool
	// snapshotETags are the ETags of the snapshot records by name, as the
	// last listing gave them (snapshots.go).
	snapshotETags map[string]string
	// onFetch, when set, is told of each object fetched to be cached, for
	// tests.
	onFetch func(h repo.Handle)
}

// Wrap returns be with a cache in front of it, not attached yet.
func Wrap(be repo.Backend) *Backend {
	return &Backend{Backend: be, verified: map[string]bool{}, fetching: map[string]chan struct{}{}, unmatched: map[string]bool{}}
}

// Unwrap returns the wrapped backend.
func (b *Backend) Unwrap() repo.Backend { return b.Backend }

// Attach starts caching in the folder of the repository id under root
// (root/id), making the folders (0700) when missing.
func (b *Backend) Attach(root, id string) error {
	if !repo.ValidObjectName(id) {
		return fmt.Errorf("cache: repository id %q is not a folder name", id)
	}
	dir := filepath.Join(root, id)
	for _, sub := range []repo.FileType{repo.IndexFile, repo.PackFile, repo.SnapshotFile} {
		if err := os.MkdirAll(filepath.Join(dir, string(sub)), 0o700); err != nil {
			return fmt.Errorf("cache: %w", err)
		}
	}
	b.dir.Store(&dir)
	return nil
}

// cached reports whether objects of type t are kept. The packs are kept
// only when read as tree packs or written as such.
func cached(t repo.FileType) bool { return t == repo.IndexFile || t == repo.PackFile }

// path returns where the copy of h lives, "" when h is not cached (not
// attached, a type not kept, a name that is not a hash).
func (b *Backend) path(h repo.Handle) string {
	dir := b.dir.Load()
	if dir == nil || !cached(h.Type) {
		return ""
	}
	if _, err := repo.ParseID(h.Name); err != nil {
		return ""
	}
	return filepath.Join(*dir, string(h.Type), h.Name)
}

// matches reports whether data hashes to name.
func matches(name string, data []byte) bool {
	sum := blake3.Sum256(data)
	id, err := repo.ParseID(name)
	return err == nil && bytes.Equal(sum[:], id[:])
}

// readVerified returns the copy at p when it matches its name; a copy that
// does not is removed. A missing copy returns nil and no error.
func (b *Backend) readVerified(p, name string) []byte {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	if !matches(name, data) {
		b.drop(p)
		return nil
	}
	b.mu.Lock()
	b.verified[p] = true
	b.mu.Unlock()
	return data
}

// drop removes the copy at p.
func (b *Backend) drop(p string) {
	b.mu.Lock()
	delete(b.verified, p)
	b.mu.Unlock()
	_ = os.Remove(p)
}

// store writes the copy of an object at p, whole or not at all: a crash
// leaves a temporary file, never a short copy under the name. Failing to
// write costs only the copy.
func (b *Backend) store(p string, data []byte) {
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), p) != nil {
		_ = os.Remove(f.Name())
		return
	}
	b.mu.Lock()
	b.verified[p] = true
	b.mu.Unlock()
}

// Load reads an index file from its copy when there is one that matches
// its name, else from the wrapped backend, keeping a copy. A pack with a
// copy (a tree pack) is read from it; a snapshot record as snapshots.go
// says.
func (b *Backend) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if p := b.snapshotPath(h.Name); h.Type == repo.SnapshotFile && p != "" && offset == 0 && length < 0 {
		if _, ok := b.etagLister(); ok {
			return b.loadSnapshot(ctx, h, p)
		}
	}
	p := b.path(h)
	if p == "" {
		return b.Backend.Load(ctx, h, offset, length)
	}
	if h.Type == repo.PackFile {
		if b.usable(p, h.Name) {
			if data, err := readRange(p, offset, length); err == nil {
				return data, nil
			}
			b.drop(p)
		}
		return b.Backend.Load(ctx, h, offset, length)
	}
	data, err := b.whole(ctx, h, p)
	if errors.Is(err, errUnmatched) {
		return b.Backend.Load(ctx, h, offset, length)
	}
	if err != nil {
		return nil, err
	}
	return cut(data, offset, length, h)
}

// errUnmatched says that an object's content, fetched earlier by this
// process, did not match its name: it is not cached, and is read through
// (a tree pack in ranges, as the repository falls back to on
// ErrUnsupported).
var errUnmatched = fmt.Errorf("cache: the object did not match its name: %w", errors.ErrUnsupported)

// whole returns the content of h from its copy, fetching it first when
// there is none (once however many ask at the same time).
func (b *Backend) whole(ctx context.Context, h repo.Handle, p string) ([]byte, error) {
	for {
		if data := b.readVerified(p, h.Name); data != nil {
			return data, nil
		}
		b.mu.Lock()
		if b.unmatched[p] {
			b.mu.Unlock()
			return nil, errUnmatched
		}
		wait, busy := b.fetching[p]
		if !busy {
			done := make(chan struct{})
			b.fetching[p] = done
			b.mu.Unlock()
			data, err := b.fetch(ctx, h, p)
			b.mu.Lock()
			delete(b.fetching, p)
			b.mu.Unlock()
			close(done)
			return data, err
		}
		b.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("load %s: %w", h, ctx.Err())
		}
		// The other fetch ended: its copy, or its verdict that the object
		// does not match, is read at the top; after a failed fetch this
		// one tries in its turn.
	}
}

// fetch reads h whole from the wrapped backend and keeps a copy when it
// matches its name; one that does not is returned uncached, for the
// repository to judge.
func (b *Backend) fetch(ctx context.Context, h repo.Handle, p string) ([]byte, error) {
	if b.onFetch != nil {
		b.onFetch(h)
	}
	data, err := b.Backend.Load(ctx, h, 0, -1)
	if err != nil {
		return nil, err
	}
	if matches(h.Name, data) {
		b.store(p, data)
	} else {
		b.mu.Lock()
		b.unmatched[p] = true
		b.mu.Unlock()
	}
	return data, nil
}

// cut returns the length bytes of data at offset (length < 0: to the end),
// in memory of their own.
func cut(data []byte, offset, length int64, h repo.Handle) ([]byte, error) {
	end := int64(len(data))
	if length >= 0 {
		end = offset + length
	}
	if offset < 0 || offset > int64(len(data)) || end > int64(len(data)) || end < offset {
		return nil, fmt.Errorf("load %s: %d bytes at %d of a %d-byte object", h, length, offset, len(data))
	}
	if offset == 0 && end == int64(len(data)) {
		return data, nil
	}
	return append([]byte(nil), data[offset:end]...), nil
}

// readRange reads length bytes at offset (length < 0: to the end) of the
// file at p.
func readRange(p string, offset, length int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if length < 0 {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		length = st.Size() - offset
		if length < 0 {
			return nil, io.ErrUnexpectedEOF
		}
	}
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil {
		return nil, err
	}
	return buf, nil
}

// usable reports whether the copy at p can be read: it exists and matched
// its name once in this process (checked now if not yet: a pack is hashed
// once, then read in ranges).
func (b *Backend) usable(p, name string) bool {
	b.mu.Lock()
	ok := b.verified[p]
	b.mu.Unlock()
	if ok {
		return true
	}
	return b.readVerified(p, name) != nil
}

// LoadInto reads a pack from its copy when it has one, else through the
// wrapped backend.
func (b *Backend) LoadInto(ctx context.Context, h repo.Handle, offset int64, buf []byte) error {
	if p := b.path(h); p != "" && h.Type == repo.PackFile && b.usable(p, h.Name) {
		if err := readInto(p, offset, buf); err == nil {
			return nil
		}
		b.drop(p)
	}
	return b.loadThrough(ctx, h, offset, buf)
}

// loadThrough is LoadInto of the wrapped backend.
func (b *Backend) loadThrough(ctx context.Context, h repo.Handle, offset int64, buf []byte) error {
	bl, ok := repo.Capability[repo.BufferLoader](b.Backend)
	if !ok {
		return fmt.Errorf("load into a buffer: %w", errors.ErrUnsupported)
	}
	return bl.LoadInto(ctx, h, offset, buf)
}

func readInto(p string, offset int64, buf []byte) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.ReadAt(buf, offset)
	return err
}

// LoadTreePackInto reads from a pack that holds trees: the whole pack is
// fetched and kept the first time, and read from its copy after.
func (b *Backend) LoadTreePackInto(ctx context.Context, h repo.Handle, offset int64, buf []byte) error {
	p := b.path(h)
	if p == "" || h.Type != repo.PackFile {
		return fmt.Errorf("load a tree pack: %w", errors.ErrUnsupported)
	}
	if b.usable(p, h.Name) {
		if err := readInto(p, offset, buf); err == nil {
			return nil
		}
		b.drop(p)
	}
	data, err := b.whole(ctx, h, p)
	if err != nil {
		return err
	}
	part, err := cut(data, offset, int64(len(buf)), h)
	if err != nil {
		return err
	}
	copy(buf, part)
	return nil
}

// Save saves through the wrapped backend, and keeps a copy of an index
// file (the next command reads it from here) and of a snapshot record
// (read from here while listings show the same bytes: snapshots.go).
func (b *Backend) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if h.Type == repo.SnapshotFile {
		b.takeETag(h.Name) // the listed version is replaced
	}
	if err := b.Backend.Save(ctx, h, data); err != nil {
		return err
	}
	if p := b.path(h); p != "" && h.Type == repo.IndexFile && matches(h.Name, data) {
		b.store(p, data)
	}
	if p := b.snapshotPath(h.Name); p != "" && h.Type == repo.SnapshotFile {
		if _, ok := b.etagLister(); ok {
			b.store(p, data) // used once a listing says the bucket holds these bytes
		}
	}
	return nil
}

// Remove removes through the wrapped backend, and the copy with it.
func (b *Backend) Remove(ctx context.Context, h repo.Handle) error {
	if p := b.path(h); p != "" {
		b.drop(p)
	}
	if p := b.snapshotPath(h.Name); p != "" && h.Type == repo.SnapshotFile {
		b.takeETag(h.Name)
		b.drop(p)
	}
	return b.Backend.Remove(ctx, h)
}

// List lists through the wrapped backend; a listing that ends well removes
// the copies of the objects it did not name.
func (b *Backend) List(ctx context.Context, t repo.FileType, fn func(name string, size int64) error) error {
	dir := b.dir.Load()
	if lister, ok := b.etagLister(); ok && dir != nil && t == repo.SnapshotFile {
		return b.listSnapshots(ctx, lister, fn)
	}
	if dir == nil || !cached(t) {
		return b.Backend.List(ctx, t, fn)
	}
	listed := map[string]bool{}
	began := time.Now()
	err := b.Backend.List(ctx, t, func(name string, size int64) error {
		listed[name] = true
		return fn(name, size)
	})
	if err != nil {
		return err
	}
	b.prune(filepath.Join(*dir, string(t)), listed, began)
	return nil
}

// tempAge is how old a temporary file in the cache must be before a
// listing removes it: younger ones may be another process's copy being
// written.
const tempAge = time.Hour

// prune removes the files of folder that listed does not name, and
// temporary files left by a crash. Only files older than the listing
// (began) go: a copy stored while the listing ran (a backup's new tree
// pack) is of an object the listing may not have seen.
func (b *Backend) prune(folder string, listed map[string]bool, began time.Time) {
	entries, err := os.ReadDir(folder)
	if err != nil {
		return
	}
	for _, e := range entries {
		if listed[e.Name()] || e.Type()&fs.ModeType != 0 {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(began) {
			continue
		}
		if strings.HasPrefix(e.Name(), ".tmp-") && !info.ModTime().Before(began.Add(-tempAge)) {
			continue
		}
		p := filepath.Join(folder, e.Name())
		b.mu.Lock()
		_, busy := b.fetching[p]
		b.mu.Unlock()
		if !busy {
			b.drop(p)
		}
	}
}
