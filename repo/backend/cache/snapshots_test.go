package cache_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/cache"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// snapshotGETs returns the GETs of snapshot records the proxy saw since
// the last call, and sets the counts to zero.
func snapshotGETs(p *faultproxy.Proxy) int64 {
	n := p.Counts().ByFolder["GET snapshots"]
	p.ResetCounts()
	return n
}

// On S3, a snapshot record saved or read by one process is read from its
// copy by the next, as long as the bucket's listing shows the same bytes
// (its ETag is the copy's MD5). nightjar tag rewriting the record under
// the same name, also with tags of the same length (the same size), makes
// the copy stale: it is read from the bucket again, and never used.
func TestSnapshotRecordsOnS3(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	p, err := faultproxy.Start("http://"+srv.Endpoint, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	location := "s3:" + p.URL() + "/snapshots/repo"
	opts := backend.Options{BucketLookup: "path"}
	be, err := backend.CreateWith(ctx, location, opts)
	if err != nil {
		t.Fatal(err)
	}
	repotest.New(t, be).Close()
	root := t.TempDir()
	// open is a new process on the repository: with the cache in root,
	// or reading the bucket only (nil root).
	open := func(root *string) *repo.Repository {
		be, err := backend.OpenWith(ctx, location, opts)
		if err != nil {
			t.Fatal(err)
		}
		var c *cache.Backend
		if root != nil {
			c = cache.Wrap(be)
			be = c
		}
		r, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		if c != nil {
			if err := c.Attach(*root, r.ID()); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	// tagsSeen lists and reads the snapshots as every command does, and
	// returns the tags of the one snapshot.
	tagsSeen := func(r *repo.Repository) []string {
		t.Helper()
		snaps, err := r.Snapshots(ctx)
		if err != nil || len(snaps) != 1 {
			t.Fatalf("snapshots: %v, %v; want one", snaps, err)
		}
		return snaps[0].Tags
	}

	writer := open(&root)
	var tree repo.ID
	written, err := writer.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		var err error
		tree, err = w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "f", Type: repo.NodeFile}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := &repo.Snapshot{Tree: tree}
	if err := written.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(root, writer.ID(), "snapshots", snap.ID)
	if st, err := os.Stat(copyPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("copy of the saved record: %v, %v; want a file of mode 0600", st, err)
	}

	snapshotGETs(p)
	if tags := tagsSeen(open(&root)); len(tags) != 0 {
		t.Errorf("tags %v, want none", tags)
	}
	if n := snapshotGETs(p); n != 0 {
		t.Errorf("reads of the record that reached the bucket after the backup that saved it: %d, want 0", n)
	}

	retag := func(tags ...string) {
		t.Helper()
		_, err := open(nil).ChangeTags(ctx, func([]*repo.Snapshot) ([]string, error) { return []string{snap.ID}, nil },
			repo.TagChange{Set: tags, SetTags: true})
		if err != nil {
			t.Fatal(err)
		}
		snapshotGETs(p)
	}
	for _, tags := range [][]string{{"aaa"}, {"bbb"}} { // the second is as long as the first
		retag(tags...)
		reader := open(&root)
		if got := tagsSeen(reader); !slices.Equal(got, tags) {
			t.Errorf("tags after tag set %v: %v (a stale copy)", tags, got)
		}
		if n := snapshotGETs(p); n != 1 {
			t.Errorf("reads of the rewritten record that reached the bucket: %d, want 1", n)
		}
		if got := tagsSeen(reader); !slices.Equal(got, tags) {
			t.Errorf("tags read again after tag set %v: %v", tags, got)
		}
		if n := snapshotGETs(p); n != 0 {
			t.Errorf("reads of the record that reached the bucket once its copy is current: %d, want 0", n)
		}
		// A read with no listing before it is not vouched for.
		if _, err := reader.LoadSnapshot(ctx, snap.ID); err != nil {
			t.Fatal(err)
		}
		if n := snapshotGETs(p); n != 1 {
			t.Errorf("reads that reached the bucket of a record not listed since its last read: %d, want 1", n)
		}
	}
}

// Where the storage tells no ETags (here: memory), snapshot records are
// neither kept nor read from a copy.
func TestSnapshotRecordsNotCachedWithoutETags(t *testing.T) {
	ctx := context.Background()
	mem := newCounting(memory.New())
	h := repo.Handle{Type: repo.SnapshotFile, Name: "0123456789abcdef0123456789abcdef"}
	root := t.TempDir()
	c := attached(t, mem, root)
	if err := c.Save(ctx, h, []byte("a record")); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.List(ctx, repo.SnapshotFile, func(string, int64) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Load(ctx, h, 0, -1); err != nil {
			t.Fatal(err)
		}
	}
	if n := mem.count(repo.SnapshotFile); n != 2 {
		t.Errorf("snapshot reads that reached the backend: %d, want 2", n)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, repoID, "snapshots")); len(entries) != 0 {
		t.Errorf("copies of snapshot records without ETags: %v", entries)
	}
}
