package storetest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Store is a pass.Store with the user's side of it that the commands use
// and the suite needs to set up its cases.
type Store interface {
	pass.Store
	// QueueRun queues run for the live job as a user's trigger does; empty
	// fields default (Trigger manual, Attempt 1, times now). A job with an
	// active run is pass.ErrActive, an unknown one pass.ErrUnknownJob.
	QueueRun(ctx context.Context, job string, run pass.Run) (pass.Run, error)
	// CancelRun cancels a queued run at once (status cancelled, never
	// started) and asks a running run to stop (its next heartbeat says
	// HeartbeatCancel). An ended or unknown run is an error.
	CancelRun(ctx context.Context, id int64) error
	// Run reads one run; an unknown run is an error.
	Run(ctx context.Context, id int64) (pass.Run, error)
}

// t0 is the first instant of every case.
var t0 = time.Date(2026, 6, 10, 2, 0, 0, 0, time.UTC)

// RunStoreTests runs the suite, each case on a fresh store from newStore.
func RunStoreTests(t *testing.T, newStore func(t *testing.T) Store) {
	cases := []struct {
		name string
		test func(t *testing.T, s Store)
	}{
		{"LastSucceededIgnoresARunCancelledBeforeItStarted", testLastSucceededIgnoresCancelledQueuedRun},
		{"LastSucceededIsTheLatestStartedRuns", testLastSucceededOutcomes},
		{"LastSucceededCountsBackupRunsOnly", testLastSucceededCountsBackupRunsOnly},
		{"AdmitStateListsEveryQueuedRunAdmitOnlyTheEligible", testAdmitStateAndAdmit},
		{"AdmitRefusesBadDecisionsAndChangesNothing", testAdmitRefusesBadDecisions},
		{"OneActiveRunPerJob", testOneActiveRunPerJob},
		{"HeartbeatAndFinishAreFenced", testHeartbeatAndFinishAreFenced},
		{"HeartbeatStoresProgress", testHeartbeatStoresProgress},
		{"CancelRun", testCancel},
		{"FinishRecordsTheResultAndQueuesTheNextRun", testFinish},
		{"Reclaim", testReclaim},
		{"ReclaimHonoursTheOwnersLease", testReclaimHonoursLease},
		{"FinishOrphanIsFencedByTheLease", testFinishOrphanIsFencedByTheLease},
		{"ARemovedJobGetsNoNextRunOrRetry", testRemovedJobGetsNoNextRun},
		{"RunsKeepTheirKind", testKinds},
		{"ScheduledWorkIsClaimedAsItsKind", testScheduledWork},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.test(t, newStore(t)) })
	}
}

