package db

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// The newest pass of each host and mode is kept; an older pass recorded
// late does not replace a newer one.
func TestRecordPass(t *testing.T) {
	ctx := context.Background()
	d, _ := newDB(t)
	beats := []PassBeat{
		{Host: "db1", Mode: PassTick, PID: 10, Version: "1.0", At: t0},
		{Host: "db1", Mode: PassTick, PID: 11, Version: "1.1", At: t0.Add(time.Minute)},
		{Host: "db1", Mode: PassTick, PID: 9, Version: "1.0", At: t0.Add(-time.Minute)}, // late: dropped
		{Host: "db1", Mode: PassServe, PID: 12, Version: "1.1", At: t0.Add(2 * time.Minute)},
		{Host: "db2", Mode: PassTick, PID: 13, Version: "1.1", At: t0.Add(30 * time.Second)},
	}
	for _, b := range beats {
		if err := d.RecordPass(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	got := readStatusFacts(t, d).Passes
	want := []PassBeat{beats[3], beats[1], beats[4]}
	if !slices.Equal(got, want) {
		t.Errorf("passes:\n%+v\nwant:\n%+v", got, want)
	}
}

// A probe is claimed by one pass per period; a recorded probe reads back
// as stored, unknowns as unknown; a claimed repository that was never
// probed is not listed.
func TestProbes(t *testing.T) {
	ctx := context.Background()
	d, _ := newDB(t)
	every := 10 * time.Minute
	claims := []struct {
		name string
		at   time.Time
		want bool
	}{
		{"first claim", t0, true},
		{"again at once", t0, false},
		{"within the period", t0.Add(9 * time.Minute), false},
		{"after the period", t0.Add(10 * time.Minute), true},
		{"a clock stepped back far", t0.Add(-time.Hour), true},
	}
	for _, c := range claims {
		got, err := d.ClaimProbe(ctx, "disk", c.at, every)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: claimed = %v, want %v", c.name, got, c.want)
		}
	}
	if got := readStatusFacts(t, d).Probes; len(got) != 0 {
		t.Fatalf("probes of a repository only claimed = %+v; want none", got)
	}
	down := RepositoryProbe{Name: "disk", Location: "/srv/disk", At: t0, Error: "no repository at /srv/disk"}
	up := RepositoryProbe{Name: "nas", Location: "/mnt/nas", At: t0, Reachable: true, EncryptionKnown: true, Encrypted: true,
		SpaceKnown: true, FreeBytes: 5 << 30, TotalBytes: 10 << 30, SizeKnown: true, SizeBytes: 3<<30 + 12345}
	for _, p := range []RepositoryProbe{down, up} {
		if err := d.RecordProbe(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.RecordProbe(ctx, RepositoryProbe{Name: "x", At: t0}); err == nil {
		t.Error("an unreachable probe without a reason was recorded")
	}
	got := readStatusFacts(t, d).Probes
	if want := []RepositoryProbe{down, up}; !slices.Equal(got, want) {
		t.Errorf("probes:\n%+v\nwant:\n%+v", got, want)
	}
	for name, want := range map[string]bool{"disk": false, "nas": true} {
		if used, err := d.RepositoryUsed(ctx, name); err != nil || used != want {
			t.Errorf("repository %s used = %v, %v; want %v (a reachable probe)", name, used, err, want)
		}
	}
	if claimed, _ := d.ClaimProbe(ctx, "nas", t0.Add(time.Minute), every); claimed {
		t.Error("a repository just probed was claimed again")
	}
}

// readStatusFacts reads the facts of nightjar status, failing the test on an error.
func readStatusFacts(t *testing.T, d *DB) StatusFacts {
	t.Helper()
	f, err := d.StatusFacts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// finishRun queues, starts and finishes a run of job with status and the
// given fields at the clock's time.
func finishRun(t *testing.T, d *DB, clk *clock, job string, r pass.Run) pass.Run {
	t.Helper()
	ctx := context.Background()
	q, err := d.QueueRun(ctx, job, pass.Run{Kind: r.Kind}, admin)
	if err != nil {
		t.Fatal(err)
	}
	start(t, d, clk.Now(), "owner")
	r.ID, r.JobID, r.Job, r.EndedAt = q.ID, q.JobID, job, clk.Now()
	if r.Kind == "" {
		r.Kind = pass.KindBackup
	}
	ok, err := d.Finish(ctx, r, "owner", nil)
	if err != nil || !ok {
		t.Fatalf("finish run %d: %v, %v", q.ID, ok, err)
	}
	return mustRun(t, d, q.ID)
}

// StatusFacts reads, per job, the newest decisive run of each kind, the
// newest good snapshot (from runs and catalog), the verification state,
// and per repository what the newest backup added.
func TestStatusFacts(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "home", "daily 02:00"), def(t, "etc", "daily 03:00"))
	snapOf := func(id string) []pass.SnapshotRef {
		return []pass.SnapshotRef{{RepositoryID: "repo-1", SnapshotID: id, Source: "/data"}}
	}

	clk.Add(time.Hour)
	good := finishRun(t, d, clk, "home", pass.Run{Status: pass.StatusSucceeded, Snapshots: snapOf("run-1-data"),
		Figures: pass.Figures{BytesAdded: 100}})
	clk.Add(time.Hour)
	deep := finishRun(t, d, clk, "home", pass.Run{Kind: pass.KindVerify, Status: pass.StatusSucceeded,
		Figures: pass.Figures{Counters: map[string]int64{"deep": 1}}})
	clk.Add(time.Hour)
	finishRun(t, d, clk, "home", pass.Run{Kind: pass.KindVerify, Status: pass.StatusFailed, ErrorClass: pass.ClassIntegrity,
		ErrorCode: "VERIFY_FAILED", Message: "pack damaged"})
	clk.Add(time.Hour)
	failed := finishRun(t, d, clk, "home", pass.Run{Status: pass.StatusFailed, ErrorClass: pass.ClassNetwork, ErrorCode: "X", Message: "down"})
	clk.Add(time.Hour)
	cancelled, err := d.QueueRun(ctx, "home", pass.Run{}, admin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CancelRun(ctx, cancelled.ID, admin); err != nil {
		t.Fatal(err)
	}
	queued := queue(t, d, "etc")

	// The catalog knows a newer snapshot of etc, and a damaged one of home.
	cat := listing(snap("run-9-etc", "etc", 6), snap("run-1-data", "home", 1))
	cat.Snapshots[1].VerifyState, cat.Snapshots[1].VerifiedAt = VerifyFailed, t0.Add(3*time.Hour)
	if _, err := d.SyncCatalog(ctx, cat); err != nil {
		t.Fatal(err)
	}

	for name, want := range map[string]bool{"local": true, "other": false} {
		if used, err := d.RepositoryUsed(ctx, name); err != nil || used != want {
			t.Errorf("repository %s used = %v, %v; want %v", name, used, err, want)
		}
	}
	f, err := d.StatusFacts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Jobs) != 2 || f.Jobs[0].Name != "etc" || f.Jobs[1].Name != "home" {
		t.Fatalf("jobs: %+v", f.Jobs)
	}
	etc, home := f.Jobs[0], f.Jobs[1]
	var kinds []string
	for _, r := range home.LastRuns {
		kinds = append(kinds, r.Kind+":"+r.Status)
	}
	if want := []string{"backup:failed", "verify:failed"}; !slices.Equal(kinds, want) {
		t.Errorf("home's last runs = %v, want %v (a cancelled run decides nothing)", kinds, want)
	}
	if home.LastRuns[0].ID != failed.ID {
		t.Errorf("home's last backup run = %d, want %d", home.LastRuns[0].ID, failed.ID)
	}
	if !home.LastGoodSnapshot.Equal(good.EndedAt) {
		t.Errorf("home's last good snapshot = %s, want the end of run %d (%s)", home.LastGoodSnapshot, good.ID, good.EndedAt)
	}
	if home.LastVerify == nil || home.LastVerify.ErrorClass != pass.ClassIntegrity {
		t.Errorf("home's last verify = %+v, want the failed one", home.LastVerify)
	}
	if !home.LastDeepVerify.Equal(deep.EndedAt) {
		t.Errorf("home's last deep verify = %s, want %s", home.LastDeepVerify, deep.EndedAt)
	}
	if !slices.Equal(home.VerifyFailedSnapshots, []string{"run-1-data"}) {
		t.Errorf("home's failed snapshots = %v", home.VerifyFailedSnapshots)
	}
	if want := t0.Add(6 * time.Hour); !etc.LastGoodSnapshot.Equal(want) {
		t.Errorf("etc's last good snapshot = %s, want the catalog's %s", etc.LastGoodSnapshot, want)
	}
	if len(etc.LastRuns) != 0 || etc.LastVerify != nil || !etc.LastDeepVerify.IsZero() {
		t.Errorf("etc has runs: %+v", etc)
	}
	if len(f.Queued) != 1 || f.Queued[0].ID != queued.ID || len(f.Running) != 0 {
		t.Errorf("queued %+v running %+v, want run %d queued", f.Queued, f.Running, queued.ID)
	}
	if got := f.LastBackupAdded["local"]; got != 100 {
		t.Errorf("last backup added into local = %d, want 100 (failed runs do not count)", got)
	}
}
