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
		"negative bandwidth": {{Name: "a", Repository: "local", Bandwidth: -1}},
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
	a.Priority, a.Repository, a.Bandwidth = "critical", "offsite", 50<<20
	clk.Add(2 * time.Hour)
	syncJobs(t, d, clk, a)
	j := mustJob(t, d, "a")
	if j.Priority != "critical" || j.Repository != "offsite" || j.Bandwidth != 50<<20 || !j.NextRun.Equal(next) {
		t.Fatalf("job: %+v", j)
	}
	a.Bandwidth = 0
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

func TestAdmit(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"), def(t, "b", "manual"), def(t, "c", "manual"), def(t, "d", "manual"), def(t, "e", "manual"))
	// d succeeded, e partially failed: that is what dependencies see.
	for job, status := range map[string]string{"d": pass.StatusSucceeded, "e": pass.StatusPartialFailure} {
		r := queue(t, d, job)
		start(t, d, t0, "tok-"+job)
		fin := pass.Run{ID: r.ID, Status: status}
		if status == pass.StatusPartialFailure {
			fin.Figures.FilesSkipped = 1
		}
		if ok, err := d.Finish(ctx, fin, "tok-"+job, nil); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	running := queue(t, d, "d")
	start(t, d, t0, "tok-d2")
	ra := queue(t, d, "a")
	rb := queue(t, d, "b")
	later, err := d.QueueRun(ctx, "c", pass.Run{Trigger: pass.TriggerRetry, Attempt: 2, NotBefore: t0.Add(time.Minute)}, admin)
	if err != nil {
		t.Fatal(err)
	}

	now := clk.Add(10 * time.Second)
	var seen pass.AdmitState
	started, err := d.Admit(ctx, now, func(s pass.AdmitState) []pass.Admission {
		seen = s
		return []pass.Admission{
			{RunID: ra.ID, Admit: true, Owner: "tok-a", Runner: "host:42"},
			{RunID: rb.ID, HeldReason: "waiting: repository local at its limit of 1"},
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen.Queued) != 2 || seen.Queued[0].ID != ra.ID || seen.Queued[1].ID != rb.ID {
		t.Fatalf("queued runs handed: %+v (the one not before %v must wait)", seen.Queued, later.NotBefore)
	}
	if len(seen.Running) != 1 || seen.Running[0].ID != running.ID {
		t.Fatalf("running runs handed: %+v", seen.Running)
	}
	wantLast := map[string]bool{"a": false, "b": false, "c": false, "d": true, "e": false}
	for job, want := range wantLast {
		if got, ok := seen.LastSucceeded[job]; !ok || got != want {
			t.Errorf("LastSucceeded[%s] = %v (present %v), want %v", job, got, ok, want)
		}
	}
	if len(started) != 1 {
		t.Fatalf("started %d runs", len(started))
	}
	s := started[0]
	if s.ID != ra.ID || s.Status != pass.StatusRunning || s.Owner != "tok-a" || s.Runner != "host:42" ||
		!s.StartedAt.Equal(now) || !s.HeartbeatAt.Equal(now) || s.HeldReason != "" {
		t.Fatalf("started run: %+v", s)
	}
	if got := mustRun(t, d, rb.ID); got.Status != pass.StatusQueued || got.HeldReason != "waiting: repository local at its limit of 1" {
		t.Fatalf("held run: %+v", got)
	}
	if got := mustRun(t, d, later.ID); got.Status != pass.StatusQueued || got.HeldReason != "" {
		t.Fatalf("run not yet due: %+v", got)
	}

	// Once its backoff is over, the retry is handed too.
	clk.Add(time.Minute)
	start(t, d, clk.Now(), "tok-c")
	if got := mustRun(t, d, later.ID); got.Status != pass.StatusRunning {
		t.Fatalf("retry after its backoff: %s", got.Status)
	}
}

func TestAdmitRefusesBadDecisionsAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"), def(t, "b", "manual"))
	ra, rb := queue(t, d, "a"), queue(t, d, "b")
	cases := map[string][]pass.Admission{
		"held without a reason":   {{RunID: ra.ID, Admit: true, Owner: "tok"}, {RunID: rb.ID}},
		"admitted without owner":  {{RunID: ra.ID, Admit: true}},
		"a run it was not handed": {{RunID: ra.ID, Admit: true, Owner: "tok"}, {RunID: 999, Admit: true, Owner: "tok"}},
		"a run decided twice":     {{RunID: ra.ID, Admit: true, Owner: "tok"}, {RunID: ra.ID, HeldReason: "x"}},
	}
	for name, decision := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := d.Admit(ctx, clk.Now(), func(pass.AdmitState) []pass.Admission { return decision })
			if err == nil {
				t.Fatal("accepted")
			}
			for _, id := range []int64{ra.ID, rb.ID} {
				if r := mustRun(t, d, id); r.Status != pass.StatusQueued || r.HeldReason != "" {
					t.Fatalf("run %d after a refused decision: %+v", id, r)
				}
			}
		})
	}
}