// syncManual stores manual jobs of these names, job depending on the
// dependsOn of its entry.
func syncManual(t *testing.T, s Store, jobs map[string][]string) {
	t.Helper()
	manual, err := schedule.Parse("manual", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	var defs []pass.JobDef
	for _, name := range sortedKeys(jobs) {
		defs = append(defs, pass.JobDef{Name: name, Schedule: manual, Priority: "normal", Repository: "local", DependsOn: jobs[name]})
	}
	err = s.SyncJobs(context.Background(), defs, func(d pass.JobDef) string { return d.Schedule.String() },
		func(pass.JobDef) time.Time { return time.Time{} })
	if err != nil {
		t.Fatal(err)
	}
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func queue(t *testing.T, s Store, job string, queuedAt time.Time) pass.Run {
	t.Helper()
	r, err := s.QueueRun(context.Background(), job, pass.Run{Trigger: pass.TriggerManual, ScheduledAt: queuedAt, QueuedAt: queuedAt})
	if err != nil {
		t.Fatalf("queue a run of %s: %v", job, err)
	}
	return r
}

// start admits every eligible queued run at now with owner token owner.
func start(t *testing.T, s Store, now time.Time, owner string) []pass.Run {
	t.Helper()
	started, err := s.Admit(context.Background(), now, func(st pass.AdmitState) []pass.Admission {
		var a []pass.Admission
		for _, r := range st.Queued {
			a = append(a, pass.Admission{RunID: r.ID, Admit: true, Owner: owner, Runner: "host:1"})
		}
		return a
	})
	if err != nil {
		t.Fatal(err)
	}
	return started
}

// finish runs one run of job from queue to end with status.
func finish(t *testing.T, s Store, job string, at time.Time, status string) pass.Run {
	t.Helper()
	r := queue(t, s, job, at)
	start(t, s, at, "tok-"+job)
	fin := pass.Run{ID: r.ID, Status: status, EndedAt: at.Add(time.Minute)}
	switch status {
	case pass.StatusPartialFailure:
		fin.Figures.FilesSkipped = 1
	case pass.StatusFailed:
		fin.ErrorClass = pass.ClassSource
	case pass.StatusCancelled:
		fin.ErrorClass = pass.ClassCancelled
	}
	if ok, err := s.Finish(context.Background(), fin, "tok-"+job, nil); !ok || err != nil {
		t.Fatalf("finish run %d of %s: %v, %v", r.ID, job, ok, err)
	}
	return mustRun(t, s, r.ID)
}

func mustRun(t *testing.T, s Store, id int64) pass.Run {
	t.Helper()
	r, err := s.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func admitState(t *testing.T, s Store) pass.AdmitState {
	t.Helper()
	st, err := s.AdmitState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func ids(runs []pass.Run) []int64 {
	out := []int64{}
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

// The reproduction of issue 12, part 6: b succeeds; a second run of b is
// queued and cancelled; a (depending on b) is queued. The admission state,
// which job explain and the next pass both read, says that b's last run
// succeeded: the cancelled run never started and does not count.
func testLastSucceededIgnoresCancelledQueuedRun(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"a": {"b"}, "b": nil})
	finish(t, s, "b", t0, pass.StatusSucceeded)
	second := queue(t, s, "b", t0.Add(time.Hour))
	if err := s.CancelRun(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if r := mustRun(t, s, second.ID); r.Status != pass.StatusCancelled || !r.StartedAt.IsZero() {
		t.Fatalf("cancelled queued run: %+v", r)
	}
	queued := queue(t, s, "a", t0.Add(2*time.Hour))

	st := admitState(t, s)
	if !st.LastSucceeded["b"] {
		t.Errorf("AdmitState: LastSucceeded[b] = false after a run cancelled before it started; want true")
	}
	var handed pass.AdmitState
	if _, err := s.Admit(ctx, t0.Add(3*time.Hour), func(st pass.AdmitState) []pass.Admission {
		handed = st
		return []pass.Admission{{RunID: queued.ID, HeldReason: "waiting: test"}}
	}); err != nil {
		t.Fatal(err)
	}
	if !handed.LastSucceeded["b"] {
		t.Errorf("Admit: LastSucceeded[b] = false after a run cancelled before it started; want true")
	}
}

// LastSucceeded is the status of each job's latest run that started and
// ended; a job without one has false.
func testLastSucceededOutcomes(t *testing.T, s Store) {
	jobs := map[string][]string{}
	cases := []struct {
		job      string
		statuses []string // in order
		want     bool
	}{
		{"never-ran", nil, false},
		{"succeeded", []string{pass.StatusSucceeded}, true},
		{"partial-failure", []string{pass.StatusPartialFailure}, false},
		{"failed", []string{pass.StatusFailed}, false},
		{"cancelled-while-running", []string{pass.StatusSucceeded, pass.StatusCancelled}, false},
		{"failed-then-succeeded", []string{pass.StatusFailed, pass.StatusSucceeded}, true},
		{"succeeded-then-failed", []string{pass.StatusSucceeded, pass.StatusFailed}, false},
	}
	for _, c := range cases {
		jobs[c.job] = nil
	}
	syncManual(t, s, jobs)
	for _, c := range cases {
		for i, status := range c.statuses {
			finish(t, s, c.job, t0.Add(time.Duration(i)*time.Hour), status)
		}
	}
	running := queue(t, s, "succeeded", t0.Add(5*time.Hour))
	start(t, s, t0.Add(5*time.Hour), "tok-running")

	st := admitState(t, s)
	for _, c := range cases {
		t.Run(c.job, func(t *testing.T) {
			if got, ok := st.LastSucceeded[c.job]; !ok || got != c.want {
				t.Errorf("LastSucceeded[%s] = %v (present %v), want %v", c.job, got, ok, c.want)
			}
		})
	}
	if got := ids(st.Running); !slices.Equal(got, []int64{running.ID}) {
		t.Errorf("running runs %v, want [%d]", got, running.ID)
	}
}

// LastSucceeded is about a job's backups: a later run of another kind (a
// retention run that found the repository busy, a failed drill) neither
// holds the job's dependents nor releases them.
func testLastSucceededCountsBackupRunsOnly(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"ok-then-failed-retention": nil, "failed-then-ok-drill": nil})
	end := func(job, kind string, at time.Time, status string) {
		t.Helper()
		r, err := s.QueueRun(ctx, job, pass.Run{Kind: kind, Trigger: pass.TriggerManual, ScheduledAt: at, QueuedAt: at})
		if err != nil {
			t.Fatalf("queue a %s run of %s: %v", kind, job, err)
		}
		start(t, s, at, "tok-"+job)
		fin := pass.Run{ID: r.ID, Status: status, EndedAt: at.Add(time.Minute)}
		if status == pass.StatusFailed {
			fin.ErrorClass = pass.ClassBusy
		}
		if ok, err := s.Finish(ctx, fin, "tok-"+job, nil); !ok || err != nil {
			t.Fatalf("finish the %s run of %s: %v, %v", kind, job, ok, err)
		}
	}
	end("ok-then-failed-retention", pass.KindBackup, t0, pass.StatusSucceeded)
	end("ok-then-failed-retention", pass.KindRetention, t0.Add(time.Hour), pass.StatusFailed)
	end("failed-then-ok-drill", pass.KindBackup, t0, pass.StatusFailed)
	end("failed-then-ok-drill", pass.KindDrill, t0.Add(time.Hour), pass.StatusSucceeded)
	st := admitState(t, s)
	if !st.LastSucceeded["ok-then-failed-retention"] {
		t.Errorf("LastSucceeded after a succeeded backup and a failed retention run = false, want true")
	}
	if st.LastSucceeded["failed-then-ok-drill"] {
		t.Errorf("LastSucceeded after a failed backup and a succeeded drill = true, want false")
	}
}

// AdmitState lists every queued run, also one whose NotBefore is ahead;
// Admit hands decide only the queued runs due now, oldest first.
func testAdmitStateAndAdmit(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"a": nil, "b": nil, "c": nil, "d": nil})
	finish(t, s, "d", t0, pass.StatusSucceeded)
	running := queue(t, s, "d", t0.Add(time.Hour))
	start(t, s, t0.Add(time.Hour), "tok-d2")
	now := t0.Add(2 * time.Hour)
	rb := queue(t, s, "b", now.Add(-2*time.Minute))
	ra := queue(t, s, "a", now.Add(-time.Minute))
	later, err := s.QueueRun(ctx, "c", pass.Run{Trigger: pass.TriggerRetry, Attempt: 2, ScheduledAt: now, QueuedAt: now.Add(-3 * time.Minute), NotBefore: now.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}

	st := admitState(t, s)
	if got, want := ids(st.Queued), []int64{later.ID, rb.ID, ra.ID}; !slices.Equal(got, want) {
		t.Errorf("AdmitState queued %v, want %v (every queued run, oldest first)", got, want)
	}
	if got := ids(st.Running); !slices.Equal(got, []int64{running.ID}) {
		t.Errorf("AdmitState running %v, want [%d]", got, running.ID)
	}

	var seen pass.AdmitState
	started, err := s.Admit(ctx, now, func(st pass.AdmitState) []pass.Admission {
		seen = st
		return []pass.Admission{
			{RunID: ra.ID, Admit: true, Owner: "tok-a", Runner: "host:42"},
			{RunID: rb.ID, HeldReason: "waiting: repository local at its limit of 1"},
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(seen.Queued), []int64{rb.ID, ra.ID}; !slices.Equal(got, want) {
		t.Fatalf("Admit handed queued %v, want %v (the run not before %v must wait)", got, want, later.NotBefore)
	}
	if got := ids(seen.Running); !slices.Equal(got, []int64{running.ID}) {
		t.Fatalf("Admit handed running %v", got)
	}
	if !seen.LastSucceeded["d"] || seen.LastSucceeded["a"] {
		t.Errorf("Admit handed LastSucceeded %v, want d true and a false", seen.LastSucceeded)
	}
	if len(started) != 1 {
		t.Fatalf("started %d runs", len(started))
	}
	r := started[0]
	if r.ID != ra.ID || r.Status != pass.StatusRunning || r.Owner != "tok-a" || r.Runner != "host:42" ||
		!r.StartedAt.Equal(now) || !r.HeartbeatAt.Equal(now) || r.HeldReason != "" {
		t.Fatalf("started run: %+v", r)
	}
	if got := mustRun(t, s, rb.ID); got.Status != pass.StatusQueued || got.HeldReason != "waiting: repository local at its limit of 1" {
		t.Fatalf("held run: %+v", got)
	}
	if got := mustRun(t, s, later.ID); got.Status != pass.StatusQueued || got.HeldReason != "" {
		t.Fatalf("run not yet due: %+v", got)
	}
	// Once its backoff is over, the retry is handed too.
	start(t, s, now.Add(time.Minute), "tok-c")
	if got := mustRun(t, s, later.ID); got.Status != pass.StatusRunning {
		t.Fatalf("retry after its backoff: %s", got.Status)
	}
}

func testAdmitRefusesBadDecisions(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"a": nil, "b": nil})
	ra, rb := queue(t, s, "a", t0), queue(t, s, "b", t0)
	cases := []struct {
		name     string
		decision []pass.Admission
	}{
		{"held without a reason", []pass.Admission{{RunID: ra.ID, Admit: true, Owner: "tok", Runner: "h:1"}, {RunID: rb.ID}}},
		{"admitted without owner", []pass.Admission{{RunID: ra.ID, Admit: true}}},
		{"a run it was not handed", []pass.Admission{{RunID: ra.ID, Admit: true, Owner: "tok", Runner: "h:1"}, {RunID: 999, Admit: true, Owner: "tok", Runner: "h:1"}}},
		{"a run decided twice", []pass.Admission{{RunID: ra.ID, Admit: true, Owner: "tok", Runner: "h:1"}, {RunID: ra.ID, HeldReason: "x"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Admit(ctx, t0, func(pass.AdmitState) []pass.Admission { return c.decision })
			if err == nil {
				t.Fatal("accepted")
			}
			for _, id := range []int64{ra.ID, rb.ID} {
				if r := mustRun(t, s, id); r.Status != pass.StatusQueued || r.HeldReason != "" {
					t.Fatalf("run %d after a refused decision: %+v", id, r)
				}
			}
		})
	}
}

func testOneActiveRunPerJob(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"a": nil})
	first := queue(t, s, "a", t0)
	if _, err := s.QueueRun(ctx, "a", pass.Run{QueuedAt: t0, ScheduledAt: t0}); !errors.Is(err, pass.ErrActive) {
		t.Errorf("second queued run: %v, want ErrActive", err)
	}
	start(t, s, t0, "tok")
	if _, err := s.QueueRun(ctx, "a", pass.Run{QueuedAt: t0, ScheduledAt: t0}); !errors.Is(err, pass.ErrActive) {
		t.Errorf("queued beside a running run: %v, want ErrActive", err)
	}
	if _, err := s.QueueRun(ctx, "nope", pass.Run{}); !errors.Is(err, pass.ErrUnknownJob) {
		t.Errorf("run of an unknown job: %v, want ErrUnknownJob", err)
	}
	if got := mustRun(t, s, first.ID); got.Status != pass.StatusRunning {
		t.Errorf("first run: %s", got.Status)
	}
}

func testHeartbeatAndFinishAreFenced(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"a": nil})
	run := queue(t, s, "a", t0)
	start(t, s, t0, "tok-1")

	now := t0.Add(30 * time.Second)
	if reply, err := s.Heartbeat(ctx, run.ID, "tok-other", now, nil); err != nil || reply != pass.HeartbeatLost {
		t.Fatalf("heartbeat of another owner: %v, %v", reply, err)
	}
	if got := mustRun(t, s, run.ID); !got.HeartbeatAt.Equal(t0) {
		t.Fatalf("another owner's heartbeat was written: %v", got.HeartbeatAt)
	}
	if reply, err := s.Heartbeat(ctx, run.ID, "tok-1", now, nil); err != nil || reply != pass.HeartbeatOK {
		t.Fatalf("heartbeat: %v, %v", reply, err)
	}
	if got := mustRun(t, s, run.ID); !got.HeartbeatAt.Equal(now) {
		t.Fatalf("heartbeat at %v, want %v", got.HeartbeatAt, now)
	}
	if reply, err := s.Heartbeat(ctx, 999, "tok-1", now, nil); err != nil || reply != pass.HeartbeatLost {
		t.Fatalf("heartbeat of an unknown run: %v, %v", reply, err)
	}

	fin := pass.Run{ID: run.ID, Status: pass.StatusSucceeded, EndedAt: now}
	if ok, err := s.Finish(ctx, fin, "tok-other", &pass.Run{Job: "a", Trigger: pass.TriggerRetry, Status: pass.StatusQueued}); err != nil || ok {
		t.Fatalf("finish by another owner: %v, %v", ok, err)
	}
	if got := mustRun(t, s, run.ID); got.Status != pass.StatusRunning || len(admitState(t, s).Queued) != 0 {
		t.Fatalf("another owner's finish changed something: %+v", got)
	}

	// The run is reclaimed: its old owner can change nothing any more.
	now = t0.Add(10 * time.Minute)
	reclaimed, _, err := s.Reclaim(ctx, now, now.Add(-5*time.Minute), nil, func(r pass.Run) *pass.Run {
		return &pass.Run{Job: r.Job, JobID: r.JobID, Trigger: pass.TriggerRetry, Attempt: r.Attempt + 1, Status: pass.StatusQueued,
			ScheduledAt: r.ScheduledAt, QueuedAt: now, NotBefore: now.Add(30 * time.Second)}
	})
	if err != nil || len(reclaimed) != 1 {
		t.Fatalf("reclaim: %v, %v", reclaimed, err)
	}
	if reply, err := s.Heartbeat(ctx, run.ID, "tok-1", now, nil); err != nil || reply != pass.HeartbeatLost {
		t.Fatalf("heartbeat after reclaim: %v, %v", reply, err)
	}
	if ok, err := s.Finish(ctx, fin, "tok-1", nil); err != nil || ok {
		t.Fatalf("finish after reclaim: %v, %v", ok, err)
	}
	if got := mustRun(t, s, run.ID); got.Status != pass.StatusFailed || got.ErrorCode != pass.CodeOrphaned {
		t.Fatalf("reclaimed run after its old owner's finish: %+v", got)
	}
}

