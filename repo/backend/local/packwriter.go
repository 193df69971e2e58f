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
// large enough that the disk sees few big writes, small enough for two
// per pack being written (a data pack on Linux stages the next while one
// is written). At 1 MiB a write takes the disk about 0.7 ms, and the
// backup fills the next in several: two keep the disk and the writer
// apart, in the memory one 2 MiB buffer took before.
const packStage = 1 << 20

// packWriter writes a new pack file from its start, through a
// directio.Writer.
type packWriter struct {
	file   *os.File
	out    *directio.Writer
	direct *os.File        // the file opened again for direct writes, or nil
	queue  *directio.Queue // direct writes in the background (Linux), or nil
	sized  bool            // a queue was attached: it extends the file ahead of its writes
	stages [][]byte        // out's aligned staging buffers, kept for the next pack
	off    int64           // where the next Write goes
}

// keptStages is how many staging buffers a Backend keeps for reuse: one
// per pack being written (the data and the tree pack being filled, the
// full ones being finished) and some to spare.
const keptStages = 16

// keptQueues is how many direct-write queues a Backend keeps for reuse:
// one per data pack being written, and one to spare. Making one is cheap,
// but releasing one takes the kernel about 17 ms.
const keptQueues = 4

// queue returns a direct-write queue: a kept one, a new one, or nil where
// the system has none.
func (b *Backend) queue() *directio.Queue {
	select {
	case q := <-b.queues:
		return q
	default:
		return directio.NewQueue()
	}
}

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
// buffers and its queue for the next stream.
func (s *packStream) close() {
	if q := s.w.detachQueue(); q != nil {
		select {
		case s.b.queues <- q:
		default:
			q.Close()
		}
	}
	s.w.Close()
	for _, stage := range s.w.stages {
		select {
		case s.b.stages <- stage:
		default:
		}
	}
	s.w.stages = nil
}

// newPackWriter returns a writer of f through aligned buffers from stage,
// direct when direct is set. Tree packs are written through the page
// cache: the next backup reads them. On Linux a data pack's direct writes
// go through a directio.Queue, each 1 MiB written while the next is
// staged, so that the goroutine writing the pack does not keep a core
// while the disk writes (see directio.Queue).
func newPackWriter(f *os.File, direct bool, stage func() []byte, queue func() *directio.Queue) *packWriter {
	w := &packWriter{file: f, stages: [][]byte{stage()}}
	var directAt io.WriterAt // nil: through the page cache
	if direct {
		if w.direct = directio.OpenSecond(f.Name(), f); w.direct != nil {
			directAt = w.direct
		}
	}
	w.out = directio.NewWriter(f, directAt, w.stages[0], nil)
	if w.direct != nil && directio.Suits(w.direct) {
		if w.queue = queue(); w.queue != nil {
			w.queue.Attach(w.direct)
			w.sized = true
			w.stages = append(w.stages, stage())
			w.out.Overlap(w.queue, w.stages[1])
		}
	}
	return w
}

// detachQueue waits for the queue's write in flight and hands the queue
// over, to keep for another pack: nil if the writer has none (or it could
// not be waited for). Either way no write from the stages is in flight
// after it.
func (w *packWriter) detachQueue() *directio.Queue {
	q := w.queue
	if q == nil {
		return nil
	}
	w.queue = nil
	// A write still in flight belongs to a pack thrown away (Commit waits
	// for its own): its outcome does not matter, only that the kernel is
	// done with the buffer. If waiting for it failed, Close waits for it,
	// and the queue is not kept.
	_, _ = q.Wait()
	if q.Busy() {
		q.Close()
		return nil
	}
	return q
}

func (w *packWriter) Write(p []byte) (int, error) {
	if err := w.out.Stage(w.off, p); err != nil {
		return 0, err
	}
	w.off += int64(len(p))
	w.closeRefused()
	return len(p), nil
}

// Flush writes what is staged, its whole blocks directly and the rest
// through the page cache, waits for the write in flight, and gives the
// file its size (the queue extends it ahead of its writes).
func (w *packWriter) Flush() error {
	err := w.out.Flush()
	if err == nil {
		err = w.out.Wait()
	}
	if err == nil && w.sized {
		// Also after a refused direct write closed the queue: it may have
		// extended the file before.
		err = w.file.Truncate(w.off)
	}
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

// Close waits for a direct write in flight and closes the direct
// descriptor; the caller closes the file.
func (w *packWriter) Close() {
	if w.queue != nil {
		w.queue.Close()
		w.queue = nil
	}
	if w.direct != nil {
		w.direct.Close()
		w.direct = nil
	}
}
