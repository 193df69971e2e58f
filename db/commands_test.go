package db

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

func TestQueueRun(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	a := def(t, "a", "hourly")
	a.Priority = "high"
	syncJobs(t, d, clk, a)
	if _, err := d.PauseJob(ctx, "a", admin); err != nil {
		t.Fatal(err)
	}

	r, err := d.QueueRun(ctx, "a", pass.Run{}, admin)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID == 0 || r.Job != "a" || r.Status != pass.StatusQueued || r.Trigger != pass.TriggerManual || r.Attempt != 1 ||
		r.Priority != "high" || !r.ScheduledAt.Equal(t0) || !r.QueuedAt.Equal(t0) {
		t.Fatalf("queued run: %+v", r)
	}
	if !mustJob(t, d, "a").Paused {
		t.Fatal("queueing a run resumed the paused job")
	}
	_, err = d.QueueRun(ctx, "a", pass.Run{}, admin)
	if !errors.Is(err, pass.ErrActive) {
		t.Fatalf("second run: err = %v, want ErrActive", err)
	}
	// The error names the run in the way, so that the user knows which to
	// wait for or cancel.
	var active *ActiveRunError
	if !errors.As(err, &active) || active.Job != "a" || active.RunID != r.ID || active.Status != pass.StatusQueued {
		t.Fatalf("second run: err = %v (%+v), want an ActiveRunError naming run %d, queued", err, active, r.ID)
	}
	if _, err := d.QueueRun(ctx, "nope", pass.Run{}, admin); !errors.Is(err, pass.ErrUnknownJob) {
		t.Fatalf("unknown job: err = %v, want ErrUnknownJob", err)
	}
	if _, err := d.QueueRun(ctx, "a", pass.Run{}, Actor{}); err == nil {
		t.Fatal("queued without an actor")
	}
	if _, err := d.QueueRun(ctx, "a", pass.Run{Status: pass.StatusRunning}, admin); err == nil {
		t.Fatal("queued a running run")
	}
	e := audits(t, d)
	last := e[len(e)-1]
	if last.Action != AuditTrigger || last.Target != "a" || last.Actor != admin || !last.At.Equal(t0) ||
		!strings.Contains(last.Detail, "run 1 queued") {
		t.Fatalf("audit row: %+v", last)
	}
	if n := count(t, d, `SELECT count(*) FROM audit WHERE action = 'trigger'`); n != 1 {
		t.Fatalf("%d trigger rows, want 1 (refused triggers write none)", n)
	}
}

