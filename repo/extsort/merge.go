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

// merger merges sorted runs into one sorted stream without duplicates.
type merger struct {
	s     *Sorter
	files []*os.File
	heap  []*cursor // a min-heap by head
	rec   []byte    // the last record handed out
	seen  bool      // rec holds it
	err   error
}

// cursor is a run being read: head is its smallest unread record.
type cursor struct {
	name string
	r    *bufio.Reader
	head []byte
}

// openMerge opens the runs named and reads the first ID of each.
func (s *Sorter) openMerge(names []string) (*merger, error) {
	m := &merger{s: s, rec: make([]byte, s.size)}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			s.closeMerge(m)
			return nil, fmt.Errorf("open run: %w", err)
		}
		s.opened()
		m.files = append(m.files, f)
		s.open = append(s.open, f)
		c := &cursor{name: name, r: bufio.NewReaderSize(f, readBufferSize), head: make([]byte, s.size)}
		ok, err := c.advance()
		if err != nil {
			s.closeMerge(m)
			return nil, err
		}
		if ok {
			m.push(c)
		}
	}
	return m, nil
}

// closeMerge closes the files of m.
func (s *Sorter) closeMerge(m *merger) {
	for _, f := range m.files {
		if i := slices.Index(s.open, f); i >= 0 {
			s.open = slices.Delete(s.open, i, i+1)
			s.closeFile(f) // a read-only file: nothing to lose
		}
	}
	m.files = nil
}

// advance reads the cursor's next ID; false at the end of the run.
func (c *cursor) advance() (bool, error) {
	_, err := io.ReadFull(c.r, c.head)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, io.EOF):
		return false, nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return false, fmt.Errorf("read run %s: truncated", c.name)
	default:
		return false, fmt.Errorf("read run %s: %w", c.name, err)
	}
}

// next moves m.rec to the next distinct record.
func (m *merger) next() bool {
	for m.err == nil && len(m.heap) > 0 {
		c := m.heap[0]
		if m.seen && bytes.Equal(c.head, m.rec) {
			if !m.advance(c) {
				return false
			}
			continue
		}
		copy(m.rec, c.head)
		m.seen = true
		return m.advance(c)
	}
	return false
}

// advance moves the cursor at the top of the heap on and restores the
// heap; false on a failure, kept in m.err.
func (m *merger) advance(c *cursor) bool {
	ok, err := c.advance()
	if err != nil {
		m.err = err
		return false
	}
	if ok {
		m.down(0)
	} else {
		m.pop()
	}
	return true
}

func less(a, b *cursor) bool { return bytes.Compare(a.head[:], b.head[:]) < 0 }

func (m *merger) push(c *cursor) {
	m.heap = append(m.heap, c)
	for i := len(m.heap) - 1; i > 0; {
		parent := (i - 1) / 2
		if !less(m.heap[i], m.heap[parent]) {
			break
		}
		m.heap[i], m.heap[parent] = m.heap[parent], m.heap[i]
		i = parent
	}
}

func (m *merger) pop() {
	last := len(m.heap) - 1
	m.heap[0] = m.heap[last]
	m.heap = m.heap[:last]
	if last > 0 {
		m.down(0)
	}
}

// down restores the heap below i after the head of m.heap[i] grew.
func (m *merger) down(i int) {
	for {
		smallest := i
		for _, child := range []int{2*i + 1, 2*i + 2} {
			if child < len(m.heap) && less(m.heap[child], m.heap[smallest]) {
				smallest = child
			}
		}
		if smallest == i {
			return
		}
		m.heap[i], m.heap[smallest] = m.heap[smallest], m.heap[i]
		i = smallest
	}
}
