package cmd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// The catalog is a cache of the repository: a new state database (the old
// one deleted) synced once holds every snapshot with its pin and its
// verification verdict, read from the repository alone. A failed
// verdict and a damaged verification record are verify_failed, a deep one
// ok_deep; a damaged snapshot record is manifest_invalid and keeps its
// verdict; a snapshot made by hand is added, and one removed from the
// repository is marked forgotten by the next sync.
func TestCatalogRebuiltFromTheRepositoryKeepsPinsAndVerdicts(t *testing.T) {
	ctx := context.Background()
	be, err := local.Create(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t, be)
	start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	names := []string{"pinned", "failed", "deep", "damaged verdict", "damaged record", "plain"}
	ids := map[string]string{}
	for i, name := range names {
		src := filepath.Join(t.TempDir(), "src")
		if err := os.WriteFile(src, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := backup.Backup(ctx, r, backup.Options{Paths: []string{src}, Tags: []string{"job:a"}, Run: int64(i + 1),
			Time: start.Add(time.Duration(i) * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = res.Snapshot.ID
	}
	if _, err := r.Pin(ctx, ids["pinned"], "audit"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []*repo.Verification{
		{Snapshot: ids["failed"], OK: false, Problems: []string{"tree damaged"}},
		{Snapshot: ids["deep"], OK: true, Deep: true},
		{Snapshot: ids["damaged verdict"], OK: true},
		{Snapshot: ids["damaged record"], OK: false, Problems: []string{"chunk unreadable"}},
	} {
		if err := r.SaveVerification(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	flipLastByte(t, be, repo.Handle{Type: repo.VerifyFile, Name: ids["damaged verdict"]})
	flipLastByte(t, be, repo.Handle{Type: repo.SnapshotFile, Name: ids["damaged record"]})

	// A new state database, as after the old one was deleted: everything
	// it learns comes from the repository.
	state, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	ch, err := syncCatalog(ctx, state, "main", r)
	if err != nil {
		t.Fatalf("sync into a new state database: %v", err)
	}
	if ch.Added != len(names) || ch.Total != len(names) {
		t.Errorf("the new catalog added %d of %d snapshots, want all %d", ch.Added, ch.Total, len(names))
	}
	type row struct {
		pinned bool
		state  string
		verify string
		job    string
	}
	want := map[string]row{
		"pinned":          {pinned: true, state: db.CatalogPresent, job: "a"},
		"failed":          {state: db.CatalogPresent, verify: db.VerifyFailed, job: "a"},
		"deep":            {state: db.CatalogPresent, verify: db.VerifyOKDeep, job: "a"},
		"damaged verdict": {state: db.CatalogPresent, verify: db.VerifyFailed, job: "a"},
		"damaged record":  {state: db.CatalogManifestInvalid, verify: db.VerifyFailed}, // its tags are unreadable
		"plain":           {state: db.CatalogPresent, job: "a"},
	}
	got := catalogRows(t, state)
	for name, w := range want {
		s, ok := got[ids[name]]
		if !ok {
			t.Errorf("snapshot %q (%s) is not in the rebuilt catalog", name, ids[name])
			continue
		}
		if g := (row{pinned: s.Pinned, state: s.State, verify: s.VerifyState, job: s.Job}); g != w {
			t.Errorf("snapshot %q: catalog has %+v, want %+v", name, g, w)
		}
		if name == "damaged record" && s.Problem == "" {
			t.Errorf("the damaged record is manifest_invalid without its problem")
		}
	}

	// A snapshot made by hand is added; one removed from the repository is
	// forgotten, not dropped.
	src := filepath.Join(t.TempDir(), "by-hand")
	if err := os.WriteFile(src, []byte("by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := backup.Backup(ctx, r, backup.Options{Paths: []string{src}, Time: start.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Remove(ctx, repo.Handle{Type: repo.SnapshotFile, Name: ids["plain"]}); err != nil {
		t.Fatal(err)
	}
	if ch, err = syncCatalog(ctx, state, "main", r); err != nil {
		t.Fatal(err)
	}
	if ch.Added != 1 || ch.Forgotten != 1 {
		t.Errorf("the next sync added %d and forgot %d, want 1 and 1", ch.Added, ch.Forgotten)
	}
	got = catalogRows(t, state)
	if s := got[res.Snapshot.ID]; s.State != db.CatalogPresent || s.Job != "" {
		t.Errorf("the snapshot made by hand is listed as %+v, want present and of no job", s)
	}
	if s := got[ids["plain"]]; s.State != db.CatalogForgotten {
		t.Errorf("the removed snapshot is listed as %q, want forgotten", s.State)
	}
}

// catalogRows returns the catalog of repository main, forgotten snapshots
// included, by snapshot ID.
func catalogRows(t *testing.T, state *db.DB) map[string]db.CatalogSnapshot {
	t.Helper()
	list, err := state.CatalogSnapshots(context.Background(), db.CatalogFilter{Repository: "main", WithForgotten: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]db.CatalogSnapshot{}
	for _, s := range list {
		out[s.ID] = s
	}
	return out
}

// flipLastByte damages the object h by inverting the lowest bit of its last
// byte, so that its seal no longer opens.
func flipLastByte(t *testing.T, be repo.Backend, h repo.Handle) {
	t.Helper()
	ctx := context.Background()
	data, err := be.Load(ctx, h, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	data = slices.Clone(data)
	data[len(data)-1] ^= 1
	if err := be.Remove(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := be.Save(ctx, h, data); err != nil {
		t.Fatal(err)
	}
}