func TestCancelRun(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"), def(t, "b", "manual"))

	// A running run gets its cancellation requested; its runner sees it.
	running := queue(t, d, "a")
	start(t, d, clk.Now(), "tok")
	queued := queue(t, d, "b")
	now := clk.Add(time.Minute)

	got, err := d.CancelRun(ctx, running.ID, admin)
	if err != nil || got.Status != pass.StatusRunning {
		t.Fatalf("cancel running: %+v, %v", got, err)
	}
	if reply, err := d.Heartbeat(ctx, running.ID, "tok", now, nil); err != nil || reply != pass.HeartbeatCancel {
		t.Fatalf("heartbeat after cancel: %v, %v", reply, err)
	}
	if _, err := d.CancelRun(ctx, running.ID, admin); err != nil {
		t.Fatalf("asking again: %v", err)
	}

	// A queued run is cancelled at once.
	got, err = d.CancelRun(ctx, queued.ID, admin)
	if err != nil || got.Status != pass.StatusCancelled || !got.EndedAt.Equal(now) || got.ErrorClass != pass.ClassCancelled ||
		!strings.Contains(got.Message, "alice@backup1") {
		t.Fatalf("cancel queued: %+v, %v", got, err)
	}
	if _, err := d.CancelRun(ctx, queued.ID, admin); !errors.Is(err, ErrRunEnded) {
		t.Fatalf("cancel an ended run: err = %v, want ErrRunEnded", err)
	}
	if _, err := d.CancelRun(ctx, 999, admin); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel an unknown run: err = %v, want ErrNotFound", err)
	}

	var rows []string
	for _, e := range audits(t, d) {
		if e.Action == AuditCancel {
			rows = append(rows, e.Target+": "+e.Detail)
		}
	}
	want := []string{"run 1: job a: cancellation of running run requested", "run 2: job b: queued run cancelled"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("cancel audit rows:\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	// The runner records the cancellation; the job may run again.
	if ok, err := d.Finish(ctx, pass.Run{ID: running.ID, Status: pass.StatusCancelled, ErrorClass: pass.ClassCancelled}, "tok", nil); !ok || err != nil {
		t.Fatal(ok, err)
	}
	queue(t, d, "a")
}

func TestPauseResume(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "hourly"))

	changed, err := d.PauseJob(ctx, "a", admin)
	if err != nil || !changed {
		t.Fatalf("pause: %v, %v", changed, err)
	}
	if changed, err := d.PauseJob(ctx, "a", admin); err != nil || changed {
		t.Fatalf("pause again: %v, %v", changed, err)
	}
	if _, err := d.PauseJob(ctx, "nope", admin); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("pause unknown: %v", err)
	}

	// A paused job is not claimed, however long it waits.
	now := clk.Add(7 * 24 * time.Hour)
	claimed, err := d.ClaimDue(ctx, now, scheduledPlan)
	if err != nil || len(claimed) != 0 {
		t.Fatalf("claimed a paused job: %v, %v", claimed, err)
	}

	next := now.Add(time.Hour).Truncate(time.Hour)
	if changed, err := d.ResumeJob(ctx, "a", next, admin); err != nil || !changed {
		t.Fatalf("resume: %v, %v", changed, err)
	}
	if changed, err := d.ResumeJob(ctx, "a", next.Add(time.Hour), admin); err != nil || changed {
		t.Fatalf("resume again: %v, %v", changed, err)
	}
	j := mustJob(t, d, "a")
	if j.Paused || !j.NextRun.Equal(next) {
		t.Fatalf("resumed job: paused %v, next run %v, want %v", j.Paused, j.NextRun, next)
	}
	if claimed, err := d.ClaimDue(ctx, now, scheduledPlan); err != nil || len(claimed) != 0 {
		t.Fatalf("a resumed job fired at once: %v, %v", claimed, err)
	}

	var rows []string
	for _, e := range audits(t, d) {
		if e.Actor == admin {
			rows = append(rows, e.Action+" "+e.Target+" "+e.Detail)
		}
	}
	want := []string{"pause a ", "resume a next run " + next.Format(time.RFC3339)}
	if strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Fatalf("audit rows %q, want %q", rows, want)
	}
}

func TestJobsAndRuns(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	b := def(t, "b", "daily 02:00", "a")
	b.Backup.Bandwidth = 1 << 20
	syncJobs(t, d, clk, def(t, "a", "hourly"), b)

	first := queue(t, d, "a")
	start(t, d, clk.Now(), "tok")
	clk.Add(time.Minute)
	if ok, err := d.Finish(ctx, pass.Run{ID: first.ID, Status: pass.StatusSucceeded,
		Snapshots: []pass.SnapshotRef{{RepositoryID: "r", SnapshotID: "run-1-data", Source: "/data"}}}, "tok", nil); !ok || err != nil {
		t.Fatal(ok, err)
	}
	second := queue(t, d, "a")
	third := queue(t, d, "b")

	jobs, err := d.Jobs(ctx)
	if err != nil || len(jobs) != 2 || jobs[0].Name != "a" || jobs[1].Name != "b" {
		t.Fatalf("jobs: %+v, %v", jobs, err)
	}
	a := jobs[0]
	if a.LastRun == nil || a.LastRun.ID != first.ID || len(a.LastRun.Snapshots) != 1 || a.Active == nil || a.Active.ID != second.ID ||
		a.Repository != "local" || a.Priority != "normal" || !a.CreatedAt.Equal(t0) {
		t.Fatalf("job a: %+v", a)
	}
	if jb := jobs[1]; jb.LastRun != nil || jb.Active == nil || jb.Active.ID != third.ID || jb.Bandwidth != 1<<20 ||
		strings.Join(jb.DependsOn, ",") != "a" {
		t.Fatalf("job b: %+v", jb)
	}

	all, err := d.Runs(ctx, RunFilter{})
	if err != nil || len(all) != 3 || all[0].ID != third.ID || all[2].ID != first.ID {
		t.Fatalf("all runs, newest first: %v, %v", all, err)
	}
	if got := all[2].Snapshots; len(got) != 1 || got[0].SnapshotID != "run-1-data" {
		t.Fatalf("snapshots of run 1: %+v", got)
	}
	ofA, err := d.Runs(ctx, RunFilter{Job: "a", Limit: 1})
	if err != nil || len(ofA) != 1 || ofA[0].ID != second.ID {
		t.Fatalf("latest run of a: %v, %v", ofA, err)
	}
	if _, err := d.Runs(ctx, RunFilter{Job: "nope"}); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("runs of an unknown job: err = %v", err)
	}
	if _, err := d.Run(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown run: err = %v", err)
	}
}

