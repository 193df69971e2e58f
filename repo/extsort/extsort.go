package extsort

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// ID is what a Sorter sorts by default: 32 bytes, ordered as byte strings.
type ID = [32]byte

// IDSize is the size of an ID, the default record size.
const IDSize = len(ID{})

// DefaultMemoryBudget is the memory budget of a Sorter whose options name
// none: 4 MiB, 131,072 IDs (or fewer, larger records) per run.
const DefaultMemoryBudget = 4 << 20

// MaxOpen is the most run files a Sorter keeps open at once; a Sorter
// that spilled also holds its lock file open.
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
	// MemoryBudget is the bytes of records held in memory before they
	// are spilled as a run; 0 is DefaultMemoryBudget, and it is at least
	// one record.
	MemoryBudget int
	// RecordSize is the size of every record; 0 is IDSize. Records are
	// ordered as byte strings: what a record starts with sorts first.
	RecordSize int
	// MaxOpen bounds the files open at once (at least 3); 0 or more than
	// MaxOpen is MaxOpen. A final merge reads up to MaxOpen runs; an
	// intermediate merge reads MaxOpen-1 runs into one more file.
	MaxOpen int
}

// ErrSorted is returned by Add after Sorted was called.
var ErrSorted = errors.New("add to a sorter after Sorted")

// Sorter collects records (IDs by default) with Add or AddRecord and
// returns them sorted, without duplicates, by Sorted. Close removes its
// files. Not safe for concurrent use.
type Sorter struct {
	dir     string
	size    int // of a record
	perRun  int
	maxOpen int

	buf   records
	runs  []string        // runs not yet merged, oldest first
	files map[string]bool // every file on disk, removed by Close
	open  []*os.File      // the files of the final merge, closed by Close
	lock  *os.File        // held while run files exist (see sweep.go); nil before the first
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
	size := opts.RecordSize
	if size <= 0 {
		size = IDSize
	}
	return &Sorter{
		dir:     dir,
		size:    size,
		buf:     records{size: size},
		perRun:  max(budget/size, 1),
		maxOpen: max(maxOpen, 3),
		files:   map[string]bool{},
	}
}

// Add adds id to a Sorter of IDs (RecordSize IDSize).
func (s *Sorter) Add(id ID) error { return s.AddRecord(id[:]) }

// AddRecord adds a copy of rec, which must be RecordSize bytes; when the
// memory budget is full it sorts the records held and spills them to a run
// file.
func (s *Sorter) AddRecord(rec []byte) error {
	if s.done {
		return ErrSorted
	}
	if len(rec) != s.size {
		return fmt.Errorf("add a record of %d bytes to a sorter of %d-byte records", len(rec), s.size)
	}
	if s.buf.data == nil {
		s.buf.data = make([]byte, 0, s.perRun*s.size)
	}
	s.buf.data = append(s.buf.data, rec...)
	if s.buf.Len() < s.perRun {
		return nil
	}
	return s.spill()
}

// spill writes the records held, sorted and without duplicates, to a new
// run.
func (s *Sorter) spill() error {
	s.buf.sortUnique()
	name, err := s.writeRun(func(emit func([]byte) error) error {
		for i := range s.buf.Len() {
			if err := emit(s.buf.at(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("spill sorted run: %w", err)
	}
	s.buf.data = s.buf.data[:0]
	s.runs = append(s.runs, name)
	s.stats.runs++
	return nil
}

// records are fixed-size records one after another in memory.
type records struct {
	size int
	data []byte
	tmp  []byte // Swap's scratch
}

func (r *records) Len() int           { return len(r.data) / r.size }
func (r *records) at(i int) []byte    { return r.data[i*r.size : (i+1)*r.size] }
func (r *records) Less(i, j int) bool { return bytes.Compare(r.at(i), r.at(j)) < 0 }
func (r *records) Swap(i, j int) {
	if r.tmp == nil {
		r.tmp = make([]byte, r.size)
	}
	a, b := r.at(i), r.at(j)
	copy(r.tmp, a)
	copy(a, b)
	copy(b, r.tmp)
}

// sortUnique sorts the records and removes duplicates.
func (r *records) sortUnique() {
	sort.Sort(r)
	n := 0
	for i := range r.Len() {
		if n > 0 && bytes.Equal(r.at(i), r.at(n-1)) {
			continue
		}
		if n != i {
			copy(r.at(n), r.at(i))
		}
		n++
	}
	r.data = r.data[:n*r.size]
}

// writeRun creates a run file and fills it with what produce emits; on
// failure the file is removed.
func (s *Sorter) writeRun(produce func(emit func([]byte) error) error) (string, error) {
	if s.lock == nil {
		lock, err := createLock(s.dir)
		if err != nil {
			return "", fmt.Errorf("create lock of run files: %w", err)
		}
		s.lock = lock
		setLive(lockToken(lock), true)
	}
	f, err := os.CreateTemp(s.dir, runPattern(s.lock))
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
	err = produce(func(rec []byte) error {
		_, err := bw.Write(rec)
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

// Sorted returns the distinct records added, in order. After it, Add
// fails. The iterator is valid until Close.
func (s *Sorter) Sorted() (*Iterator, error) {
	if s.done {
		return nil, ErrSorted
	}
	s.done = true
	if len(s.runs) == 0 {
		s.buf.sortUnique()
		return &Iterator{mem: s.buf, size: s.size}, nil
	}
	if s.buf.Len() > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	s.buf.data = nil
	for len(s.runs) > s.maxOpen {
		group := s.runs[:s.maxOpen-1]
		name, err := s.writeRun(func(emit func([]byte) error) error {
			m, err := s.openMerge(group)
			if err != nil {
				return err
			}
			defer s.closeMerge(m)
			for m.next() {
				if err := emit(m.rec); err != nil {
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
	return &Iterator{merge: m, size: s.size}, nil
}

// Close closes the files of the merge and removes every file the Sorter
// made. It may be called more than once, and after any failure.
func (s *Sorter) Close() error {
	s.done = true
	s.buf.data = nil
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
	if s.lock != nil {
		// After the runs: a run left by a failed removal has no lock
		// file any more, and the next Sweep removes it.
		if err := releaseLock(s.lock); err != nil {
			errs = append(errs, err)
		}
		setLive(lockToken(s.lock), false)
		s.lock = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sorter: %w", err)
	}
	return nil
}

// Iterator walks sorted, distinct records:
//
//	for it.Next() { use(it.ID()) }
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	mem   records // when everything fit in memory
	pos   int
	merge *merger
	size  int
	rec   []byte
	err   error
}

// Next moves to the next record and reports whether there is one.
func (it *Iterator) Next() bool {
	if it.merge != nil {
		if !it.merge.next() {
			it.err = it.merge.err
			return false
		}
		it.rec = it.merge.rec
		return true
	}
	if it.pos >= it.mem.Len() {
		return false
	}
	it.rec = it.mem.at(it.pos)
	it.pos++
	return true
}

// ID returns the first IDSize bytes of the current record: the current ID
// of a Sorter of IDs.
func (it *Iterator) ID() ID { return ID(it.rec[:IDSize]) }

// Record returns the current record, valid until the next call of Next.
func (it *Iterator) Record() []byte { return it.rec }

// Err returns the error that ended the iteration, if any.
func (it *Iterator) Err() error { return it.err }
