package db

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"
)

// snap is a readable snapshot of job (or of none) at t0 plus hours.
func snap(id, job string, hours int) CatalogSnapshot {
	s := CatalogSnapshot{ID: id, Time: t0.Add(time.Duration(hours) * time.Hour), Host: "backup1", Paths: []string{"/data"},
		Tags: []string{"nightly"}, Job: job, State: CatalogPresent}
	if job != "" {
		s.Tags = append(s.Tags, "job:"+job)
	}
	return s
}

func invalid(id, problem string) CatalogSnapshot {
	return CatalogSnapshot{ID: id, State: CatalogManifestInvalid, Problem: problem}
}

func listing(snaps ...CatalogSnapshot) CatalogListing {
	return CatalogListing{Repository: "main", RepositoryID: "repo-1", Snapshots: snaps}
}

// states is ID -> state of every row of the main repository's catalog.
func states(t *testing.T, d *DB) map[string]string {
	t.Helper()
	rows, err := d.CatalogSnapshots(context.Background(), CatalogFilter{Repository: "main", WithForgotten: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.ID] = r.State
	}
	return out
}

// A sync makes the catalog what the repository holds, step by step: new
// snapshots are added (also one made by hand, of no job), vanished ones are
// marked forgotten and come back if they reappear, an unreadable record is
// manifest_invalid and keeps what an earlier sync read of it, and a sync of
// the same listing again changes nothing.
func TestSyncCatalog(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	a, b, byHand := snap("run-1-data", "nightly", 1), snap("run-2-data", "nightly", 2), snap("f00d", "", 3)
	pinnedA := a
	pinnedA.Pinned = true
	failedA := pinnedA
	failedA.VerifyState, failedA.VerifiedAt = VerifyFailed, t0.Add(90*time.Minute)
	for _, step := range []struct {
		name    string
		listing CatalogListing
		want    CatalogChanges
		states  map[string]string
	}{
		{"first sync adds everything", listing(a, b, byHand),
			CatalogChanges{Added: 3, Total: 3},
			map[string]string{a.ID: CatalogPresent, b.ID: CatalogPresent, byHand.ID: CatalogPresent}},
		{"the same again changes nothing", listing(a, b, byHand),
			CatalogChanges{Total: 3},
			map[string]string{a.ID: CatalogPresent, b.ID: CatalogPresent, byHand.ID: CatalogPresent}},
		{"a vanished snapshot is forgotten, a pin is an update", listing(pinnedA, byHand),
			CatalogChanges{Updated: 1, Forgotten: 1, Total: 2},
			map[string]string{a.ID: CatalogPresent, b.ID: CatalogForgotten, byHand.ID: CatalogPresent}},
		{"a failed verification is an update", listing(failedA, byHand),
			CatalogChanges{Updated: 1, Total: 2},
			map[string]string{a.ID: CatalogPresent, b.ID: CatalogForgotten, byHand.ID: CatalogPresent}},
		{"an unreadable record is manifest_invalid", listing(pinnedA, invalid(byHand.ID, "damaged"), invalid("run-9-x", "damaged")),
			CatalogChanges{Added: 1, Updated: 2, Total: 3},
			map[string]string{a.ID: CatalogPresent, b.ID: CatalogForgotten, byHand.ID: CatalogManifestInvalid, "run-9-x": CatalogManifestInvalid}},
		{"unreadable again changes nothing", listing(pinnedA, invalid(byHand.ID, "damaged"), invalid("run-9-x", "damaged")),
			CatalogChanges{Total: 3},
			map[string]string{a.ID: CatalogPresent, b.ID: CatalogForgotten, byHand.ID: CatalogManifestInvalid, "run-9-x": CatalogManifestInvalid}},
		{"a forgotten snapshot that reappears is added back", listing(pinnedA, b, byHand, invalid("run-9-x", "damaged")),
			CatalogChanges{Added: 1, Updated: 1, Total: 4},
			map[string]string{a.ID: CatalogPresent, b.ID: CatalogPresent, byHand.ID: CatalogPresent, "run-9-x": CatalogManifestInvalid}},
		{"an empty repository forgets everything", listing(),
			CatalogChanges{Forgotten: 4},
			map[string]string{a.ID: CatalogForgotten, b.ID: CatalogForgotten, byHand.ID: CatalogForgotten, "run-9-x": CatalogForgotten}},
	} {
		clk.Add(time.Minute)
		got, err := d.SyncCatalog(ctx, step.listing)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got != step.want {
			t.Errorf("%s: changes %+v, want %+v", step.name, got, step.want)
		}
		if s := states(t, d); !maps.Equal(s, step.states) {
			t.Errorf("%s: states %v, want %v", step.name, s, step.states)
		}
		st, err := d.CatalogStatus(ctx, "main")
		if err != nil || !st.SyncedAt.Equal(clk.Now()) || st.Error != "" || st.RepositoryID != "repo-1" {
			t.Errorf("%s: status %+v, %v; want synced now without error", step.name, st, err)
		}
	}
}

