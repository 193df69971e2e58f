package s3_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// A repository made through the s3 scheme holds what a write session
// saved (streamed packs among it), opens again with its password and
// checks clean with every pack read.
func TestRepositoryOnS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	location := srv.Location("repos", "host-a")
	opts := backend.Options{BucketLookup: "path"}
	be, err := backend.CreateWith(ctx, location, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := repo.Capability[repo.PackStreamer](be); !ok {
		t.Fatal("the s3 backend does not stream packs")
	}
	r := repotest.New(t, be)
	var blobs [][]byte
	for i := range 40 {
		blobs = append(blobs, backendtest.RandomBytes(uint64(i), 1<<20))
	}
	var tree repo.ID
	written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		var content []repo.ID
		for _, b := range blobs {
			id := r.BlobID(b)
			if _, err := w.SaveBlob(ctx, repo.DataBlob, id, b); err != nil {
				return err
			}
			content = append(content, id)
		}
		var err error
		tree, err = w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "f", Type: repo.NodeFile, Content: content}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := written.SaveSnapshot(ctx, &repo.Snapshot{ID: "s3-snapshot", Tree: tree}); err != nil {
		t.Fatal(err)
	}
	r.Close()

	if _, err := backend.CreateWith(ctx, location, opts); !errors.Is(err, repo.ErrAlreadyExists) {
		t.Errorf("init again at %s: %v, want ErrAlreadyExists", location, err)
	}
	be, err = backend.OpenWith(ctx, location, opts)
	if err != nil {
		t.Fatal(err)
	}
	r, err = repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	report, err := r.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !report.OK() || report.Snapshots != 1 || report.PacksRead < 2 {
		t.Errorf("check: %+v; want no problems, 1 snapshot and every pack (more than one) read", report)
	}
	for i, b := range blobs {
		got, err := r.LoadBlob(ctx, r.BlobID(b))
		if err != nil || !bytes.Equal(got, b) {
			t.Fatalf("blob %d: %d bytes, %v; want the %d saved", i, len(got), err, len(b))
		}
	}
}

// Locks in a bucket are leases (the s3 scheme wraps its backend with
// package lease): an exclusive lock held by one process keeps another
// out, as the lock object in the bucket says, until it is released.
func TestLocksOnS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	ctx := context.Background()
	location := srv.Location("locks", "repo")
	opts := backend.Options{BucketLookup: "path"}
	be, err := backend.CreateWith(ctx, location, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := repo.Capability[repo.LockKeeper](be); !ok {
		t.Fatal("the s3 scheme's backend keeps no locks")
	}
	repotest.New(t, be)
	open := func() *repo.Repository {
		be, err := backend.OpenWith(ctx, location, opts)
		if err != nil {
			t.Fatal(err)
		}
		r, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return r
	}
	a, b := open(), open()
	lock, err := a.Lock(ctx, true, "prune")
	if err != nil {
		t.Fatalf("exclusive lock: %v", err)
	}
	if keys := srv.Keys(t, "locks", "repo/locks/"); len(keys) != 1 {
		t.Errorf("lock objects in the bucket while one lock is held: %v", keys)
	}
	if _, err := b.Lock(ctx, false, "backup"); !errors.Is(err, repo.ErrBusy) {
		t.Errorf("shared lock beside an exclusive one: %v, want ErrBusy", err)
	}
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	if keys := srv.Keys(t, "locks", "repo/locks/"); len(keys) != 0 {
		t.Errorf("lock objects left after unlock: %v", keys)
	}
	shared, err := b.Lock(ctx, false, "backup")
	if err != nil {
		t.Fatalf("shared lock after the exclusive one was released: %v", err)
	}
	if err := shared.Unlock(); err != nil {
		t.Fatal(err)
	}
}
