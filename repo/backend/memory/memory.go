package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
)

// Backend is a repository held in memory. It is safe for concurrent use.
type Backend struct {
	mu      sync.Mutex
	objects map[repo.Handle][]byte
	saved   map[repo.Handle]time.Time // when each object was last saved
	held    map[repo.Handle]bool
}

var (
	_ repo.Backend       = (*Backend)(nil)
	_ repo.ProcessLocker = (*Backend)(nil)
	_ repo.ObjectTimer   = (*Backend)(nil)
)

// New returns an empty in-memory backend.
func New() *Backend {
	return &Backend{objects: map[repo.Handle][]byte{}, saved: map[repo.Handle]time.Time{}, held: map[repo.Handle]bool{}}
}

// Location describes the backend for messages.
func (b *Backend) Location() string { return fmt.Sprintf("memory:%p", b) }

// key checks h and returns the map key for it: the config has one name.
func key(h repo.Handle) (repo.Handle, error) {
	switch h.Type {
	case repo.ConfigFile:
		return repo.Handle{Type: repo.ConfigFile, Name: "config"}, nil
	case repo.KeyFile, repo.PackFile, repo.IndexFile, repo.SnapshotFile, repo.LockFile, repo.PinFile, repo.ForgetFile, repo.VerifyFile:
	default:
		return repo.Handle{}, fmt.Errorf("unknown object type %q", h.Type)
	}
	if !repo.ValidObjectName(h.Name) {
		return repo.Handle{}, fmt.Errorf("invalid object name %q", h.Name)
	}
	return h, nil
}

// Save stores a copy of data under h, replacing any object of that name.
func (b *Backend) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	k, err := key(h)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects[k] = append([]byte{}, data...)
	b.saved[k] = time.Now()
	delete(b.held, k)
	return nil
}

// Load returns a copy of length bytes from offset (length < 0: to the end).
func (b *Backend) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := key(h)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.objects[k]
	if !ok {
		return nil, fmt.Errorf("%s: %w", h, repo.ErrNotFound)
	}
	size := int64(len(data))
	if length < 0 {
		length = size - offset
	}
	if offset < 0 || length < 0 || offset > size || length > size-offset {
		return nil, fmt.Errorf("load %s at %d+%d: beyond size %d", h, offset, length, size)
	}
	return append([]byte{}, data[offset:offset+length]...), nil
}

// Stat returns the size of an object.
func (b *Backend) Stat(ctx context.Context, h repo.Handle) (int64, error) {
	k, err := key(h)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.objects[k]
	if !ok {
		return 0, fmt.Errorf("%s: %w", h, repo.ErrNotFound)
	}
	return int64(len(data)), nil
}

// ModTime returns when an object was last saved (repo.ObjectTimer, for
// prune's age of packs), or an error wrapping repo.ErrNotFound.
func (b *Backend) ModTime(ctx context.Context, h repo.Handle) (time.Time, error) {
	k, err := key(h)
	if err != nil {
		return time.Time{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	saved, ok := b.saved[k]
	if !ok {
		return time.Time{}, fmt.Errorf("%s: %w", h, repo.ErrNotFound)
	}
	return saved, nil
}

// List calls fn for each object of type t. fn may call the backend.
func (b *Backend) List(ctx context.Context, t repo.FileType, fn func(name string, size int64) error) error {
	type entry struct {
		name string
		size int64
	}
	var entries []entry
	b.mu.Lock()
	for h, data := range b.objects {
		if h.Type == t {
			entries = append(entries, entry{h.Name, int64(len(data))})
		}
	}
	b.mu.Unlock()
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e.name, e.size); err != nil {
			return err
		}
	}
	return nil
}

// Remove deletes one object.
func (b *Backend) Remove(ctx context.Context, h repo.Handle) error {
	k, err := key(h)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.objects[k]; !ok {
		return fmt.Errorf("%s: %w", h, repo.ErrNotFound)
	}
	delete(b.objects, k)
	delete(b.saved, k)
	delete(b.held, k)
	return nil
}

// SaveHeld stores a lock object that stays held until release is called or
// Abandon simulates the death of its holder. release removes the object.
func (b *Backend) SaveHeld(ctx context.Context, h repo.Handle, data []byte) (func() error, error) {
	if err := b.Save(ctx, h, data); err != nil {
		return nil, err
	}
	k, _ := key(h)
	b.mu.Lock()
	b.held[k] = true
	b.mu.Unlock()
	var once sync.Once
	release := func() error {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.held[k] {
				delete(b.objects, k)
				delete(b.saved, k)
				delete(b.held, k)
			}
		})
		return nil
	}
	return release, nil
}

// Held reports whether the lock object h is still held.
func (b *Backend) Held(ctx context.Context, h repo.Handle) (bool, error) {
	k, err := key(h)
	if err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.objects[k]; !ok {
		return false, fmt.Errorf("%s: %w", h, repo.ErrNotFound)
	}
	return b.held[k], nil
}

// Abandon simulates the death of the process holding lock object h: the
// object stays, but is no longer held, as a local lock file whose owner was
// killed.
func (b *Backend) Abandon(h repo.Handle) {
	k, err := key(h)
	if err != nil {
		return
	}
	b.mu.Lock()
	delete(b.held, k)
	b.mu.Unlock()
}
