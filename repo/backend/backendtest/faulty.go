package backendtest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nightjar-backup/nightjar/repo"
)

// ErrInjected is the error of every failure that Faulty injects.
var ErrInjected = errors.New("backendtest: injected fault")

// Corrupter changes the bytes that a Load of h returned; offset is where in
// the object data starts.
type Corrupter func(h repo.Handle, offset int64, data []byte)

// FlipByte returns a Corrupter that inverts the lowest bit of the byte at
// position at of every loaded object of the type it is installed for, when
// the loaded range covers it.
func FlipByte(at int64) Corrupter {
	return func(_ repo.Handle, offset int64, data []byte) {
		if at >= offset && at < offset+int64(len(data)) {
			data[at-offset] ^= 1
		}
	}
}

// Faulty wraps a Backend and, when told to, fails chosen calls or damages
// what is loaded. With no faults set up it passes everything through. It
// intercepts every capability of the wrapped backend that moves an object's
// bytes or holds a lock (repo.PackStreamer, repo.BufferLoader,
// repo.RangeOpener, repo.ProcessLocker), so that faults apply whichever way the repository
// reads and writes; each fails with errors.ErrUnsupported when the wrapped
// backend lacks it. Safe for concurrent use.
type Faulty struct {
	be repo.Backend

	mu       sync.Mutex
	saves    map[repo.FileType]int
	loads    map[repo.FileType]int
	failSave map[repo.FileType]map[int]bool // call numbers that fail
	failLoad map[repo.FileType]map[int]bool
	lost     map[repo.Handle]bool // objects every load of which fails
	stats    map[repo.FileType]int
	failStat map[repo.FileType]map[int]bool
	corrupt  map[repo.FileType]Corrupter
}

var (
	_ repo.Backend       = (*Faulty)(nil)
	_ repo.ProcessLocker = (*Faulty)(nil)
	_ repo.PackStreamer  = (*Faulty)(nil)
	_ repo.BufferLoader  = (*Faulty)(nil)
	_ repo.RangeOpener   = (*Faulty)(nil)
)

// NewFaulty wraps be.
func NewFaulty(be repo.Backend) *Faulty {
	return &Faulty{
		be:       be,
		saves:    map[repo.FileType]int{},
		loads:    map[repo.FileType]int{},
		failSave: map[repo.FileType]map[int]bool{},
		failLoad: map[repo.FileType]map[int]bool{},
		lost:     map[repo.Handle]bool{},
		stats:    map[repo.FileType]int{},
		failStat: map[repo.FileType]map[int]bool{},
		corrupt:  map[repo.FileType]Corrupter{},
	}
}

// Unwrap returns the wrapped backend.
func (f *Faulty) Unwrap() repo.Backend { return f.be }

// FailSave makes the nth Save of type t from now on (n = 1: the next one)
// fail with ErrInjected without storing anything.
func (f *Faulty) FailSave(t repo.FileType, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSave[t] == nil {
		f.failSave[t] = map[int]bool{}
	}
	f.failSave[t][f.saves[t]+n] = true
}

// FailLoad makes the nth Load of type t from now on (n = 1: the next one)
// fail with ErrInjected.
func (f *Faulty) FailLoad(t repo.FileType, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failLoad[t] == nil {
		f.failLoad[t] = map[int]bool{}
	}
	f.failLoad[t][f.loads[t]+n] = true
}

// FailObject makes every later load of h fail with ErrInjected, as an
// object that the storage holds but cannot read; a load of another object
// is not affected.
func (f *Faulty) FailObject(h repo.Handle) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lost[h] = true
}

// FailStat makes the nth Stat of type t from now on (n = 1: the next one)
// fail with ErrInjected, as a storage that cannot be reached would.
func (f *Faulty) FailStat(t repo.FileType, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failStat[t] == nil {
		f.failStat[t] = map[int]bool{}
	}
	f.failStat[t][f.stats[t]+n] = true
}

// CorruptLoads passes the result of every later Load of type t through c;
// a nil c stops it. The stored objects are not changed.
func (f *Faulty) CorruptLoads(t repo.FileType, c Corrupter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c == nil {
		delete(f.corrupt, t)
		return
	}
	f.corrupt[t] = c
}

// Reset removes every fault set up; the call counts stay.
func (f *Faulty) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failSave = map[repo.FileType]map[int]bool{}
	f.failLoad = map[repo.FileType]map[int]bool{}
	f.lost = map[repo.Handle]bool{}
	f.failStat = map[repo.FileType]map[int]bool{}
	f.corrupt = map[repo.FileType]Corrupter{}
}

// Saves returns the number of Save and SaveHeld calls of type t so far,
// and of pack stream Commits for packs, failed ones included; FailSave
// counts them alike.
func (f *Faulty) Saves(t repo.FileType) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saves[t]
}

// Loads returns the number of Load, LoadInto and OpenRange calls of type t
// so far, failed ones included; FailLoad counts them alike.
func (f *Faulty) Loads(t repo.FileType) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loads[t]
}

