package db

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

func TestSyncJobs(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)

	// A new job gets its next run at once; a manual one gets none.
	syncJobs(t, d, clk, def(t, "a", "hourly"), def(t, "b", "daily 02:00", "a"), def(t, "m", "manual"))
	a := mustJob(t, d, "a")
	if want := t0.Add(time.Hour); !a.NextRun.Equal(want) {
		t.Fatalf("a: next run %v, want %v", a.NextRun, want)
	}
	if b := mustJob(t, d, "b"); !b.NextRun.Equal(time.Date(2026, 3, 2, 2, 0, 0, 0, time.UTC)) || len(b.DependsOn) != 1 || b.DependsOn[0] != "a" {
		t.Fatalf("b: next run %v, depends on %v", b.NextRun, b.DependsOn)
	}
	if m := mustJob(t, d, "m"); !m.NextRun.IsZero() {
		t.Fatalf("manual job: next run %v", m.NextRun)
	}

	// An unchanged spec keeps its next run, even when next would say otherwise.
	clk.Add(3 * time.Hour)
	syncJobs(t, d, clk, def(t, "a", "hourly"), def(t, "b", "daily 02:00", "a"), def(t, "m", "manual"))
	if got := mustJob(t, d, "a").NextRun; !got.Equal(a.NextRun) {
		t.Fatalf("unchanged job: next run moved from %v to %v", a.NextRun, got)
	}

	// A changed spec recomputes it from now: slots before the change are not caught up.
	syncJobs(t, d, clk, def(t, "a", "hourly :30"), def(t, "b", "daily 02:00", "a"), def(t, "m", "manual"))
	if got, want := mustJob(t, d, "a").NextRun, t0.Add(3*time.Hour+30*time.Minute); !got.Equal(want) {
		t.Fatalf("changed job: next run %v, want %v", got, want)
	}

	// A removed job is soft-deleted: its runs stay, its queued run is cancelled.
	done := queue(t, d, "b")
	start(t, d, clk.Now(), "tok")
	if ok, err := d.Finish(ctx, pass.Run{ID: done.ID, Status: pass.StatusSucceeded}, "tok", nil); err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}
	waiting := queue(t, d, "b")
	syncJobs(t, d, clk, def(t, "a", "hourly :30"), def(t, "m", "manual"))
	if _, err := d.JobByName(ctx, "b"); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("removed job: err = %v, want ErrUnknownJob", err)
	}
	if got := mustRun(t, d, done.ID); got.Status != pass.StatusSucceeded || got.Job != "b" {
		t.Fatalf("run of the removed job: %+v", got)
	}
	if got := mustRun(t, d, waiting.ID); got.Status != pass.StatusCancelled || got.EndedAt.IsZero() {
		t.Fatalf("queued run of the removed job: status %s, ended %v", got.Status, got.EndedAt)
	}
	if _, err := d.QueueRun(ctx, "b", pass.Run{}, admin); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("queue for a removed job: err = %v", err)
	}

	// Adding it again makes a new live job; the old runs stay listed by name.
	syncJobs(t, d, clk, def(t, "a", "hourly :30"), def(t, "b", "daily 03:00"), def(t, "m", "manual"))
	b := mustJob(t, d, "b")
	if b.ID == done.JobID || b.LastRun != nil || b.Paused {
		t.Fatalf("re-added job: %+v", b)
	}
	runs, err := d.Runs(ctx, RunFilter{Job: "b"})
	if err != nil || len(runs) != 2 {
		t.Fatalf("runs of b: %d, %v", len(runs), err)
	}
	if n := count(t, d, `SELECT count(*) FROM jobs WHERE name = 'b'`); n != 2 {
		t.Fatalf("%d rows for job b, want 2 (one removed, one live)", n)
	}

	var got []string
	for _, e := range audits(t, d) {
		if e.Actor.User == "config" {
			got = append(got, e.Action+" "+e.Target)
		}
	}
	want := []string{"create a", "create b", "create m", "change a", "delete b", "create b"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("config audit rows: %v, want %v", got, want)
	}
}

func TestSyncJobsRefusesBadDefinitionsAndChangesNothing(t *testing.T) {
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "hourly"))
	cases := map[string][]pass.JobDef{
		"unknown dependency": {def(t, "a", "hourly"), def(t, "b", "hourly", "nope")},
		"self-dependency":    {def(t, "a", "hourly", "a")},
		"duplicate name":     {def(t, "a", "hourly"), def(t, "a", "daily 01:00")},
		"zero-named job":     {def(t, "", "hourly")},
		"negative bandwidth": {{Name: "a", Repository: "local", Backup: pass.BackupDef{Bandwidth: -1}}},
	}
	for name, defs := range cases {
		t.Run(name, func(t *testing.T) {
			if err := d.SyncJobs(context.Background(), defs, specOf, nextAfter(clk)); err == nil {
				t.Fatal("accepted")
			}
			jobs, err := d.Jobs(context.Background())
			if err != nil || len(jobs) != 1 || jobs[0].Name != "a" || jobs[0].Spec != "hourly (UTC)" {
				t.Fatalf("jobs after a refused sync: %+v, %v", jobs, err)
			}
		})
	}
}