// A heartbeat with progress stores the run's figures so far and its
// current item; one without keeps them; another owner's stores nothing;
// the result replaces the figures.
func testHeartbeatStoresProgress(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"a": nil})
	run := queue(t, s, "a", t0)
	start(t, s, t0, "tok")
	beat := func(owner string, at time.Time, progress *pass.Progress, want pass.HeartbeatReply) {
		t.Helper()
		if reply, err := s.Heartbeat(ctx, run.ID, owner, at, progress); err != nil || reply != want {
			t.Fatalf("heartbeat of %s: %v, %v; want %v", owner, reply, err, want)
		}
	}
	if got := mustRun(t, s, run.ID); got.Current != "" || got.Figures.Files != 0 {
		t.Fatalf("a run just started has progress: %q, %+v", got.Current, got.Figures)
	}
	beat("tok", t0.Add(time.Second), nil, pass.HeartbeatOK)
	if got := mustRun(t, s, run.ID); got.Current != "" || got.Figures.BytesRead != 0 || !got.HeartbeatAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("a heartbeat without progress: %q, %+v at %v", got.Current, got.Figures, got.HeartbeatAt)
	}

	so := pass.Progress{Current: "source /data", Figures: pass.Figures{BytesRead: 2 << 30, BytesAdded: 120 << 20, Files: 1234,
		FilesSkipped: 2, Counters: map[string]int64{"sources_done": 1}}}
	beat("tok", t0.Add(2*time.Second), &so, pass.HeartbeatOK)
	got := mustRun(t, s, run.ID)
	if got.Current != so.Current || got.Figures.BytesRead != so.Figures.BytesRead || got.Figures.BytesAdded != so.Figures.BytesAdded ||
		got.Figures.Files != so.Figures.Files || got.Figures.FilesSkipped != 2 || !maps.Equal(got.Figures.Counters, so.Figures.Counters) ||
		!got.HeartbeatAt.Equal(t0.Add(2*time.Second)) || got.Status != pass.StatusRunning {
		t.Fatalf("after a heartbeat with progress %+v the run is %+v", so, got)
	}
	beat("tok", t0.Add(3*time.Second), nil, pass.HeartbeatOK)
	if got := mustRun(t, s, run.ID); got.Current != so.Current || got.Figures.Files != so.Figures.Files {
		t.Errorf("a heartbeat without progress dropped the last one: %q, %+v", got.Current, got.Figures)
	}
	other := pass.Progress{Current: "source /elsewhere", Figures: pass.Figures{Files: 99}}
	beat("tok-other", t0.Add(4*time.Second), &other, pass.HeartbeatLost)
	if got := mustRun(t, s, run.ID); got.Current != so.Current || got.Figures.Files != so.Figures.Files {
		t.Errorf("another owner's heartbeat stored its progress: %q, %+v", got.Current, got.Figures)
	}

	fin := pass.Run{ID: run.ID, Status: pass.StatusSucceeded, EndedAt: t0.Add(time.Minute),
		Figures: pass.Figures{BytesRead: 3 << 30, BytesAdded: 200 << 20, Files: 2000}}
	if ok, err := s.Finish(ctx, fin, "tok", nil); !ok || err != nil {
		t.Fatalf("finish: %v, %v", ok, err)
	}
	got = mustRun(t, s, run.ID)
	if got.Figures.BytesRead != fin.Figures.BytesRead || got.Figures.Files != 2000 ||
		got.Figures.FilesSkipped != 0 || len(got.Figures.Counters) != 0 {
		t.Errorf("the result did not replace the progress: %+v", got.Figures)
	}
	if got.Current != "" {
		t.Errorf("a finished run still works on %q: Finish must clear the current item", got.Current)
	}
}

