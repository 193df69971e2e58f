package directio

import (
	"io"
	"sync"
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
}

// NewWriter returns a Writer of file through stage, an aligned buffer
// (AlignedBuffer) whose length is a multiple of Align. direct is file
// opened again for direct writes (OpenSecond), or nil to write through
// the page cache only. lock, if not nil, is held around each write.
func NewWriter(file, direct io.WriterAt, stage []byte, lock sync.Locker) *Writer {
	return &Writer{file: file, direct: direct, stage: stage, lock: lock}
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
	if err := w.writeDirect(first, last); err != nil {
		return err
	}
	return w.writeBuffered(last, e)
}

func (w *Writer) writeBuffered(from, to int64) error {
	if from == to {
		return nil
	}
	_, err := w.file.WriteAt(w.stage[from-w.base:to-w.base], from)
	return err
}

func (w *Writer) writeDirect(from, to int64) error {
	refused, err := writeAt(w.file, w.direct, w.stage[from-w.base:to-w.base], from)
	if refused {
		w.direct = nil // the rest goes through the page cache
	}
	return err
}