// Two syncs of one repository may overlap (serve's start and a retention
// run's): a listing read before the one the catalog holds is older and
// changes nothing, so a snapshot forgotten in between does not come back
// and one added in between is not marked forgotten.
func TestSyncCatalogDropsAnOlderListing(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	a, b, c := snap("run-1-data", "nightly", 1), snap("run-2-data", "nightly", 2), snap("run-3-data", "nightly", 3)
	readAt := func(l CatalogListing, at time.Time) CatalogListing { l.ReadAt = at; return l }
	slow := clk.Now() // serve's start sync begins reading: a and b
	clk.Add(time.Minute)
	if _, err := d.SyncCatalog(ctx, readAt(listing(b, c), clk.Now())); err != nil { // a retention forgot a, a backup made c
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	got, err := d.SyncCatalog(ctx, readAt(listing(a, b), slow)) // the slow sync ends last
	if err != nil {
		t.Fatal(err)
	}
	if !got.Stale || got.Added != 0 || got.Forgotten != 0 {
		t.Errorf("changes of the older listing %+v, want it dropped as stale", got)
	}
	want := map[string]string{b.ID: CatalogPresent, c.ID: CatalogPresent}
	if s := states(t, d); !maps.Equal(s, want) {
		t.Errorf("states %v, want %v", s, want)
	}
}

// What the catalog lists is what the repository said: every field, and a
// record that became unreadable keeps what was read of it before; the job
// filter selects one job's snapshots, oldest first, without the forgotten.
func TestCatalogSnapshotsByJob(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	a, b, other := snap("run-1-data", "nightly", 2), snap("run-2-data", "nightly", 1), snap("run-3-data", "weekly", 3)
	a.Pinned, a.VerifyState, a.VerifiedAt = true, VerifyOKDeep, t0.Add(5*time.Hour)
	a.Run, b.Run = 1, 2
	first := clk.Now()
	if _, err := d.SyncCatalog(ctx, listing(a, b, other, snap("run-4-data", "nightly", 4))); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Hour)
	if _, err := d.SyncCatalog(ctx, listing(a, invalid(b.ID, "snapshot run-2-data: damaged"), other)); err != nil {
		t.Fatal(err)
	}
	got, err := d.CatalogSnapshots(ctx, CatalogFilter{Job: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{b.ID, a.ID}) {
		t.Fatalf("job nightly lists %v, want %v (oldest first, run-4 forgotten, weekly's not)", ids, []string{b.ID, a.ID})
	}
	gb, ga := got[0], got[1]
	if ga.Repository != "main" || ga.RepositoryID != "repo-1" || !ga.Time.Equal(a.Time) || ga.Host != a.Host ||
		!slices.Equal(ga.Paths, a.Paths) || !slices.Equal(ga.Tags, a.Tags) || ga.Run != 1 || !ga.Pinned || ga.State != CatalogPresent ||
		ga.VerifyState != VerifyOKDeep || !ga.VerifiedAt.Equal(a.VerifiedAt) ||
		!ga.FirstSeen.Equal(first) || !ga.LastSeen.Equal(clk.Now()) {
		t.Errorf("snapshot a is listed as %+v, want %+v seen first at %s and last now", ga, a, first)
	}
	if gb.State != CatalogManifestInvalid || gb.Problem != "snapshot run-2-data: damaged" || !gb.Time.Equal(b.Time) || !slices.Equal(gb.Paths, b.Paths) || gb.Run != 2 {
		t.Errorf("unreadable snapshot b is listed as %+v: want manifest_invalid with its problem and what was read of it before", gb)
	}
}

// A snapshot's run is kept, and a row synced without it (before the
// catalog kept runs) gets it at the next sync, counted as updated.
func TestSyncCatalogKeepsTheRun(t *testing.T) {
	ctx := context.Background()
	d, _ := newDB(t)
	before, after := snap("4a78487200000000000000000000000a", "nightly", 1), snap("4a78487200000000000000000000000a", "nightly", 1)
	after.Run = 12
	if _, err := d.SyncCatalog(ctx, listing(before)); err != nil {
		t.Fatal(err)
	}
	got, err := d.SyncCatalog(ctx, listing(after))
	if err != nil {
		t.Fatal(err)
	}
	if got.Updated != 1 || got.Added != 0 {
		t.Errorf("changes %+v, want the row updated with its run", got)
	}
	rows, err := d.CatalogSnapshots(ctx, CatalogFilter{Job: "nightly"})
	if err != nil || len(rows) != 1 || rows[0].Run != 12 {
		t.Fatalf("rows %+v, %v; want the snapshot with run 12", rows, err)
	}
	if got, err := d.SyncCatalog(ctx, listing(after)); err != nil || got.Updated != 0 {
		t.Errorf("the same listing again: %+v, %v; want nothing changed", got, err)
	}
}

// A failed sync is recorded with its cause and keeps the last good
// catalog; a good sync clears the error. A repository never synced has
// an empty status.
func TestCatalogSyncFailure(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	st, err := d.CatalogStatus(ctx, "main")
	if err != nil || !st.SyncedAt.IsZero() || !st.AttemptedAt.IsZero() || st.Error != "" {
		t.Fatalf("status before any sync: %+v, %v; want empty", st, err)
	}
	if err := d.CatalogSyncFailed(ctx, "main", errors.New("open repository main: no repository here")); err != nil {
		t.Fatal(err)
	}
	st, _ = d.CatalogStatus(ctx, "main")
	if !st.SyncedAt.IsZero() || !st.AttemptedAt.Equal(clk.Now()) || st.Error != "open repository main: no repository here" {
		t.Errorf("status after a failed first sync: %+v", st)
	}
	synced := clk.Add(time.Minute)
	if _, err := d.SyncCatalog(ctx, listing(snap("s1", "j", 1))); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	if err := d.CatalogSyncFailed(ctx, "main", errors.New("unreachable")); err != nil {
		t.Fatal(err)
	}
	st, _ = d.CatalogStatus(ctx, "main")
	if !st.SyncedAt.Equal(synced) || !st.AttemptedAt.Equal(clk.Now()) || st.Error != "unreachable" {
		t.Errorf("status after a failed sync: %+v, want synced at %s, failed now", st, synced)
	}
	if s := states(t, d); s["s1"] != CatalogPresent {
		t.Errorf("a failed sync changed the catalog: %v", s)
	}
	clk.Add(time.Minute)
	if _, err := d.SyncCatalog(ctx, listing(snap("s1", "j", 1))); err != nil {
		t.Fatal(err)
	}
	if st, _ = d.CatalogStatus(ctx, "main"); st.Error != "" || !st.SyncedAt.Equal(clk.Now()) {
		t.Errorf("a good sync did not clear the error: %+v", st)
	}
}

// A listing that no repository could give is refused, and changes nothing.
func TestSyncCatalogRefusesABadListing(t *testing.T) {
	ctx := context.Background()
	d, _ := newDB(t)
	noTime := snap("s2", "j", 0)
	noTime.Time = time.Time{}
	forgotten := snap("s3", "j", 1)
	forgotten.State = CatalogForgotten
	oddVerify := snap("s5", "j", 1)
	oddVerify.VerifyState = "fine"
	for _, tc := range []struct {
		name string
		l    CatalogListing
	}{
		{"no repository ID", CatalogListing{Repository: "main", Snapshots: []CatalogSnapshot{snap("s1", "j", 1)}}},
		{"a snapshot twice", listing(snap("s1", "j", 1), snap("s1", "j", 1))},
		{"present without a time", listing(noTime)},
		{"unreadable without a problem", listing(invalid("s4", ""))},
		{"a forgotten snapshot listed", listing(forgotten)},
		{"no ID", listing(CatalogSnapshot{State: CatalogPresent, Time: t0})},
		{"an unknown verification state", listing(oddVerify)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := d.SyncCatalog(ctx, tc.l); err == nil {
				t.Error("accepted")
			}
			if s := states(t, d); len(s) != 0 {
				t.Errorf("a refused listing changed the catalog: %v", s)
			}
		})
	}
}
