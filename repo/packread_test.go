package repo_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// countedPackReads counts the reads of packs that reach the backend it wraps.
type countedPackReads struct {
	repo.Backend
	mu sync.Mutex
	n  int
}

func (p *countedPackReads) Unwrap() repo.Backend { return p.Backend }

func (p *countedPackReads) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile {
		p.mu.Lock()
		p.n++
		p.mu.Unlock()
	}
	return p.Backend.Load(ctx, h, offset, length)
}

// LoadBlobsInOrder hands every blob asked for, in the order asked, with
// its content, and reads each pack with one read where the blobs asked for
// follow each other in it; a blob asked for again out of order is read on
// its own.
func TestLoadBlobsInOrderOneReadPerPack(t *testing.T) {
	onePacker(t)
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	var ids []repo.ID
	var want [][]byte
	for i := range 40 {
		data := backendtest.RandomBytes(uint64(i), 10<<10)
		ids = append(ids, saveBlob(t, r, data))
		want = append(want, data)
	}
	flush(t, r)
	packs := len(names(t, mem, repo.PackFile))
	asked := append(append([]repo.ID(nil), ids...), ids[3]) // the fourth again, at the end
	want = append(want, want[3])

	counted := &countedPackReads{Backend: mem}
	r2 := openRepo(t, counted)
	if err := r2.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	var buf repo.BlobBuffer
	next := 0
	err := r2.LoadBlobsInOrder(ctx, asked, &buf, func(i int, plain []byte) error {
		if i != next {
			t.Fatalf("blob %d handed when %d was next", i, next)
		}
		if !bytes.Equal(plain, want[i]) {
			t.Errorf("blob %d: %d bytes, not the %d saved", i, len(plain), len(want[i]))
		}
		next++
		return nil
	})
	if err != nil || next != len(asked) {
		t.Fatalf("load: %v after %d of %d blobs", err, next, len(asked))
	}
	if counted.n != packs+1 {
		t.Errorf("pack reads for %d blobs in %d packs and one asked again: %d, want %d", len(ids), packs, counted.n, packs+1)
	}
}

// A blob the index does not know ends the call with ErrNotFound, after
// the blobs before it.
func TestLoadBlobsInOrderUnknownBlob(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	known := saveBlob(t, r, []byte("known"))
	flush(t, r)
	var handed []int
	var buf repo.BlobBuffer
	err := r.LoadBlobsInOrder(ctx, []repo.ID{known, r.BlobID([]byte("never saved")), known}, &buf, func(i int, _ []byte) error {
		handed = append(handed, i)
		return nil
	})
	if !errors.Is(err, repo.ErrNotFound) || len(handed) != 1 || handed[0] != 0 {
		t.Errorf("load with an unknown second blob: %v after blobs %v; want ErrNotFound after blob 0", err, handed)
	}
}
