package backup

import (
	"bufio"
	"bytes"
	"container/heap"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/nightjar-backup/nightjar/repo"
)

// idSorter collects the IDs a snapshot refers to and yields them sorted and
// without duplicates. It keeps at most sorterRunIDs in memory and spills
// sorted runs to a temporary file, so its memory does not grow with the
// size of the backup.
type idSorter struct {
	runIDs int // IDs kept in memory before a run is spilled
	buf    []repo.ID
	file   *os.File
	runs   []int64 // start offsets of the runs in file
	end    int64
}

const sorterRunIDs = 1 << 18 // 8 MiB of IDs per run

func newIDSorter() *idSorter {
	return &idSorter{runIDs: sorterRunIDs}
}

// Add records one ID. It is called by one goroutine at a time.
func (s *idSorter) Add(id repo.ID) error {
	s.buf = append(s.buf, id)
	if len(s.buf) >= s.runIDs {
		return s.spill()
	}
	return nil
}

func sortUnique(ids []repo.ID) []repo.ID {
	slices.SortFunc(ids, func(a, b repo.ID) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(ids)
}

func (s *idSorter) spill() error {
	if s.file == nil {
		f, err := os.CreateTemp("", "nightjar-inventory-*")
		if err != nil {
			return fmt.Errorf("spill inventory: %w", err)
		}
		os.Remove(f.Name()) // unlinked: the file goes when it is closed
		s.file = f
	}
	ids := sortUnique(s.buf)
	w := bufio.NewWriterSize(io.NewOffsetWriter(s.file, s.end), 1<<20)
	for _, id := range ids {
		if _, err := w.Write(id[:]); err != nil {
			return fmt.Errorf("spill inventory: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("spill inventory: %w", err)
	}
	s.runs = append(s.runs, s.end)
	s.end += int64(len(ids)) * 32
	s.buf = s.buf[:0]
	return nil
}

// Sorted calls fn for every distinct ID in ascending order.
func (s *idSorter) Sorted(fn func(repo.ID) error) error {
	if s.file == nil {
		for _, id := range sortUnique(s.buf) {
			if err := fn(id); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	h := &runHeap{}
	for i, start := range s.runs {
		end := s.end
		if i+1 < len(s.runs) {
			end = s.runs[i+1]
		}
		r := &run{rd: bufio.NewReaderSize(io.NewSectionReader(s.file, start, end-start), 256<<10)}
		if r.next() {
			heap.Push(h, r)
		} else if r.err != nil {
			return r.err
		}
	}
	var last repo.ID
	first := true
	for h.Len() > 0 {
		r := (*h)[0]
		if first || r.cur != last {
			if err := fn(r.cur); err != nil {
				return err
			}
			last, first = r.cur, false
		}
		if r.next() {
			heap.Fix(h, 0)
		} else {
			if r.err != nil {
				return r.err
			}
			heap.Pop(h)
		}
	}
	return nil
}

// Close removes the temporary file.
func (s *idSorter) Close() {
	if s.file != nil {
		s.file.Close()
	}
}

type run struct {
	rd  *bufio.Reader
	cur repo.ID
	err error
}

func (r *run) next() bool {
	_, err := io.ReadFull(r.rd, r.cur[:])
	if err != nil && err != io.EOF {
		r.err = fmt.Errorf("read inventory run: %w", err)
	}
	return err == nil
}

type runHeap []*run

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return bytes.Compare(h[i].cur[:], h[j].cur[:]) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*run)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