func TestHeartbeatAndFinishAreFenced(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"))
	run := queue(t, d, "a")
	start(t, d, clk.Now(), "tok-1")

	now := clk.Add(30 * time.Second)
	if reply, err := d.Heartbeat(ctx, run.ID, "tok-other", now); err != nil || reply != pass.HeartbeatLost {
		t.Fatalf("heartbeat of another owner: %v, %v", reply, err)
	}
	if got := mustRun(t, d, run.ID); !got.HeartbeatAt.Equal(t0) {
		t.Fatalf("another owner's heartbeat was written: %v", got.HeartbeatAt)
	}
	if reply, err := d.Heartbeat(ctx, run.ID, "tok-1", now); err != nil || reply != pass.HeartbeatOK {
		t.Fatalf("heartbeat: %v, %v", reply, err)
	}
	if got := mustRun(t, d, run.ID); !got.HeartbeatAt.Equal(now) {
		t.Fatalf("heartbeat at %v, want %v", got.HeartbeatAt, now)
	}
	if reply, err := d.Heartbeat(ctx, 999, "tok-1", now); err != nil || reply != pass.HeartbeatLost {
		t.Fatalf("heartbeat of an unknown run: %v, %v", reply, err)
	}

	fin := pass.Run{ID: run.ID, Status: pass.StatusSucceeded, EndedAt: now}
	if ok, err := d.Finish(ctx, fin, "tok-other", &pass.Run{Trigger: pass.TriggerRetry}); err != nil || ok {
		t.Fatalf("finish by another owner: %v, %v", ok, err)
	}
	if got := mustRun(t, d, run.ID); got.Status != pass.StatusRunning || count(t, d, `SELECT count(*) FROM runs`) != 1 {
		t.Fatalf("another owner's finish changed something: %+v", got)
	}

	// The run is reclaimed: its old owner can change nothing any more.
	now = clk.Add(10 * time.Minute)
	reclaimed, err := d.Reclaim(ctx, now, now.Add(-5*time.Minute), nil, func(r pass.Run) *pass.Run {
		return &pass.Run{Trigger: pass.TriggerRetry, Attempt: r.Attempt + 1, NotBefore: now.Add(30 * time.Second)}
	})
	if err != nil || len(reclaimed) != 1 {
		t.Fatalf("reclaim: %v, %v", reclaimed, err)
	}
	if reply, err := d.Heartbeat(ctx, run.ID, "tok-1", now); err != nil || reply != pass.HeartbeatLost {
		t.Fatalf("heartbeat after reclaim: %v, %v", reply, err)
	}
	if ok, err := d.Finish(ctx, fin, "tok-1", nil); err != nil || ok {
		t.Fatalf("finish after reclaim: %v, %v", ok, err)
	}
	if got := mustRun(t, d, run.ID); got.Status != pass.StatusFailed || got.ErrorCode != "ORPHANED" {
		t.Fatalf("reclaimed run after its old owner's finish: %+v", got)
	}
}

func TestReclaim(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "stale", "manual"), def(t, "fresh", "manual"), def(t, "dead", "manual"),
		def(t, "cancelled", "manual"), def(t, "noretry", "manual"))
	runs := map[string]pass.Run{}
	for _, job := range []string{"stale", "fresh", "dead", "cancelled", "noretry"} {
		runs[job] = queue(t, d, job)
	}
	_, err := d.Admit(ctx, t0, func(s pass.AdmitState) []pass.Admission {
		var a []pass.Admission
		for _, r := range s.Queued {
			a = append(a, pass.Admission{RunID: r.ID, Admit: true, Owner: "tok-" + r.Job, Runner: "host:" + r.Job})
		}
		return a
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CancelRun(ctx, runs["cancelled"].ID, admin); err != nil {
		t.Fatal(err)
	}
	now := clk.Add(6 * time.Minute)
	for _, job := range []string{"fresh", "dead"} {
		if reply, err := d.Heartbeat(ctx, runs[job].ID, "tok-"+job, now.Add(-time.Minute)); err != nil || reply != pass.HeartbeatOK {
			t.Fatal(reply, err)
		}
	}

	var retried []string
	reclaimed, err := d.Reclaim(ctx, now, now.Add(-5*time.Minute),
		func(runner string) bool { return runner == "host:dead" },
		func(r pass.Run) *pass.Run {
			retried = append(retried, r.Job)
			if r.Status != pass.StatusFailed || r.ErrorClass != pass.ClassTransient || r.ErrorCode != "ORPHANED" {
				t.Errorf("retry handed %+v", r)
			}
			if r.Job == "noretry" {
				return nil
			}
			return &pass.Run{Trigger: pass.TriggerRetry, Attempt: r.Attempt + 1, ScheduledAt: r.ScheduledAt, NotBefore: now.Add(30 * time.Second)}
		})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]pass.Run{}
	for _, r := range reclaimed {
		got[r.Job] = r
	}
	if len(reclaimed) != 4 || got["fresh"].ID != 0 {
		t.Fatalf("reclaimed %v, want stale, dead, cancelled and noretry", reclaimed)
	}
	for _, job := range []string{"stale", "dead", "noretry"} {
		r := got[job]
		if r.Status != pass.StatusFailed || r.ErrorClass != pass.ClassTransient || r.ErrorCode != "ORPHANED" ||
			!r.EndedAt.Equal(now) || r.Message == "" {
			t.Errorf("%s: %+v", job, r)
		}
	}
	if r := got["cancelled"]; r.Status != pass.StatusCancelled || r.ErrorCode != "ORPHANED" {
		t.Errorf("a reclaimed run whose cancellation was requested: %+v", r)
	}
	if strings.Join(retried, ",") != "stale,dead,noretry" {
		t.Fatalf("retry asked for %v", retried)
	}
	for job, want := range map[string]int{"stale": 1, "dead": 1, "noretry": 0, "cancelled": 0} {
		j := mustJob(t, d, job)
		if (j.Active != nil) != (want == 1) {
			t.Errorf("%s: active run %+v, want %d", job, j.Active, want)
		}
		if j.Active != nil && (j.Active.Trigger != pass.TriggerRetry || j.Active.Attempt != 2 || !j.Active.NotBefore.Equal(now.Add(30*time.Second))) {
			t.Errorf("%s: retry %+v", job, j.Active)
		}
	}
	if r := mustRun(t, d, runs["fresh"].ID); r.Status != pass.StatusRunning {
		t.Errorf("fresh run: %s", r.Status)
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
