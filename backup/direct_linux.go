package backup

import (
	"os"

	"github.com/nightjar-backup/nightjar/directio"
)

// Big files are restored with direct I/O (O_DIRECT): their data goes from
// the worker's buffer to the disk without passing through the page cache.
// A restore then does not fill the page cache with data that nobody reads
// soon, pushing out what the machine's other work needs, and it does not
// pay for putting every page there: in a profile of a restore of the
// benchmark set, copying into fresh page-cache pages was 26% of all CPU
// time (docs/PERFORMANCE.md). Small files, most of a source tree, keep
// buffered writes: a synchronous trip to the disk for each would cost more
// than the page cache does.
//
// Direct I/O needs the file offset, the length and the buffer's address
// aligned (package directio). A part's chunks are gathered into an
// aligned staging buffer; the whole aligned blocks of each run go out
// directly, and the partial blocks at its ends (parts start and end at
// content-defined offsets) through the file's ordinary descriptor, so that
// no block is written both ways.

// directMinSize is the smallest file restored with direct I/O.
const directMinSize = 16 << 20

// stagingSize is how much one direct write carries at most.
const stagingSize = 4 << 20

// stagingBuffer is a file worker's aligned buffer for direct writes,
// allocated when the worker first meets a big file.
type stagingBuffer struct{ buf []byte }

func (s *stagingBuffer) get() []byte {
	if s.buf == nil {
		s.buf = directio.AlignedBuffer(stagingSize)
	}
	return s.buf
}

// directWriter writes one part of a file: runs of chunks at increasing
// offsets, with holes (chunks of zeros, never written) between runs.
type directWriter struct {
	f      *pendingFile
	direct *os.File // f.direct, or nil after the file system refused a direct write
	stage  []byte   // stage[0] is the file's byte at offset base
	base   int64    // aligned
	start  int64    // the staged run is [start, end)
	end    int64
}

func newDirectWriter(f *pendingFile, stage *stagingBuffer) *directWriter {
	return &directWriter{f: f, direct: f.direct, stage: stage.get()}
}

// add stages data, which belongs at offset off.
func (w *directWriter) add(off int64, data []byte) error {
	for len(data) > 0 {
		if w.start == w.end || off != w.end || w.end-w.base == int64(len(w.stage)) {
			if err := w.flush(); err != nil {
				return err
			}
			w.base = off &^ (directio.Align - 1)
			w.start, w.end = off, off
		}
		n := copy(w.stage[w.end-w.base:], data)
		w.end += int64(n)
		off += int64(n)
		data = data[n:]
	}
	return nil
}

// flush writes the staged run: its whole blocks directly, the partial
// blocks at its ends through the page cache.
func (w *directWriter) flush() error {
	s, e := w.start, w.end
	w.start = w.end
	if s == e {
		return nil
	}
	w.f.writing.Lock()
	defer w.f.writing.Unlock()
	first := (s + directio.Align - 1) &^ (directio.Align - 1)
	last := e &^ (directio.Align - 1)
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

func (w *directWriter) writeBuffered(from, to int64) error {
	if from == to {
		return nil
	}
	_, err := w.f.out.WriteAt(w.stage[from-w.base:to-w.base], from)
	return err
}

func (w *directWriter) writeDirect(from, to int64) error {
	refused, err := directio.WriteAt(w.f.out, w.direct, w.stage[from-w.base:to-w.base], from)
	if refused {
		w.direct = nil // the rest of this part goes through the page cache
	}
	return err
}