func TestRecordAudit(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	at := t0.Add(-time.Hour)
	if err := d.RecordAudit(ctx, AuditEntry{At: at, Actor: admin, Action: AuditPause, Target: "x", Detail: "by hand"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	if err := d.RecordAudit(ctx, AuditEntry{Actor: admin, Action: AuditResume, Target: "x"}); err != nil {
		t.Fatal(err)
	}
	if err := d.RecordAudit(ctx, AuditEntry{Actor: admin, Action: "explode", Target: "x"}); err == nil {
		t.Fatal("recorded an unknown action")
	}
	if err := d.RecordAudit(ctx, AuditEntry{Action: AuditPause, Target: "x"}); err == nil {
		t.Fatal("recorded without an actor")
	}
	latest, err := d.Audit(ctx, AuditFilter{Limit: 1})
	if err != nil || len(latest) != 1 || latest[0].Action != AuditResume || !latest[0].At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("latest audit row: %+v, %v", latest, err)
	}
	all := audits(t, d)
	if len(all) != 2 || !all[0].At.Equal(at) || all[0].Detail != "by hand" || all[0].Actor != admin {
		t.Fatalf("audit rows: %+v", all)
	}
}

// A run by hand of a paused job is refused, writing nothing, unless forced;
// a forced run is audited as such and leaves the job paused.
func TestQueueJobRunRefusesAPausedJobUnlessForced(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "hourly"), def(t, "b", "hourly"))
	if _, err := d.PauseJob(ctx, "a", admin); err != nil {
		t.Fatal(err)
	}
	if _, err := d.QueueJobRun(ctx, "a", pass.Run{}, admin, false); !errors.Is(err, ErrPaused) {
		t.Fatalf("paused job: err = %v, want ErrPaused", err)
	}
	if n := count(t, d, `SELECT count(*) FROM runs`); n != 0 {
		t.Fatalf("%d runs after a refused run, want none", n)
	}
	if n := count(t, d, `SELECT count(*) FROM audit WHERE action = 'trigger'`); n != 0 {
		t.Fatalf("%d trigger rows after a refused run, want none", n)
	}
	if _, err := d.QueueJobRun(ctx, "b", pass.Run{}, admin, false); err != nil {
		t.Fatalf("job not paused: %v", err)
	}
	r, err := d.QueueJobRun(ctx, "a", pass.Run{}, admin, true)
	if err != nil || r.Status != pass.StatusQueued {
		t.Fatalf("forced run: %+v, %v", r, err)
	}
	if !mustJob(t, d, "a").Paused {
		t.Fatal("a forced run resumed the paused job")
	}
	e := audits(t, d)
	last := e[len(e)-1]
	if last.Action != AuditTrigger || last.Target != "a" || !strings.Contains(last.Detail, "forced although the job is paused") {
		t.Fatalf("audit row of the forced run: %+v", last)
	}
	for _, row := range e[:len(e)-1] {
		if strings.Contains(row.Detail, "forced") {
			t.Fatalf("a run of a job not paused is audited as forced: %+v", row)
		}
	}
}