// A user's cancellation of a running run reaches its owner at the next
// heartbeat; a queued run is cancelled at once; an ended run cannot be.
func testCancel(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"a": nil, "b": nil})
	running := queue(t, s, "a", t0)
	start(t, s, t0, "tok")
	queued := queue(t, s, "b", t0)
	for _, id := range []int64{running.ID, queued.ID} {
		if err := s.CancelRun(ctx, id); err != nil {
			t.Fatalf("cancel run %d: %v", id, err)
		}
	}
	if reply, err := s.Heartbeat(ctx, running.ID, "tok", t0.Add(time.Second), nil); err != nil || reply != pass.HeartbeatCancel {
		t.Errorf("heartbeat after a cancellation request: %v, %v; want HeartbeatCancel", reply, err)
	}
	if got := mustRun(t, s, running.ID); got.Status != pass.StatusRunning {
		t.Errorf("a running run is cancelled by its runner, not the store: %s", got.Status)
	}
	got := mustRun(t, s, queued.ID)
	if got.Status != pass.StatusCancelled || got.ErrorClass != pass.ClassCancelled || !got.StartedAt.IsZero() || got.EndedAt.IsZero() {
		t.Errorf("cancelled queued run: %+v", got)
	}
	if err := s.CancelRun(ctx, queued.ID); err == nil {
		t.Error("an ended run was cancelled again")
	}
	if err := s.CancelRun(ctx, 999); err == nil {
		t.Error("an unknown run was cancelled")
	}
}

