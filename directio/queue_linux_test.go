package directio

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// openDirect creates a file in a temporary folder and opens it again for
// direct writes; it skips the test where the file system refuses them.
func openDirect(t *testing.T) (name string, f, direct *os.File) {
	t.Helper()
	name = filepath.Join(t.TempDir(), "file")
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	direct = OpenSecond(name, f)
	if direct == nil {
		t.Skipf("the file system under %s refuses O_DIRECT", name)
	}
	t.Cleanup(func() { direct.Close() })
	return name, f, direct
}

// attachedQueue returns a queue attached to direct (a file of 0 bytes),
// closed when the test ends.
func attachedQueue(t *testing.T, direct *os.File) *Queue {
	t.Helper()
	q := NewQueue()
	if q == nil {
		t.Fatal("no asynchronous I/O on this Linux system")
	}
	t.Cleanup(q.Close)
	q.Attach(direct)
	return q
}

// TestOverlappedWriter writes a file from offset 0 in pieces of random
// sizes through a Writer whose direct writes go through a Queue, flushing
// now and then mid-block, and checks every byte and that no write fell
// back to the page cache. The queue extends the file ahead of its writes;
// the owner's truncate gives it its size back.
func TestOverlappedWriter(t *testing.T) {
	name, f, direct := openDirect(t)
	q := attachedQueue(t, direct)
	const stageSize = 256 << 10
	w := NewWriter(f, direct, AlignedBuffer(stageSize), nil)
	w.Overlap(q, AlignedBuffer(stageSize))
	rng := rand.New(rand.NewPCG(3, 4))
	const size = 5<<20 + 333
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(rng.Uint32())
	}
	for off := 0; off < size; {
		n := min(size-off, 1+rng.IntN(100<<10))
		if err := w.Stage(int64(off), want[off:off+n]); err != nil {
			t.Fatal(err)
		}
		off += n
		if rng.IntN(8) == 0 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	if !w.Direct() {
		t.Fatal("a direct write was refused: the writer fell back to the page cache")
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() <= size || fi.Size() != q.size {
		t.Fatalf("the file has %d bytes, the queue says %d: want it extended past the %d written", fi.Size(), q.size, size)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != size {
		t.Fatalf("file has %d bytes, want %d", len(got), size)
	}
	if i := firstDifference(got, want); i >= 0 {
		t.Fatalf("file differs from the data written from byte %d on", i)
	}
}

// TestOverlappedWriterRefused: a stage at an address the file system does
// not take direct writes from (one byte off alignment) makes the queued
// write fail; the writer writes those bytes and the rest through the page
// cache, and the file is whole.
func TestOverlappedWriterRefused(t *testing.T) {
	name, f, direct := openDirect(t)
	q := attachedQueue(t, direct)
	const stageSize = 64 << 10
	misaligned := func() []byte { return AlignedBuffer(stageSize + Align)[1 : stageSize+1] }
	w := NewWriter(f, direct, misaligned(), nil)
	w.Overlap(q, misaligned())
	want := make([]byte, 3*stageSize+100)
	for i := range want {
		want[i] = byte(i*7 + 1)
	}
	if err := w.Stage(0, want); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(); err != nil {
		t.Fatal(err)
	}
	if w.Direct() {
		t.Fatal("the writer still writes directly from a misaligned buffer: the refusal was not seen")
	}
	if err := f.Truncate(int64(len(want))); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if i := firstDifference(got, want); i >= 0 || len(got) != len(want) {
		t.Fatalf("file (%d bytes) differs from the %d written from byte %d on", len(got), len(want), i)
	}
}
