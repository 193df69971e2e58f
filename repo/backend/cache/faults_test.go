package cache_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lukechampine.com/blake3"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/cache"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// The cache's own fetches (an index file, a tree pack whole, a snapshot
// record) go through the storage's retries: through a proxy that answers
// 503 SlowDown and 500, and cuts bodies short, every fetch completes, the
// trees and the snapshot read are right, and every copy kept is whole
// (it hashes to its name; the record is the bucket's).
func TestCacheFetchesThroughFaults(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	p, err := faultproxy.Start("http://"+srv.Endpoint, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	ctx := context.Background()
	location := "s3:" + p.URL() + "/faults/repo"
	opts := backend.Options{BucketLookup: "path"}
	be, err := backend.CreateWith(ctx, location, opts)
	if err != nil {
		t.Fatal(err)
	}
	w := repotest.New(t, be) // no cache: the reader below has no copies
	data := backendtest.RandomBytes(3, 256<<10)
	var trees []repo.ID
	written, err := w.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, wr *repo.Writer) error {
		id := w.BlobID(data)
		if _, err := wr.SaveBlob(ctx, repo.DataBlob, id, data); err != nil {
			return err
		}
		for i := range 10 {
			tree, err := wr.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: fmt.Sprint("f", i), Type: repo.NodeFile, Content: []repo.ID{id}}}})
			if err != nil {
				return err
			}
			trees = append(trees, tree)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := &repo.Snapshot{Tree: trees[0], Tags: []string{"faults"}}
	if err := written.SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	w.Close()

	p.SetRules(
		faultproxy.Rule{Method: http.MethodGet, PathContains: "/index/", Nth: 1, Fault: faultproxy.SlowDown},
		faultproxy.Rule{Method: http.MethodGet, PathContains: "/index/", Nth: 2, Fault: faultproxy.Truncate},
		faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Nth: 1, Fault: faultproxy.InternalError},
		faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Nth: 2, Fault: faultproxy.Truncate},
		faultproxy.Rule{Method: http.MethodGet, PathContains: "/snapshots/", Nth: 1, Fault: faultproxy.Truncate},
	)
	be2, err := backend.OpenWith(ctx, location, opts)
	if err != nil {
		t.Fatal(err)
	}
	reader := cache.Wrap(be2)
	r, err := repo.Open(ctx, reader, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	root := t.TempDir()
	if err := reader.Attach(root, r.ID()); err != nil {
		t.Fatal(err)
	}
	snaps, err := r.Snapshots(ctx)
	if err != nil || len(snaps) != 1 || snaps[0].ID != snap.ID || len(snaps[0].Tags) != 1 {
		t.Fatalf("snapshots through faults: %v, %v; want %s tagged faults", snaps, err, snap.ID)
	}
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range trees {
		tree, err := r.LoadTree(ctx, id)
		if err != nil || len(tree.Nodes) != 1 || tree.Nodes[0].Name != fmt.Sprint("f", i) {
			t.Fatalf("tree %d through faults: %+v, %v", i, tree, err)
		}
	}
	got := p.Counts().Faults
	for _, f := range []faultproxy.Fault{faultproxy.SlowDown, faultproxy.InternalError, faultproxy.Truncate} {
		if got[f.String()] == 0 {
			t.Errorf("the proxy did no fault %s (all: %v): the test proves nothing of it", f, got)
		}
	}
	if got[faultproxy.Truncate.String()] != 3 {
		t.Errorf("bodies cut short: %d, want 3 (an index file, a pack, a record: all: %v)", got[faultproxy.Truncate.String()], got)
	}

	for _, kind := range []string{"index", "data"} {
		entries, err := os.ReadDir(filepath.Join(root, r.ID(), kind))
		if err != nil || len(entries) != 1 {
			t.Fatalf("copies in %s: %v, %v; want one", kind, entries, err)
		}
		content, err := os.ReadFile(filepath.Join(root, r.ID(), kind, entries[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := blake3.Sum256(content)
		if fmt.Sprintf("%x", sum[:]) != entries[0].Name() || strings.HasPrefix(entries[0].Name(), ".tmp-") {
			t.Errorf("the copy %s/%s does not hash to its name: a fetch cut short was kept", kind, entries[0].Name())
		}
	}
	record, err := os.ReadFile(filepath.Join(root, r.ID(), "snapshots", snap.ID))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := be2.Load(ctx, repo.Handle{Type: repo.SnapshotFile, Name: snap.ID}, 0, -1)
	if err != nil || !bytes.Equal(record, stored) {
		t.Errorf("the copy of the snapshot record (%d bytes) is not the bucket's (%d bytes, %v)", len(record), len(stored), err)
	}
}