func testFinish(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"a": nil})
	run := queue(t, s, "a", t0)
	start(t, s, t0, "tok")
	end := t0.Add(time.Hour)

	bad := pass.Run{ID: run.ID, Status: pass.StatusSucceeded, EndedAt: end, Figures: pass.Figures{FilesSkipped: 1}}
	if ok, err := s.Finish(ctx, bad, "tok", nil); err == nil || ok {
		t.Errorf("a succeeded run with skipped files was recorded: %v, %v", ok, err)
	}
	if got := mustRun(t, s, run.ID); got.Status != pass.StatusRunning {
		t.Fatalf("a refused finish changed the run: %+v", got)
	}

	fin := pass.Run{ID: run.ID, Status: pass.StatusFailed, EndedAt: end, ErrorClass: pass.ClassNetwork, ErrorCode: "NET",
		Message: "link down", Figures: pass.Figures{BytesRead: 10, BytesAdded: 5, Files: 2, FilesSkipped: 1,
			Skipped:  []pass.Skipped{{Object: "/x", Reason: "gone"}},
			Counters: map[string]int64{"blobs_checked": 12, "packs_deleted": 0}},
		Output: "== hook before: exit status 3\nno space left on device\n"}
	next := &pass.Run{Job: "a", JobID: run.JobID, Trigger: pass.TriggerRetry, Attempt: 2, Status: pass.StatusQueued,
		ScheduledAt: run.ScheduledAt, QueuedAt: end, NotBefore: end.Add(time.Minute)}
	if ok, err := s.Finish(ctx, fin, "tok", next); !ok || err != nil {
		t.Fatalf("finish: %v, %v", ok, err)
	}
	got := mustRun(t, s, run.ID)
	if got.Status != pass.StatusFailed || !got.EndedAt.Equal(end) || got.ErrorClass != pass.ClassNetwork ||
		got.ErrorCode != "NET" || got.Message != "link down" || got.Figures.BytesRead != 10 || got.Figures.BytesAdded != 5 ||
		got.Figures.Files != 2 || got.Figures.FilesSkipped != 1 || len(got.Figures.Skipped) != 1 ||
		!maps.Equal(got.Figures.Counters, fin.Figures.Counters) {
		t.Errorf("recorded run: %+v", got)
	}
	if got.Output != fin.Output {
		t.Errorf("recorded output %q, want %q", got.Output, fin.Output)
	}
	if queuedOutput := mustRun(t, s, next.ID).Output; queuedOutput != "" {
		t.Errorf("the next run starts with output %q", queuedOutput)
	}
	if next.ID == 0 || next.ID == run.ID {
		t.Fatalf("the next run was not filled in as stored: %+v", next)
	}
	queued := mustRun(t, s, next.ID)
	if queued.Status != pass.StatusQueued || queued.Trigger != pass.TriggerRetry || queued.Attempt != 2 ||
		!queued.NotBefore.Equal(end.Add(time.Minute)) || queued.Job != "a" {
		t.Errorf("next run: %+v", queued)
	}
}

