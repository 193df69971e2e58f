package local

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nightjar-backup/nightjar/directio"
)

// TestPackWriter writes packs of sizes around the block and stage sizes in
// pieces of random sizes, and checks every byte of the file and its size.
// Where the file system takes direct writes, the writer must not have
// fallen back to the page cache, and on Linux they go through one queue
// kept from pack to pack.
func TestPackWriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	sizes := []int{0, 1, directio.Align - 1, directio.Align, directio.Align + 1, packStage - 1, packStage, packStage + 1,
		3*packStage + 12345, 16<<20 + 777}
	// One queue goes from pack to pack, as a Backend keeps them.
	var kept *directio.Queue
	queue := func() *directio.Queue {
		if kept != nil {
			return kept
		}
		return directio.NewQueue()
	}
	defer func() {
		if kept != nil {
			kept.Close()
		}
	}()
	for i, size := range sizes {
		want := make([]byte, size)
		for j := range want {
			want[j] = byte(rng.Uint32())
		}
		name := filepath.Join(dir, "pack")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		w := newPackWriter(f, i%2 == 0 || size > packStage, func() []byte { return directio.AlignedBuffer(packStage) }, queue)
		direct := w.direct != nil
		if i == 0 {
			t.Logf("direct writes: %v", direct)
		}
		if direct && runtime.GOOS == "linux" && w.queue == nil {
			t.Fatalf("size %d: direct writes without a queue: they would hold the writer's core while the disk writes", size)
		}
		for rest := want; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(300<<10))
			if got, err := w.Write(rest[:n]); err != nil || got != n {
				t.Fatalf("size %d: write of %d gives %d, %v", size, n, got, err)
			}
			rest = rest[n:]
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if direct && w.direct == nil {
			t.Errorf("size %d: fell back to the page cache", size)
		}
		if q := w.detachQueue(); q != nil {
			kept = q
		}
		w.Close()
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("size %d: the file (%d bytes) differs from what was written", size, len(got))
		}
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
}
