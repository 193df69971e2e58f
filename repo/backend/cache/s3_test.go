package cache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/cache"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// LoadInto of the counting backend counts as a load too (the s3 backend
// reads blobs with it), when the backend it wraps has it.
func (c *counting) LoadInto(ctx context.Context, h repo.Handle, offset int64, buf []byte) error {
	bl, ok := repo.Capability[repo.BufferLoader](c.Backend)
	if !ok {
		return fmt.Errorf("load into: %w", errors.ErrUnsupported)
	}
	c.mu.Lock()
	c.loads[h.Type]++
	c.mu.Unlock()
	return bl.LoadInto(ctx, h, offset, buf)
}

// On a real S3 server: the backup's index file and tree pack are kept as
// they are saved (the pack streamed), and the next process reads the index
// and every tree from the copies, asking the server only for data.
func TestCacheOnS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	location := srv.Location("cached", "repo")
	opts := backend.Options{BucketLookup: "path"}
	be, err := backend.CreateWith(ctx, location, opts)
	if err != nil {
		t.Fatal(err)
	}
	writer := cache.Wrap(be)
	r := repotest.New(t, writer)
	root := t.TempDir()
	if err := writer.Attach(root, r.ID()); err != nil {
		t.Fatal(err)
	}
	data := backendtest.RandomBytes(7, 1<<20)
	var trees []repo.ID
	if _, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		id := r.BlobID(data)
		if _, err := w.SaveBlob(ctx, repo.DataBlob, id, data); err != nil {
			return err
		}
		for i := range 20 {
			tree, err := w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: fmt.Sprint("f", i), Type: repo.NodeFile, Content: []repo.ID{id}}}})
			if err != nil {
				return err
			}
			trees = append(trees, tree)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"index", "data"} {
		entries, err := os.ReadDir(filepath.Join(root, r.ID(), kind))
		if err != nil || len(entries) != 1 {
			t.Errorf("copies in %s after the backup: %v, %v; want one (the index file, the tree pack)", kind, entries, err)
		}
	}

	be2, err := backend.OpenWith(ctx, location, opts)
	if err != nil {
		t.Fatal(err)
	}
	server := newCounting(be2)
	reader := cache.Wrap(server)
	r2, err := repo.Open(ctx, reader, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if err := reader.Attach(root, r2.ID()); err != nil {
		t.Fatal(err)
	}
	if err := r2.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range trees {
		if _, err := r2.LoadTree(ctx, id); err != nil {
			t.Fatalf("tree %s: %v", id.Short(), err)
		}
	}
	if n, m := server.count(repo.IndexFile), server.count(repo.PackFile); n != 0 || m != 0 {
		t.Errorf("reads that reached the server for the index and %d trees: %d of index files, %d of packs; want none", len(trees), n, m)
	}
	if got, err := r2.LoadBlob(ctx, r2.BlobID(data)); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("data blob: %d bytes, %v", len(got), err)
	}
	if n := server.count(repo.PackFile); n != 1 {
		t.Errorf("pack reads that reached the server for one data blob: %d, want 1 (data is not cached)", n)
	}
}
