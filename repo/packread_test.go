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

// packReads counts the reads of packs that reach the backend it wraps.
type packReads struct {
	repo.Backend
	mu sync.Mutex
	n  int
}

func (p *packReads) Unwrap() repo.Backend { return p.Backend }

func (p *packReads) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile {
		p.mu.Lock()
		p.n++
		p.mu.Unlock()
	}
	return p.Backend.Load(ctx, h, offset, length)
}

// LoadBlobs hands every blob asked for once, with its content, and reads
// each pack with one read where the blobs asked for lie together.
func TestLoadBlobsOneReadPerPack(t *testing.T) {
	onePacker(t)
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	want := map[repo.ID][]byte{}
	var ids []repo.ID
	for i := range 40 {
		data := backendtest.RandomBytes(uint64(i), 10<<10)
		id := saveBlob(t, r, data)
		want[id] = data
		ids = append(ids, id)
	}
	flush(t, r)
	packs := len(names(t, mem, repo.PackFile))

	counted := &packReads{Backend: mem}
	r2 := openRepo(t, counted)
	if err := r2.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	asked := append(append([]repo.ID(nil), ids...), ids[:5]...) // some twice
	var mu sync.Mutex
	got := map[repo.ID]int{}
	err := r2.LoadBlobs(ctx, asked, 4, func(id repo.ID, plain []byte) error {
		mu.Lock()
		defer mu.Unlock()
		got[id]++
		if !bytes.Equal(plain, want[id]) {
			t.Errorf("blob %s: %d bytes, not the %d saved", id.Short(), len(plain), len(want[id]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("blob %s handed %d times, want once", id.Short(), got[id])
		}
	}
	if counted.n != packs {
		t.Errorf("pack reads for %d blobs in %d packs: %d, want one per pack", len(ids), packs, counted.n)
	}
}

// A blob the index does not know fails the call before anything is read.
func TestLoadBlobsUnknownBlob(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	known := saveBlob(t, r, []byte("known"))
	flush(t, r)
	called := 0
	err := r.LoadBlobs(ctx, []repo.ID{known, r.BlobID([]byte("never saved"))}, 1, func(repo.ID, []byte) error {
		called++
		return nil
	})
	if !errors.Is(err, repo.ErrNotFound) || called != 0 {
		t.Errorf("load with an unknown blob: %v after %d blobs; want ErrNotFound before any", err, called)
	}
}
