package db

import (
	"context"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// runOnce queues a run of kind for job, starts it at the clock's time,
// advances the clock by took and finishes it as end says.
func runOnce(t *testing.T, d *DB, clk *clock, job, kind string, took time.Duration, end pass.Run) pass.Run {
	t.Helper()
	r, err := d.QueueRun(context.Background(), job, pass.Run{Kind: kind}, admin)
	if err != nil {
		t.Fatal(err)
	}
	start(t, d, clk.Now(), "tok")
	clk.Add(took)
	end.ID = r.ID
	if ok, err := d.Finish(context.Background(), end, "tok", nil); err != nil || !ok {
		t.Fatalf("finish run %d: %v %v", r.ID, ok, err)
	}
	return mustRun(t, d, r.ID)
}

func TestMetricsState(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "hourly"), def(t, "b", "hourly"), def(t, "fresh", "manual"), def(t, "gone", "hourly"))
	snap := func(id string) []pass.SnapshotRef {
		return []pass.SnapshotRef{{RepositoryID: "r1", SnapshotID: id, Source: "/src"}}
	}

	// a: a good backup, its verify, then a failed backup and a run
	// cancelled before it started (which must not hide the failure).
	good := runOnce(t, d, clk, "a", pass.KindBackup, 90*time.Second, pass.Run{Status: pass.StatusSucceeded,
		Figures: pass.Figures{BytesRead: 1000, BytesAdded: 100, Files: 3}, Snapshots: snap("s1")})
	runOnce(t, d, clk, "a", pass.KindVerify, 10*time.Second, pass.Run{Status: pass.StatusSucceeded})
	clk.Add(time.Hour)
	failed := runOnce(t, d, clk, "a", pass.KindBackup, 5*time.Second, pass.Run{Status: pass.StatusFailed,
		ErrorClass: pass.ClassSource, ErrorCode: "ALL_SOURCES_FAILED", Message: "nothing could be read"})
	cancelled := queue(t, d, "a")
	if _, err := d.CancelRun(ctx, cancelled.ID, admin); err != nil {
		t.Fatal(err)
	}

	// b: two partial backups.
	runOnce(t, d, clk, "b", pass.KindBackup, time.Minute, pass.Run{Status: pass.StatusPartialFailure,
		Figures:   pass.Figures{BytesRead: 50, FilesSkipped: 2, Skipped: []pass.Skipped{{Object: "/x", Reason: "denied"}}},
		Snapshots: snap("s2")})
	runOnce(t, d, clk, "b", pass.KindBackup, time.Minute, pass.Run{Status: pass.StatusPartialFailure,
		Figures: pass.Figures{FilesSkipped: 1}})

	// gone: removed from the configuration after a run.
	runOnce(t, d, clk, "gone", pass.KindBackup, time.Second, pass.Run{Status: pass.StatusSucceeded})
	syncJobs(t, d, clk, def(t, "a", "hourly"), def(t, "b", "hourly"), def(t, "fresh", "manual"))

	// An active run is no last run.
	queue(t, d, "fresh")
	start(t, d, clk.Now(), "tok2")

	st, err := d.MetricsState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	jobs := map[string]MetricsJob{}
	for _, j := range st.Jobs {
		names = append(names, j.Name)
		jobs[j.Name] = j
	}
	if len(names) != 3 || names[0] != "a" || names[1] != "b" || names[2] != "fresh" {
		t.Fatalf("jobs %v, want the live ones by name: a b fresh", names)
	}

	a := jobs["a"]
	if got := a.LastRuns[pass.KindBackup]; got.ID != failed.ID || got.Status != pass.StatusFailed || got.ErrorCode != "ALL_SOURCES_FAILED" {
		t.Errorf("a's last backup: run %d %s %s, want the failed run %d (not the one cancelled before it started)", got.ID, got.Status, got.ErrorCode, failed.ID)
	}
	if got := a.LastRuns[pass.KindVerify]; got.Status != pass.StatusSucceeded || got.EndedAt.Sub(got.StartedAt) != 10*time.Second {
		t.Errorf("a's last verify: %+v", got)
	}
	if len(a.LastRuns) != 2 {
		t.Errorf("a has last runs of %d kinds, want 2", len(a.LastRuns))
	}
	if !a.LastSuccess.Equal(good.EndedAt) {
		t.Errorf("a: last success %v, want %v", a.LastSuccess, good.EndedAt)
	}

	b := jobs["b"]
	if !b.LastSuccess.IsZero() {
		t.Errorf("b never fully succeeded, last success %v", b.LastSuccess)
	}
	if got := b.LastRuns[pass.KindBackup]; got.Status != pass.StatusPartialFailure || got.Figures.FilesSkipped != 1 {
		t.Errorf("b's last backup: %+v, want the later partial run (1 file skipped)", got)
	}

	fresh := jobs["fresh"]
	if len(fresh.LastRuns) != 0 || !fresh.LastSuccess.IsZero() {
		t.Errorf("fresh never ran, got %+v", fresh)
	}
}

func TestMetricsStateEmpty(t *testing.T) {
	d, _ := newDB(t)
	st, err := d.MetricsState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 0 {
		t.Fatalf("empty database: %+v", st)
	}
}

// MetricsState reads the status facts and the last runs in one read
// transaction: a run that ends between the two reads is in neither, so
// the last run of the facts (last_run_failed) and of the figures
// (nightjar_backup_last_run_status) agree; the next read sees it in both.
func TestMetricsStateIsOneView(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "hourly"))
	good := runOnce(t, d, clk, "a", pass.KindBackup, time.Minute, pass.Run{Status: pass.StatusSucceeded})
	clk.Add(time.Hour)
	running := queue(t, d, "a")
	start(t, d, clk.Now(), "tok")
	clk.Add(time.Minute)
	ended := false
	d.afterMetricsStatus = func() {
		if ended {
			return
		}
		ended = true
		fail := pass.Run{ID: running.ID, Status: pass.StatusFailed, ErrorClass: pass.ClassSource, ErrorCode: "ALL_SOURCES_FAILED", Message: "gone"}
		if ok, err := d.Finish(ctx, fail, "tok", nil); err != nil || !ok {
			t.Errorf("finish run %d between the reads: %v, %v", running.ID, ok, err)
		}
	}
	lastBackups := func() (fromStatus, fromFigures int64) {
		t.Helper()
		st, err := d.MetricsState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Status.Jobs) != 1 || len(st.Jobs) != 1 {
			t.Fatalf("jobs %+v and %+v, want a in both", st.Status.Jobs, st.Jobs)
		}
		for _, r := range st.Status.Jobs[0].LastRuns {
			if r.Kind == pass.KindBackup {
				fromStatus = r.ID
			}
		}
		return fromStatus, st.Jobs[0].LastRuns[pass.KindBackup].ID
	}
	if s, f := lastBackups(); s != good.ID || f != good.ID {
		t.Errorf("while run %d ended during the read: last backup %d in the status facts, %d in the figures; want %d in both", running.ID, s, f, good.ID)
	}
	if !ended {
		t.Fatal("the hook between the reads was not called")
	}
	if s, f := lastBackups(); s != running.ID || f != running.ID {
		t.Errorf("after run %d ended: last backup %d in the status facts, %d in the figures; want %d in both", running.ID, s, f, running.ID)
	}
}
