package local

import (
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
// per packer (one per core).
const packStage = 2 << 20

// packWriter writes a new pack file from its start.
type packWriter struct {
	f      *os.File // the temporary file: partial blocks, fallback and sync
	direct *os.File // f opened again for direct writes, or nil
	stage  []byte   // bytes not yet written; stage[0] is at offset off
	off    int64
}

// keptStages is how many staging buffers a Backend keeps for reuse: one
// per pack being written, which is one per core and a few more.
const keptStages = 16

// stage returns a staging buffer: a kept one, or a new one.
func (b *Backend) stage() []byte {
	select {
	case buf := <-b.stages:
		return buf[:0]
	default:
		return directio.AlignedBuffer(packStage)[:0]
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

// newPackWriter returns a writer of f into the empty aligned buffer stage,
// direct when direct is set. Tree packs are written through the page
// cache: the next backup reads them.
func newPackWriter(f *os.File, direct bool, stage []byte) *packWriter {
	w := &packWriter{f: f, stage: stage}
	if direct {
		w.direct = directio.OpenSecond(f.Name(), f)
	}
	return w
}

func (w *packWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := copy(w.stage[len(w.stage):cap(w.stage)], p)
		w.stage = w.stage[:len(w.stage)+k]
		p = p[k:]
		if len(w.stage) == cap(w.stage) {
			if err := w.writeOut(len(w.stage)); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// Flush writes what is staged: its whole blocks directly, the rest
// through the page cache.
func (w *packWriter) Flush() error {
	if err := w.writeOut(len(w.stage) &^ (directio.Align - 1)); err != nil {
		return err
	}
	return w.writeOut(len(w.stage))
}

// writeOut writes the first n staged bytes: directly when n is a whole
// number of blocks and direct writes work, else through the page cache.
func (w *packWriter) writeOut(n int) error {
	if n == 0 {
		return nil
	}
	data := w.stage[:n]
	var err error
	if n%directio.Align == 0 {
		var refused bool
		if refused, err = directio.WriteAt(w.f, w.direct, data, w.off); refused {
			w.Close() // the rest of the pack goes through the page cache
		}
	} else {
		_, err = w.f.WriteAt(data, w.off)
	}
	if err != nil {
		return err
	}
	w.off += int64(n)
	w.stage = w.stage[:copy(w.stage, w.stage[n:])]
	return nil
}

// Close closes the direct descriptor; the caller closes f.
func (w *packWriter) Close() {
	if w.direct != nil {
		w.direct.Close()
		w.direct = nil
	}
}