// countSave counts a save of type t and reports whether it is set up to
// fail.
func (f *Faulty) countSave(t repo.FileType) (fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.saves[t]++
	return f.failSave[t][f.saves[t]]
}

// countLoad counts a load of h and reports whether it is set up to fail
// and how to damage what it loads.
func (f *Faulty) countLoad(h repo.Handle) (fail bool, corrupt Corrupter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loads[h.Type]++
	return f.failLoad[h.Type][f.loads[h.Type]] || f.lost[h], f.corrupt[h.Type]
}

// Save passes to the wrapped backend unless this call is set up to fail.
func (f *Faulty) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if f.countSave(h.Type) {
		return fmt.Errorf("save %s: %w", h, ErrInjected)
	}
	return f.be.Save(ctx, h, data)
}

// Load passes to the wrapped backend unless this call is set up to fail,
// and damages what it returns when set up to.
func (f *Faulty) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	fail, corrupt := f.countLoad(h)
	if fail {
		return nil, fmt.Errorf("load %s: %w", h, ErrInjected)
	}
	data, err := f.be.Load(ctx, h, offset, length)
	if err == nil && corrupt != nil {
		corrupt(h, offset, data)
	}
	return data, err
}

// LoadInto passes to the wrapped backend's repo.BufferLoader like Load.
func (f *Faulty) LoadInto(ctx context.Context, h repo.Handle, offset int64, buf []byte) error {
	bl, ok := repo.Capability[repo.BufferLoader](f.be)
	if !ok {
		return fmt.Errorf("%s cannot load into a buffer: %w", f.be.Location(), errors.ErrUnsupported)
	}
	fail, corrupt := f.countLoad(h)
	if fail {
		return fmt.Errorf("load %s: %w", h, ErrInjected)
	}
	err := bl.LoadInto(ctx, h, offset, buf)
	if err == nil && corrupt != nil {
		corrupt(h, offset, buf)
	}
	return err
}

// NewPackStream starts a stream of the wrapped backend's repo.PackStreamer
// whose Commit counts, and fails, as a Save of a pack.
func (f *Faulty) NewPackStream(ctx context.Context, kind repo.PackKind) (repo.PackStream, error) {
	ps, ok := repo.Capability[repo.PackStreamer](f.be)
	if !ok {
		return nil, fmt.Errorf("%s cannot stream packs: %w", f.be.Location(), errors.ErrUnsupported)
	}
	s, err := ps.NewPackStream(ctx, kind)
	if err != nil {
		return nil, err
	}
	return &faultyStream{PackStream: s, f: f}, nil
}

type faultyStream struct {
	repo.PackStream
	f *Faulty
}

func (s *faultyStream) Commit(ctx context.Context, name string) error {
	if s.f.countSave(repo.PackFile) {
		s.Abort()
		return fmt.Errorf("save %s: %w", repo.Handle{Type: repo.PackFile, Name: name}, ErrInjected)
	}
	return s.PackStream.Commit(ctx, name)
}

// Stat passes to the wrapped backend unless this call is set up to fail.
func (f *Faulty) Stat(ctx context.Context, h repo.Handle) (int64, error) {
	f.mu.Lock()
	f.stats[h.Type]++
	fail := f.failStat[h.Type][f.stats[h.Type]]
	f.mu.Unlock()
	if fail {
		return 0, fmt.Errorf("stat %s: %w", h, ErrInjected)
	}
	return f.be.Stat(ctx, h)
}

// List passes to the wrapped backend.
func (f *Faulty) List(ctx context.Context, t repo.FileType, fn func(string, int64) error) error {
	return f.be.List(ctx, t, fn)
}

// Remove passes to the wrapped backend.
func (f *Faulty) Remove(ctx context.Context, h repo.Handle) error {
	return f.be.Remove(ctx, h)
}

// Location returns the wrapped backend's location.
func (f *Faulty) Location() string { return f.be.Location() }

// SaveHeld passes to the wrapped backend's repo.ProcessLocker unless this
// call is set up to fail.
func (f *Faulty) SaveHeld(ctx context.Context, h repo.Handle, data []byte) (func() error, error) {
	pl, ok := repo.Capability[repo.ProcessLocker](f.be)
	if !ok {
		return nil, fmt.Errorf("%s cannot hold locks: %w", f.be.Location(), errors.ErrUnsupported)
	}
	if f.countSave(h.Type) {
		return nil, fmt.Errorf("save %s: %w", h, ErrInjected)
	}
	return pl.SaveHeld(ctx, h, data)
}

// Held passes to the wrapped backend's repo.ProcessLocker.
func (f *Faulty) Held(ctx context.Context, h repo.Handle) (bool, error) {
	pl, ok := repo.Capability[repo.ProcessLocker](f.be)
	if !ok {
		return false, fmt.Errorf("%s cannot hold locks: %w", f.be.Location(), errors.ErrUnsupported)
	}
	return pl.Held(ctx, h)
}
