package extsort

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// ID is what is sorted: 32 bytes, ordered as byte strings.
type ID = [32]byte

// DefaultMemoryBudget is the memory budget of a Sorter whose options name
// none: 4 MiB, 131,072 IDs per run.
const DefaultMemoryBudget = 4 << 20

// MaxOpen is the most files a Sorter keeps open at once.
const MaxOpen = 64

// The sizes of the buffered reader of a run in a merge and of the writer
// of a run: MaxOpen readers take 4 MiB.
const (
	readBufferSize  = 64 << 10
	writeBufferSize = 256 << 10
)

// Options choose where runs go and how much memory a Sorter uses.
type Options struct {
	// Dir is the folder of the temporary run files; "" is os.TempDir().
	Dir string
	// MemoryBudget is the bytes of IDs held in memory before they are
	// spilled as a run; 0 is DefaultMemoryBudget, and it is at least one ID.
	MemoryBudget int
	// MaxOpen bounds the files open at once (at least 3); 0 or more than
	// MaxOpen is MaxOpen. A final merge reads up to MaxOpen runs; an
	// intermediate merge reads MaxOpen-1 runs into one more file.
	MaxOpen int
}

// ErrSorted is returned by Add after Sorted was called.
var ErrSorted = errors.New("add to a sorter after Sorted")

// Sorter collects IDs with Add and returns them sorted by Sorted. Close
// removes its files. Not safe for concurrent use.
type Sorter struct {
	dir     string
	perRun  int
	maxOpen int

	buf   []ID
	runs  []string        // runs not yet merged, oldest first
	files map[string]bool // every file on disk, removed by Close
	open  []*os.File      // the files of the final merge, closed by Close
	done  bool

	stats stats
	// wrap, when set, wraps the writer of every run file (tests: a full
	// disk).
	wrap func(io.Writer) io.Writer
}

// stats say what a Sorter did, for its tests.
type stats struct {
	runs     int // runs spilled from memory
	merges   int // intermediate merges
	openNow  int
	openPeak int // the most files open at once
}

// New returns an empty Sorter.
func New(opts Options) *Sorter {
	budget := opts.MemoryBudget
	if budget == 0 {
		budget = DefaultMemoryBudget
	}
	maxOpen := opts.MaxOpen
	if maxOpen == 0 || maxOpen > MaxOpen {
		maxOpen = MaxOpen
	}
	dir := opts.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	return &Sorter{
		dir:     dir,
		perRun:  max(budget/len(ID{}), 1),
		maxOpen: max(maxOpen, 3),
		files:   map[string]bool{},
	}
}

// Add adds id; when the memory budget is full it sorts the IDs held and
// spills them to a run file.
func (s *Sorter) Add(id ID) error {
	if s.done {
		return ErrSorted
	}
	if s.buf == nil {
		s.buf = make([]ID, 0, s.perRun)
	}
	s.buf = append(s.buf, id)
	if len(s.buf) < s.perRun {
		return nil
	}
	return s.spill()
}

// spill writes the IDs held, sorted and without duplicates, to a new run.
func (s *Sorter) spill() error {
	sortUnique(&s.buf)
	name, err := s.writeRun(func(emit func(ID) error) error {
		for _, id := range s.buf {
			if err := emit(id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spill sorted run: %w", err)
	}
	s.buf = s.buf[:0]
	s.runs = append(s.runs, name)
	s.stats.runs++
	return nil
}

// sortUnique sorts ids and removes duplicates.
func sortUnique(ids *[]ID) {
	slices.SortFunc(*ids, func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
	*ids = slices.Compact(*ids)
}

// writeRun creates a run file and fills it with what produce emits; on
// failure the file is removed.
func (s *Sorter) writeRun(produce func(emit func(ID) error) error) (string, error) {
	f, err := os.CreateTemp(s.dir, "nightjar-sort-*.run")
	if err != nil {
		return "", fmt.Errorf("create run file: %w", err)
	}
	s.opened()
	name := f.Name()
	s.files[name] = true
	var w io.Writer = f
	if s.wrap != nil {
		w = s.wrap(w)
	}
	bw := bufio.NewWriterSize(w, writeBufferSize)
	err = produce(func(id ID) error {
		_, err := bw.Write(id[:])
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := s.closeFile(f); err == nil {
		err = cerr
	}
	if err != nil {
		s.remove(name)
		return "", fmt.Errorf("write run %s: %w", name, err)
	}
	return name, nil
}

func (s *Sorter) opened() {
	s.stats.openNow++
	s.stats.openPeak = max(s.stats.openPeak, s.stats.openNow)
}

func (s *Sorter) closeFile(f *os.File) error {
	s.stats.openNow--
	return f.Close()
}

// remove deletes a file of the sorter; one already gone is no error.
func (s *Sorter) remove(name string) error {
	delete(s.files, name)
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove run file: %w", err)
	}
	return nil
}

// Sorted returns the distinct IDs added, in order. After it, Add fails.
// The iterator is valid until Close.
func (s *Sorter) Sorted() (*Iterator, error) {
	if s.done {
		return nil, ErrSorted
	}
	s.done = true
	if len(s.runs) == 0 {
		sortUnique(&s.buf)
		return &Iterator{ids: s.buf}, nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	s.buf = nil
	for len(s.runs) > s.maxOpen {
		group := s.runs[:s.maxOpen-1]
		name, err := s.writeRun(func(emit func(ID) error) error {
			m, err := s.openMerge(group)
			if err != nil {
				return err
			}
			defer s.closeMerge(m)
			for m.next() {
				if err := emit(m.id); err != nil {
					return err
				}
			}
			return m.err
		})
		if err != nil {
			return nil, fmt.Errorf("merge sorted runs: %w", err)
		}
		for _, done := range group {
			if err := s.remove(done); err != nil {
				return nil, err
			}
		}
		s.runs = append(s.runs[len(group):], name)
		s.stats.merges++
	}
	m, err := s.openMerge(s.runs)
	if err != nil {
		return nil, fmt.Errorf("merge sorted runs: %w", err)
	}
	return &Iterator{merge: m}, nil
}

// Close closes the files of the merge and removes every file the Sorter
// made. It may be called more than once, and after any failure.
func (s *Sorter) Close() error {
	s.done = true
	s.buf = nil
	var errs []error
	for _, f := range s.open {
		if err := s.closeFile(f); err != nil {
			errs = append(errs, err)
		}
	}
	s.open = nil
	for name := range s.files {
		if err := s.remove(name); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sorter: %w", err)
	}
	return nil
}

// Iterator walks sorted, distinct IDs:
//
//	for it.Next() { use(it.ID()) }
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	ids   []ID // when everything fit in memory
	pos   int
	merge *merger
	id    ID
	err   error
}

// Next moves to the next ID and reports whether there is one.
func (it *Iterator) Next() bool {
	if it.merge != nil {
		if !it.merge.next() {
			it.err = it.merge.err
			return false
		}
		it.id = it.merge.id
		return true
	}
	if it.pos >= len(it.ids) {
		return false
	}
	it.id = it.ids[it.pos]
	it.pos++
	return true
}

// ID returns the current ID.
func (it *Iterator) ID() ID { return it.id }

// Err returns the error that ended the iteration, if any.
func (it *Iterator) Err() error { return it.err }
