package local

import (
	"io"
	"os"

	"github.com/nightjar-backup/nightjar/directio"
)

// A streamed data pack is gathered in an aligned buffer and written out in
// whole blocks past the page cache (package directio) where the file
// system allows, the partial block at its end through the page cache. A
// backup writes each data pack once and reads it back only for check or
// restore, typically much later: putting it in the page cache cost fresh
// pages on this project's benchmark machine, 0.8 to 2.9 s of system time
// in a first backup of 1.3 GB (docs/PERFORMANCE.md).
//
// packStage is the most one write carries: a multiple of directio.Align,
// large enough that the disk sees few big writes, small enough for one
// per pack being written.
const packStage = 2 << 20

// packWriter writes a new pack file from its start, through a
// directio.Writer.
type packWriter struct {
	out    *directio.Writer
	direct *os.File // the file opened again for direct writes, or nil
	stage  []byte   // out's aligned staging buffer, kept for the next pack
	off    int64    // where the next Write goes
}

// keptStages is how many staging buffers a Backend keeps for reuse: one
// per pack being written (the data and the tree pack being filled, the
// full ones being finished) and some to spare.
const keptStages = 16

// stage returns a staging buffer: a kept one, or a new one.
func (b *Backend) stage() []byte {
	select {
	case buf := <-b.stages:
		return buf
	default:
		return directio.AlignedBuffer(packStage)
	}
}

// close closes the stream's direct descriptor and keeps its staging
// buffer for the next stream.
func (s *packStream) close() {
	s.w.Close()
	if s.w.stage == nil {
		return
	}
	select {
	case s.b.stages <- s.w.stage:
	default:
	}
	s.w.stage = nil
}

// newPackWriter returns a writer of f through the aligned buffer stage,
// direct when direct is set. Tree packs are written through the page
// cache: the next backup reads them.
func newPackWriter(f *os.File, direct bool, stage []byte) *packWriter {
	w := &packWriter{stage: stage}
	var directAt io.WriterAt // nil: through the page cache
	if direct {
		if w.direct = directio.OpenSecond(f.Name(), f); w.direct != nil {
			directAt = w.direct
		}
	}
	w.out = directio.NewWriter(f, directAt, stage, nil)
	return w
}

func (w *packWriter) Write(p []byte) (int, error) {
	if err := w.out.Stage(w.off, p); err != nil {
		return 0, err
	}
	w.off += int64(len(p))
	w.closeRefused()
	return len(p), nil
}

// Flush writes what is staged: its whole blocks directly, the rest
// through the page cache.
func (w *packWriter) Flush() error {
	err := w.out.Flush()
	w.closeRefused()
	return err
}

// closeRefused closes the direct descriptor once the file system has
// refused a direct write: the rest of the pack goes through the page
// cache.
func (w *packWriter) closeRefused() {
	if w.direct != nil && !w.out.Direct() {
		w.Close()
	}
}

// Close closes the direct descriptor; the caller closes f.
func (w *packWriter) Close() {
	if w.direct != nil {
		w.direct.Close()
		w.direct = nil
	}
}
