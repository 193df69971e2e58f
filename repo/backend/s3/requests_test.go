package s3_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// countedRepository makes a repository (password "pw") in a bucket of a
// versitygw reached through a counting proxy, and returns its location
// through the proxy, with the proxy.
func countedRepository(t *testing.T) (string, *faultproxy.Proxy) {
	t.Helper()
	srv := s3test.Start(t)
	srv.SetEnv(t)
	p, err := faultproxy.Start("http://"+srv.Endpoint, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	location := "s3:" + p.URL() + "/counted/repo"
	be, err := backend.CreateWith(context.Background(), location, backend.Options{BucketLookup: "path"})
	if err != nil {
		t.Fatal(err)
	}
	repotest.New(t, be).Close()
	return location, p
}

// openCounted opens the repository at location as a command does.
func openCounted(t *testing.T, location string) *repo.Repository {
	t.Helper()
	ctx := context.Background()
	be, err := backend.OpenWith(ctx, location, backend.Options{BucketLookup: "path"})
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

// requests returns the proxy's requests by method and folder since the
// last call, and sets them to zero.
func requests(p *faultproxy.Proxy) map[string]int64 {
	by := maps.Clone(p.Counts().ByFolder)
	p.ResetCounts()
	return by
}

// wantRequests fails t unless got holds exactly the requests of want.
func wantRequests(t *testing.T, step string, got, want map[string]int64) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("%s: requests %v, want %v", step, got, want)
	}
}

// Opening a repository reads its config once: the s3 backend's Open GETs
// it (to learn that a repository is there) and hands those bytes to the
// repository's own read, with no HEAD beside the GET. A second read of
// the config asks the server again.
func TestOpenReadsConfigOnce(t *testing.T) {
	location, p := countedRepository(t)
	requests(p)
	r := openCounted(t, location)
	got := requests(p)
	if got["HEAD repo"] != 0 || got["GET repo"] != 1 {
		t.Errorf("open: %d HEADs and %d GETs of the config (all: %v), want 0 and 1", got["HEAD repo"], got["GET repo"], got)
	}
	if _, err := r.Backend().Load(context.Background(), repo.Handle{Type: repo.ConfigFile, Name: "config"}, 0, -1); err != nil {
		t.Fatal(err)
	}
	if got := requests(p); got["GET repo"] != 1 {
		t.Errorf("a second read of the config: %v, want one GET of it", got)
	}
}

// Taking and releasing a lock on S3 is a PUT, a listing of the locks and a
// DELETE: the release does not ask first whether the lock is there (a
// missing lock is as good as a removed one), and the lock is gone after.
func TestLockRequests(t *testing.T) {
	location, p := countedRepository(t)
	r := openCounted(t, location)
	requests(p)
	lock, err := r.Lock(context.Background(), false, "backup")
	if err != nil {
		t.Fatal(err)
	}
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	wantRequests(t, "lock and unlock", requests(p), map[string]int64{"PUT locks": 1, "GET ?list locks": 1, "DELETE locks": 1})
	var left []string
	if err := r.Backend().List(context.Background(), repo.LockFile, func(name string, _ int64) error {
		left = append(left, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("locks left after unlock: %v", left)
	}
}

// A snapshot saved without an ID gets a new random one and is saved with
// one PUT: no snapshot can have that ID, so nothing is asked first. An ID
// the caller chose is looked up first, and one that exists is refused, its
// record left as it was.
func TestSaveSnapshotRequests(t *testing.T) {
	location, p := countedRepository(t)
	r := openCounted(t, location)
	ctx := context.Background()
	var tree repo.ID
	written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		var err error
		tree, err = w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "f", Type: repo.NodeFile}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	requests(p)
	fresh := &repo.Snapshot{Tree: tree}
	if err := written.SaveSnapshot(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	wantRequests(t, "save a snapshot without an ID", requests(p), map[string]int64{"PUT snapshots": 1})
	if len(fresh.ID) != 32 || !repo.ValidSnapshotID(fresh.ID) {
		t.Errorf("the saved snapshot's ID is %q, want 32 hex digits", fresh.ID)
	}
	if s, err := r.LoadSnapshot(ctx, fresh.ID); err != nil || s.Tree != tree {
		t.Fatalf("the snapshot saved without an ID: %+v, %v", s, err)
	}

	requests(p)
	chosen := &repo.Snapshot{ID: "chosen", Tree: tree, Tags: []string{"first"}}
	if err := written.SaveSnapshot(ctx, chosen); err != nil {
		t.Fatal(err)
	}
	wantRequests(t, "save a snapshot with a chosen ID", requests(p), map[string]int64{"HEAD snapshots": 1, "PUT snapshots": 1})
	again := &repo.Snapshot{ID: "chosen", Tree: tree, Tags: []string{"second"}}
	if err := written.SaveSnapshot(ctx, again); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("save a snapshot under an existing chosen ID: %v, want already exists", err)
	}
	if got := requests(p); got["PUT snapshots"] != 0 {
		t.Errorf("refused save sent %v", got)
	}
	if s, err := r.LoadSnapshot(ctx, "chosen"); err != nil || len(s.Tags) != 1 || s.Tags[0] != "first" {
		t.Errorf("the existing snapshot after a refused save: %+v, %v; want its tag first", s, err)
	}
	if _, err := r.LoadSnapshot(ctx, "missing"); !errors.Is(err, repo.ErrSnapshotNotFound) {
		t.Errorf("load a missing snapshot: %v", err)
	}
}