func TestSyncJobsFollowsPriorityRepositoryBandwidth(t *testing.T) {
	d, clk := newDB(t)
	a := def(t, "a", "hourly")
	syncJobs(t, d, clk, a)
	next := mustJob(t, d, "a").NextRun
	a.Priority, a.Repository, a.Backup.Bandwidth = "critical", "offsite", 50<<20
	clk.Add(2 * time.Hour)
	syncJobs(t, d, clk, a)
	j := mustJob(t, d, "a")
	if j.Priority != "critical" || j.Repository != "offsite" || j.Bandwidth != 50<<20 || !j.NextRun.Equal(next) {
		t.Fatalf("job: %+v", j)
	}
	a.Backup.Bandwidth = 0
	syncJobs(t, d, clk, a)
	if j := mustJob(t, d, "a"); j.Bandwidth != 0 {
		t.Fatalf("unlimited bandwidth stored as %d", j.Bandwidth)
	}
}

func TestClaimDue(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk,
		def(t, "due", "hourly"), def(t, "later", "daily 23:00"), def(t, "paused", "hourly"),
		def(t, "busy", "hourly"), def(t, "gone", "hourly"), def(t, "manual", "manual"), def(t, "quiet", "hourly"))
	if _, err := d.PauseJob(ctx, "paused", admin); err != nil {
		t.Fatal(err)
	}
	busy := queue(t, d, "busy")
	syncJobs(t, d, clk,
		def(t, "due", "hourly"), def(t, "later", "daily 23:00"), def(t, "paused", "hourly"),
		def(t, "busy", "hourly"), def(t, "manual", "manual"), def(t, "quiet", "hourly"))
	now := clk.Add(90 * time.Minute) // the hourly jobs are due since 13:00

	var planned []string
	claimed, err := d.ClaimDue(ctx, now, func(j pass.Job) (time.Time, *pass.Run) {
		planned = append(planned, j.Name)
		if !j.NextRun.Equal(t0.Add(time.Hour)) || j.Paused || j.ID == 0 || j.Spec != "hourly (UTC)" {
			t.Errorf("plan got %+v", j)
		}
		if j.Name == "quiet" { // due, but its policy queues nothing this time
			return j.NextRun.Add(24 * time.Hour), nil
		}
		next, run := scheduledPlan(j)
		run.MissedSlots = 2
		return next, run
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(planned, ",") != "due,quiet" {
		t.Fatalf("planned %v, want due and quiet", planned)
	}
	if len(claimed) != 1 {
		t.Fatalf("claimed %d runs, want 1", len(claimed))
	}
	r := claimed[0]
	if r.Job != "due" || r.Status != pass.StatusQueued || r.Trigger != pass.TriggerSchedule || r.Attempt != 1 ||
		!r.ScheduledAt.Equal(t0.Add(time.Hour)) || !r.QueuedAt.Equal(now) || r.MissedSlots != 2 || r.Priority != "normal" {
		t.Fatalf("claimed run: %+v", r)
	}
	if got := mustJob(t, d, "due").NextRun; !got.Equal(t0.Add(2 * time.Hour)) {
		t.Fatalf("due job: next run %v, want the slot after the claimed one", got)
	}
	if got := mustJob(t, d, "quiet").NextRun; !got.Equal(t0.Add(25 * time.Hour)) {
		t.Fatalf("quiet job: next run %v", got)
	}
	if got := mustJob(t, d, "busy").Active; got == nil || got.ID != busy.ID {
		t.Fatalf("busy job: active run %+v, want its manual one", got)
	}

	// Claimed jobs are not due again until their next slot.
	again, err := d.ClaimDue(ctx, now, func(j pass.Job) (time.Time, *pass.Run) {
		t.Errorf("job %s planned twice", j.Name)
		return scheduledPlan(j)
	})
	if err != nil || len(again) != 0 {
		t.Fatalf("second claim: %v, %v", again, err)
	}
}

func TestFinish(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"))
	run := queue(t, d, "a")
	start(t, d, clk.Now(), "tok")
	end := clk.Add(time.Hour)

	// A succeeded run that skipped files is refused, and nothing is written:
	// not the end, not the next run.
	bad := pass.Run{ID: run.ID, Status: pass.StatusSucceeded, EndedAt: end,
		Figures: pass.Figures{FilesSkipped: 2, Skipped: []pass.Skipped{{Object: "/x", Reason: "permission denied"}}}}
	if _, err := d.Finish(ctx, bad, "tok", &pass.Run{Trigger: pass.TriggerRetry, Attempt: 2}); err == nil {
		t.Fatal("a succeeded run with skipped files was recorded")
	}
	if got := mustRun(t, d, run.ID); got.Status != pass.StatusRunning || count(t, d, `SELECT count(*) FROM runs`) != 1 {
		t.Fatalf("a refused finish changed something: %+v", got)
	}
	if _, err := d.Finish(ctx, pass.Run{ID: run.ID, Status: pass.StatusRunning}, "tok", nil); err == nil {
		t.Fatal("finished as running")
	}

	// A failed run and its retry are written together.
	fin := pass.Run{ID: run.ID, Status: pass.StatusFailed, EndedAt: end, ErrorClass: pass.ClassNetwork,
		ErrorCode: "UNREACHABLE", Message: "connection refused; 1 objects skipped: permission denied",
		Figures: pass.Figures{BytesRead: 100, BytesAdded: 40, Files: 3, FilesSkipped: 1,
			Skipped: []pass.Skipped{{Object: "/x", Reason: "permission denied"}}},
		Snapshots: []pass.SnapshotRef{{RepositoryID: "r1", SnapshotID: "run-1-etc", Source: "/etc"}}}
	retry := &pass.Run{Trigger: pass.TriggerRetry, Attempt: 2, ScheduledAt: run.ScheduledAt, NotBefore: end.Add(30 * time.Second)}
	if ok, err := d.Finish(ctx, fin, "tok", retry); err != nil || !ok {
		t.Fatalf("finish: %v, %v", ok, err)
	}
	got := mustRun(t, d, run.ID)
	if got.Status != pass.StatusFailed || !got.EndedAt.Equal(end) || got.ErrorClass != pass.ClassNetwork || got.ErrorCode != "UNREACHABLE" ||
		got.Message != fin.Message || got.Figures.BytesRead != 100 || got.Figures.BytesAdded != 40 || got.Figures.Files != 3 ||
		got.Figures.FilesSkipped != 1 || len(got.Figures.Skipped) != 1 || got.Figures.Skipped[0] != fin.Figures.Skipped[0] ||
		len(got.Snapshots) != 1 || got.Snapshots[0] != fin.Snapshots[0] {
		t.Fatalf("finished run: %+v", got)
	}
	next := mustJob(t, d, "a").Active
	if next == nil || next.Trigger != pass.TriggerRetry || next.Attempt != 2 || !next.QueuedAt.Equal(end) ||
		!next.NotBefore.Equal(retry.NotBefore) || !next.ScheduledAt.Equal(run.ScheduledAt) {
		t.Fatalf("retry: %+v", next)
	}
	if ok, err := d.Finish(ctx, fin, "tok", nil); err != nil || ok {
		t.Fatalf("finishing twice: %v, %v", ok, err)
	}
}

func TestFinishOfARemovedJobQueuesNothing(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"), def(t, "b", "manual"))
	run := queue(t, d, "a")
	start(t, d, clk.Now(), "tok")
	syncJobs(t, d, clk, def(t, "b", "manual"))
	ok, err := d.Finish(ctx, pass.Run{ID: run.ID, Status: pass.StatusInterrupted, ErrorClass: pass.ClassCancelled},
		"tok", &pass.Run{Trigger: pass.TriggerManual})
	if err != nil || !ok {
		t.Fatalf("finish: %v, %v", ok, err)
	}
	if n := count(t, d, `SELECT count(*) FROM runs`); n != 1 {
		t.Fatalf("%d runs, want the finished one only", n)
	}
}

// A snapshot reference the database cannot keep (here an empty snapshot ID,
// which the schema refuses) does not fail the run: the data is in the
// repository. The result is written and the message says what was lost.
func TestFinishKeepsTheResultWhenASnapshotReferenceFails(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"))
	run := queue(t, d, "a")
	start(t, d, clk.Now(), "tok")
	fin := pass.Run{ID: run.ID, Status: pass.StatusSucceeded, EndedAt: clk.Add(time.Minute), Message: "done",
		Snapshots: []pass.SnapshotRef{{RepositoryID: "r1", SnapshotID: "run-1-a", Source: "/a"}, {RepositoryID: "r1", SnapshotID: "", Source: "/b"}}}
	if ok, err := d.Finish(ctx, fin, "tok", nil); err != nil || !ok {
		t.Fatalf("finish: %v, %v", ok, err)
	}
	got := mustRun(t, d, run.ID)
	if got.Status != pass.StatusSucceeded || !strings.Contains(got.Message, "snapshot references not recorded") {
		t.Fatalf("run = %+v: want succeeded, with the lost references in its message", got)
	}
	if len(got.Snapshots) != 0 {
		t.Errorf("snapshots = %+v: the savepoint should have dropped the partial references", got.Snapshots)
	}
}
