package local

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/directio"
	"github.com/nightjar-backup/nightjar/repo"
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
		kept = w.detachQueue() // nil if a refusal closed it
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

// TestPackStreamAbortKeepsQueue: a data pack aborted with a direct write
// possibly in flight gives its queue and stages back for the next pack,
// which is written whole and at its size; the temporary file is gone.
func TestPackStreamAbortKeepsQueue(t *testing.T) {
	ctx := context.Background()
	be, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 5*packStage+4321)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	aborted, err := be.NewPackStream(ctx, repo.DataPack)
	if err != nil {
		t.Fatal(err)
	}
	tmp := aborted.(*packStream).f.Name()
	queued := aborted.(*packStream).w.queue != nil
	if _, err := aborted.Write(data[:3*packStage+5]); err != nil {
		t.Fatal(err)
	}
	aborted.Abort()
	if _, err := os.Stat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the aborted pack's temporary file: %v, want it removed", err)
	}
	if queued && len(be.queues) != 1 {
		t.Fatalf("%d queues kept after the abort, want 1", len(be.queues))
	}
	s, err := be.NewPackStream(ctx, repo.DataPack)
	if err != nil {
		t.Fatal(err)
	}
	if queued && len(be.queues) != 0 {
		t.Fatal("the next pack did not take the kept queue")
	}
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(200<<10))
		if _, err := s.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	name := strings.Repeat("cd", 32)
	if err := s.Commit(ctx, name); err != nil {
		t.Fatal(err)
	}
	got, err := be.Load(ctx, repo.Handle{Type: repo.PackFile, Name: name}, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("the pack (%d bytes) differs from the %d written", len(got), len(data))
	}
}