func testReclaim(t *testing.T, s Store) {
	ctx := context.Background()
	jobs := []string{"stale", "fresh", "dead", "cancelled", "noretry"}
	m := map[string][]string{}
	for _, j := range jobs {
		m[j] = nil
	}
	syncManual(t, s, m)
	runs := map[string]pass.Run{}
	for _, job := range jobs {
		runs[job] = queue(t, s, job, t0)
	}
	_, err := s.Admit(ctx, t0, func(st pass.AdmitState) []pass.Admission {
		var a []pass.Admission
		for _, r := range st.Queued {
			a = append(a, pass.Admission{RunID: r.ID, Admit: true, Owner: "tok-" + r.Job, Runner: "host:" + r.Job})
		}
		return a
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CancelRun(ctx, runs["cancelled"].ID); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(6 * time.Minute)
	for _, job := range []string{"fresh", "dead"} {
		progress := &pass.Progress{Current: "source /" + job}
		if reply, err := s.Heartbeat(ctx, runs[job].ID, "tok-"+job, now.Add(-time.Minute), progress); err != nil || reply != pass.HeartbeatOK {
			t.Fatal(reply, err)
		}
	}

	var retried []string
	reclaimed, retries, err := s.Reclaim(ctx, now, now.Add(-5*time.Minute),
		func(runner string) bool { return runner == "host:dead" },
		func(r pass.Run) *pass.Run {
			retried = append(retried, r.Job)
			if r.Status != pass.StatusFailed || r.ErrorClass != pass.ClassTransient || r.ErrorCode != pass.CodeOrphaned {
				t.Errorf("retry handed %+v", r)
			}
			if r.Job == "noretry" {
				return nil
			}
			return &pass.Run{Job: r.Job, JobID: r.JobID, Trigger: pass.TriggerRetry, Attempt: r.Attempt + 1, Status: pass.StatusQueued,
				ScheduledAt: r.ScheduledAt, QueuedAt: now, NotBefore: now.Add(30 * time.Second)}
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
		if r.Status != pass.StatusFailed || r.ErrorClass != pass.ClassTransient || r.ErrorCode != pass.CodeOrphaned ||
			!r.EndedAt.Equal(now) || r.Message == "" {
			t.Errorf("%s: %+v", job, r)
		}
	}
	if r := got["cancelled"]; r.Status != pass.StatusCancelled || r.ErrorCode != pass.CodeOrphaned {
		t.Errorf("a reclaimed run whose cancellation was requested: %+v", r)
	}
	if !slices.Equal(retried, []string{"stale", "dead", "noretry"}) {
		t.Fatalf("retry asked for %v", retried)
	}
	queued := map[string]pass.Run{}
	for _, r := range admitState(t, s).Queued {
		queued[r.Job] = r
	}
	returned := map[string]int64{}
	for _, r := range retries {
		returned[r.Job] = r.ID
	}
	if len(retries) != 2 || returned["stale"] != queued["stale"].ID || returned["dead"] != queued["dead"].ID || returned["stale"] == 0 {
		t.Errorf("Reclaim returned the retries %+v, want the two it queued, as stored", retries)
	}
	for _, job := range []string{"stale", "dead", "noretry", "cancelled"} {
		r, ok := queued[job]
		want := job == "stale" || job == "dead"
		if ok != want {
			t.Errorf("%s: queued retry %v, want %v", job, ok, want)
		}
		if ok && (r.Trigger != pass.TriggerRetry || r.Attempt != 2 || !r.NotBefore.Equal(now.Add(30*time.Second))) {
			t.Errorf("%s: retry %+v", job, r)
		}
	}
	if r := mustRun(t, s, runs["fresh"].ID); r.Status != pass.StatusRunning {
		t.Errorf("fresh run: %s", r.Status)
	}
	if r := mustRun(t, s, runs["dead"].ID); r.Current != "source /dead" {
		t.Errorf("a reclaimed run works on %q, want what its last heartbeat said (source /dead): it shows where it stopped", r.Current)
	}
}

// A job removed from the configuration while its runs execute gets no new
// run: Finish records the result, reports true and leaves next.ID at 0;
// Reclaim ends the orphan without queueing the retry it was handed.
func testRemovedJobGetsNoNextRun(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"finished": nil, "orphaned": nil})
	finished := queue(t, s, "finished", t0)
	orphaned := queue(t, s, "orphaned", t0)
	start(t, s, t0, "tok")
	syncManual(t, s, map[string][]string{}) // both jobs removed while running
	end := t0.Add(time.Hour)

	fin := pass.Run{ID: finished.ID, Status: pass.StatusFailed, EndedAt: end, ErrorClass: pass.ClassNetwork, Message: "link down"}
	next := &pass.Run{Job: "finished", JobID: finished.JobID, Trigger: pass.TriggerRetry, Attempt: 2, Status: pass.StatusQueued,
		ScheduledAt: finished.ScheduledAt, QueuedAt: end, NotBefore: end}
	if ok, err := s.Finish(ctx, fin, "tok", next); !ok || err != nil {
		t.Fatalf("finish a run of a removed job: %v, %v; want its result recorded", ok, err)
	}
	if next.ID != 0 {
		t.Errorf("Finish filled in a next run %d for a removed job", next.ID)
	}
	if got := mustRun(t, s, finished.ID); got.Status != pass.StatusFailed {
		t.Errorf("the removed job's run was not recorded: %+v", got)
	}

	var retried []string
	reclaimed, retries, err := s.Reclaim(ctx, end, end, nil, func(r pass.Run) *pass.Run {
		retried = append(retried, r.Job)
		return &pass.Run{Job: r.Job, JobID: r.JobID, Trigger: pass.TriggerRetry, Attempt: r.Attempt + 1, Status: pass.StatusQueued,
			ScheduledAt: r.ScheduledAt, QueuedAt: end, NotBefore: end}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(reclaimed), []int64{orphaned.ID}) {
		t.Errorf("reclaimed %v, want the removed job's orphan %d", ids(reclaimed), orphaned.ID)
	}
	if len(retries) != 0 {
		t.Errorf("Reclaim queued retries %+v for a removed job (retry asked for %v)", retries, retried)
	}
	if queued := admitState(t, s).Queued; len(queued) != 0 {
		t.Errorf("runs queued for removed jobs: %+v", queued)
	}
}

// A run keeps the kind it was queued with; an empty kind is a backup, and
// so is a scheduled run. The next run queued with a result keeps its own.
func testKinds(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"a": nil, "b": nil})
	plain := queue(t, s, "a", t0)
	if plain.Kind != pass.KindBackup {
		t.Errorf("a run queued without a kind has kind %q, want %q", plain.Kind, pass.KindBackup)
	}
	const verify = "verify" // a kind to come (issue 13): the store takes it without a change
	other, err := s.QueueRun(ctx, "b", pass.Run{Kind: verify, QueuedAt: t0, ScheduledAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	started := start(t, s, t0, "tok")
	kinds := map[int64]string{}
	for _, r := range started {
		kinds[r.ID] = r.Kind
	}
	if kinds[plain.ID] != pass.KindBackup || kinds[other.ID] != verify {
		t.Errorf("started runs' kinds %v, want %d backup and %d verify", kinds, plain.ID, other.ID)
	}
	next := &pass.Run{Job: "b", JobID: other.JobID, Kind: pass.KindBackup, Trigger: pass.TriggerManual, Status: pass.StatusQueued,
		ScheduledAt: t0, QueuedAt: t0}
	if ok, err := s.Finish(ctx, pass.Run{ID: other.ID, Status: pass.StatusSucceeded, EndedAt: t0.Add(time.Minute)}, "tok", next); !ok || err != nil {
		t.Fatalf("finish: %v, %v", ok, err)
	}
	if got := mustRun(t, s, other.ID); got.Kind != verify {
		t.Errorf("finished run's kind %q, want %q", got.Kind, verify)
	}
	if got := mustRun(t, s, next.ID); got.Kind != pass.KindBackup {
		t.Errorf("next run's kind %q, want %q", got.Kind, pass.KindBackup)
	}
}

// testScheduledWork: the jobs of scheduled work (a repository's
// maintenance, a job's drills) have names no config job can take; the
// store keeps them as any job, and ClaimDue queues the kind plan gives,
// each job on its own, beside the run of the job the work is for.
func testScheduledWork(t *testing.T, s Store) {
	ctx := context.Background()
	daily, err := schedule.Parse("daily 02:00", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	x := pass.JobDef{Name: "x", Schedule: daily, Priority: "normal", Repository: "local"}
	defs := []pass.JobDef{x, pass.DrillJob(x, daily), pass.PruneJob("local", daily)}
	slot := t0.Add(-time.Minute)
	err = s.SyncJobs(ctx, defs, func(d pass.JobDef) string { return d.Schedule.String() }, func(pass.JobDef) time.Time { return slot })
	if err != nil {
		t.Fatal(err)
	}
	plan := func(j pass.Job) (time.Time, *pass.Run) {
		kind := map[string]string{"x": pass.KindBackup, pass.DrillJobName("x"): pass.KindDrill, pass.PruneJobName("local"): pass.KindPrune}[j.Name]
		if kind == "" {
			t.Errorf("ClaimDue handed plan job %q, which was never synchronised", j.Name)
		}
		return t0.Add(24 * time.Hour), &pass.Run{JobID: j.ID, Job: j.Name, Kind: kind, Trigger: pass.TriggerSchedule, Attempt: 1,
			Priority: "normal", ScheduledAt: slot, NotBefore: t0, QueuedAt: t0, Status: pass.StatusQueued}
	}
	claimed, err := s.ClaimDue(ctx, t0, plan)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range claimed {
		got[r.Job] = mustRun(t, s, r.ID).Kind
	}
	want := map[string]string{"x": pass.KindBackup, pass.DrillJobName("x"): pass.KindDrill, pass.PruneJobName("local"): pass.KindPrune}
	if !maps.Equal(got, want) {
		t.Errorf("claimed runs' kinds by job %v, want %v", got, want)
	}
	started := start(t, s, t0, "tok")
	if len(started) != 3 {
		t.Errorf("started %d runs, want 3: the work of one job is a job of its own, beside it", len(started))
	}
}

// A run admitted with a lease is reclaimed when its lease runs out, not by
// the reclaimer's staleBefore: a reclaimer whose stale_after is shorter,
// or whose clock is ahead by less than the lease has left, leaves it
// alone; each heartbeat renews the lease by the length it was admitted
// with; a runner that dead reports gone is reclaimed at once.
func testReclaimHonoursLease(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"leased": nil, "gone": nil})
	leased, gone := queue(t, s, "leased", t0), queue(t, s, "gone", t0)
	const lease = 10 * time.Minute
	started, err := s.Admit(ctx, t0, func(st pass.AdmitState) []pass.Admission {
		var a []pass.Admission
		for _, r := range st.Queued {
			a = append(a, pass.Admission{RunID: r.ID, Admit: true, Owner: "tok-" + r.Job, Runner: "host:" + r.Job, Lease: lease})
		}
		return a
	})
	if err != nil || len(started) != 2 {
		t.Fatal(started, err)
	}
	if r := mustRun(t, s, leased.ID); !r.LeaseUntil.Equal(t0.Add(lease)) {
		t.Fatalf("admitted run's lease until %s, want %s", r.LeaseUntil, t0.Add(lease))
	}
	// A heartbeat at 4 min renews the lease to 14 min.
	if reply, err := s.Heartbeat(ctx, leased.ID, "tok-leased", t0.Add(4*time.Minute), nil); err != nil || reply != pass.HeartbeatOK {
		t.Fatal(reply, err)
	}
	if r := mustRun(t, s, leased.ID); !r.LeaseUntil.Equal(t0.Add(14 * time.Minute)) {
		t.Fatalf("lease after a heartbeat at 4 min: until %s, want 14 min", r.LeaseUntil)
	}
	noRetry := func(pass.Run) *pass.Run { return nil }
	// At 6 min (or 13 min: a clock stepped 7 min ahead) a reclaimer whose
	// stale_after is 1 min would call the heartbeat stale; the lease holds.
	for i, now := range []time.Time{t0.Add(6 * time.Minute), t0.Add(13 * time.Minute)} {
		reclaimed, _, err := s.Reclaim(ctx, now, now.Add(-time.Minute), func(r string) bool { return r == "host:gone" }, noRetry)
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{gone.ID} // within its lease, but its runner is gone
		if i > 0 {
			want = []int64{}
		}
		if got := ids(reclaimed); !slices.Equal(got, want) {
			t.Fatalf("reclaim at %s: reclaimed %v, want %v", now.Sub(t0), got, want)
		}
		if r := mustRun(t, s, leased.ID); r.Status != pass.StatusRunning {
			t.Fatalf("the leased run was reclaimed at %s, within its lease: %+v", now.Sub(t0), r)
		}
	}
	// Once the lease ran out (a reclaimer with a long stale_after does not
	// keep it alive either), the run is reclaimed.
	after := t0.Add(14*time.Minute + time.Second)
	reclaimed, _, err := s.Reclaim(ctx, after, after.Add(-time.Hour), nil, noRetry)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(reclaimed); len(got) != 1 || got[0] != leased.ID {
		t.Fatalf("reclaim after the lease ran out: %v, want run %d", got, leased.ID)
	}
}

// FinishOrphan writes only while the run's lease is still expired, as read
// in its own transaction: a heartbeat (one that carries progress too)
// renews the lease, and a runner that renewed after a pass saw its lease
// run out keeps its run. A failed end of a run whose cancellation was
// requested is left to Reclaim.
func testFinishOrphanIsFencedByTheLease(t *testing.T, s Store) {
	ctx := context.Background()
	syncManual(t, s, map[string][]string{"leased": nil, "cancelled": nil})
	run, cancelled := queue(t, s, "leased", t0), queue(t, s, "cancelled", t0)
	const lease = 10 * time.Minute
	if _, err := s.Admit(ctx, t0, func(st pass.AdmitState) []pass.Admission {
		var a []pass.Admission
		for _, r := range st.Queued {
			a = append(a, pass.Admission{RunID: r.ID, Admit: true, Owner: "tok-" + r.Job, Runner: "host:" + r.Job, Lease: lease})
		}
		return a
	}); err != nil {
		t.Fatal(err)
	}
	progress := &pass.Progress{Figures: pass.Figures{Files: 2}, Current: "source /x"}
	if reply, err := s.Heartbeat(ctx, run.ID, "tok-leased", t0.Add(4*time.Minute), progress); err != nil || reply != pass.HeartbeatOK {
		t.Fatal(reply, err)
	}
	if r := mustRun(t, s, run.ID); !r.LeaseUntil.Equal(t0.Add(14 * time.Minute)) {
		t.Fatalf("lease after a heartbeat with progress at 4 min: until %s, want 14 min", r.LeaseUntil)
	}
	end := func(now time.Time) (bool, *pass.Run) {
		ended := mustRun(t, s, run.ID)
		ended.Status, ended.EndedAt, ended.Message = pass.StatusSucceeded, now, "recorded later"
		ended.Figures = pass.Figures{Files: 2}
		ended.Snapshots = []pass.SnapshotRef{{RepositoryID: "repo", SnapshotID: "snap", Source: "/x"}}
		next := &pass.Run{Job: "leased", Kind: pass.KindVerify, Trigger: pass.TriggerSchedule, Attempt: 1, Priority: "normal",
			ScheduledAt: now, NotBefore: now, QueuedAt: now, Status: pass.StatusQueued}
		ok, err := s.FinishOrphan(ctx, ended, "tok-leased", now, now.Add(-time.Minute), nil, next)
		if err != nil {
			t.Fatal(err)
		}
		return ok, next
	}
	if ok, _ := end(t0.Add(13 * time.Minute)); ok {
		t.Fatal("FinishOrphan within the lease wrote the run's end")
	}
	// The runner comes back at 14 min (a VM resumed) and renews to 24 min:
	// a pass that saw the lease run out at 15 min no longer takes the run.
	if reply, err := s.Heartbeat(ctx, run.ID, "tok-leased", t0.Add(14*time.Minute), nil); err != nil || reply != pass.HeartbeatOK {
		t.Fatal(reply, err)
	}
	if ok, _ := end(t0.Add(15 * time.Minute)); ok {
		t.Fatal("FinishOrphan after the runner renewed its lease wrote the run's end")
	}
	if r := mustRun(t, s, run.ID); r.Status != pass.StatusRunning {
		t.Fatalf("run is %s after refused FinishOrphans, want running", r.Status)
	}
	ok, next := end(t0.Add(25 * time.Minute))
	if !ok || next.ID == 0 {
		t.Fatalf("FinishOrphan after the lease ran out: %v, next %+v; want the end written and the next run queued", ok, next)
	}
	if r := mustRun(t, s, run.ID); r.Status != pass.StatusSucceeded || len(r.Snapshots) != 1 || r.Snapshots[0].SnapshotID != "snap" {
		t.Errorf("run after FinishOrphan: %s with snapshots %+v, want succeeded with its snapshot", r.Status, r.Snapshots)
	}

	if err := s.CancelRun(ctx, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(25 * time.Minute)
	failed := mustRun(t, s, cancelled.ID)
	failed.Status, failed.EndedAt, failed.ErrorClass, failed.ErrorCode, failed.Message = pass.StatusFailed, now, pass.ClassTransient, pass.CodeOrphaned, "orphaned"
	if ok, err := s.FinishOrphan(ctx, failed, "tok-cancelled", now, now.Add(-time.Minute), nil, nil); err != nil || ok {
		t.Errorf("FinishOrphan of a failed end of a run whose cancellation was requested: %v, %v; want refused", ok, err)
	}
}
