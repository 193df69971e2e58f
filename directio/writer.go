package directio

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
)

// Writer writes runs of bytes into a file, each at increasing offsets,
// through an aligned staging buffer: the whole aligned blocks of a run go
// out through the direct descriptor, the partial blocks at its ends
// through the ordinary one, so that no block is written both ways. Both
// restore's big files (runs of chunks with holes between them) and the
// local backend's packs (one run from offset 0) are written with it.
type Writer struct {
	file   io.WriterAt // partial blocks, and everything without direct
	direct io.WriterAt // nil: the file system refused direct writes, or none were asked for
	lock   sync.Locker // held around each write-out, or nil
	stage  []byte      // stage[0] is the file's byte at offset base
	base   int64       // aligned
	start  int64       // the staged run is [start, end)
	end    int64

	// With a queue (Overlap), a run's whole blocks are written from the
	// stage they were staged in while the next run is staged in spare.
	queue     *Queue
	spare     []byte // the other stage: free, or being written (flying)
	flying    []byte // the blocks being written, nil when none
	flyingOff int64
}

// NewWriter returns a Writer of file through stage, an aligned buffer
// (AlignedBuffer) whose length is a multiple of Align. direct is file
// opened again for direct writes (OpenSecond), or nil to write through
// the page cache only. lock, if not nil, is held around each write.
func NewWriter(file, direct io.WriterAt, stage []byte, lock sync.Locker) *Writer {
	return &Writer{file: file, direct: direct, stage: stage, lock: lock}
}

// Overlap makes the whole blocks' writes asynchronous through q (from
// NewQueue on the direct descriptor): each goes out while the writer
// stages the next run in spare, a buffer like the stage, so at most one
// write is in flight. Wait waits for it; the caller must call Wait before
// it syncs the file, and before it reuses or drops either buffer.
func (w *Writer) Overlap(q *Queue, spare []byte) {
	w.queue, w.spare = q, spare
}

// Direct reports whether the writer still writes whole blocks directly:
// false when it was given no direct descriptor or the file system refused
// a direct write.
func (w *Writer) Direct() bool { return w.direct != nil }

// Stage adds data, which belongs at offset off. Data that does not
// continue the staged run, or a full buffer, writes the staged run out
// first.
func (w *Writer) Stage(off int64, data []byte) error {
	for len(data) > 0 {
		if w.start == w.end || off != w.end || w.end-w.base == int64(len(w.stage)) {
			if err := w.Flush(); err != nil {
				return err
			}
			w.base = off &^ (Align - 1)
			w.start, w.end = off, off
		}
		n := copy(w.stage[w.end-w.base:], data)
		w.end += int64(n)
		off += int64(n)
		data = data[n:]
	}
	return nil
}

// Flush writes the staged run out: its whole blocks directly, the partial
// blocks at its ends through the page cache.
func (w *Writer) Flush() error {
	s, e := w.start, w.end
	w.start = w.end
	if s == e {
		return nil
	}
	if w.lock != nil {
		w.lock.Lock()
		defer w.lock.Unlock()
	}
	first := (s + Align - 1) &^ (Align - 1)
	last := e &^ (Align - 1)
	if first >= last {
		return w.writeBuffered(s, e)
	}
	if err := w.writeBuffered(s, first); err != nil {
		return err
	}
	queued, err := w.writeDirect(first, last)
	if err != nil {
		return err
	}
	err = w.writeBuffered(last, e)
	if queued {
		// Whatever the tail's outcome: the stage is in flight.
		w.stage, w.spare = w.spare, w.stage
	}
	return err
}

// Wait waits for the write that Flush left in flight, if any: after it,
// every byte staged so far is written.
func (w *Writer) Wait() error {
	if w.flying == nil {
		return nil
	}
	data, off := w.flying, w.flyingOff
	w.flying = nil
	n, err := w.queue.Wait()
	if errors.Is(err, syscall.EINVAL) {
		// Refused on completion: the file system wants another alignment.
		w.direct, w.queue = nil, nil
		_, err = w.file.WriteAt(data, off)
		return err
	}
	if err == nil && n != len(data) {
		err = fmt.Errorf("direct write at %d: wrote %d of %d bytes", off, n, len(data))
	}
	return err
}

func (w *Writer) writeBuffered(from, to int64) error {
	if from == to {
		return nil
	}
	_, err := w.file.WriteAt(w.stage[from-w.base:to-w.base], from)
	return err
}

// writeDirect writes the whole blocks [from, to) of the stage, and
// reports whether the write was queued (the stage is then in flight).
func (w *Writer) writeDirect(from, to int64) (queued bool, err error) {
	data := w.stage[from-w.base : to-w.base]
	if w.queue != nil && w.direct != nil {
		if err := w.Wait(); err != nil { // frees spare for the next run
			return false, err
		}
		if w.queue != nil && w.queue.Submit(data, from) == nil {
			w.flying, w.flyingOff = data, from
			return true, nil
		}
		// No asynchronous write (the kernel refused it): write as before.
		w.queue = nil
	}
	refused, err := writeAt(w.file, w.direct, data, from)
	if refused {
		w.direct = nil // the rest goes through the page cache
	}
	return false, err
}
