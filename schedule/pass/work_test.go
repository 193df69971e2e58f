package pass

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
)

// pruneJob is repository local's maintenance on spec.
func pruneJob(t *testing.T, spec string) JobDef {
	t.Helper()
	s, err := schedule.Parse(spec, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return PruneJob("local", s)
}

// drillJob is the drills of of on spec.
func drillJob(t *testing.T, of JobDef, spec string) JobDef {
	t.Helper()
	s, err := schedule.Parse(spec, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return DrillJob(of, s)
}

func onRepository(repo string) func(*JobDef) { return func(d *JobDef) { d.Repository = repo } }

// running stores a run of job as running since at, as another runner
// that is alive holds it.
func (f *fixture) running(job, kind string, since time.Time) Run {
	return f.store.add(f.t, Run{Job: job, Kind: kind, Trigger: TriggerSchedule, Attempt: 1, Priority: "normal",
		ScheduledAt: since, NotBefore: since, QueuedAt: since, StartedAt: since, HeartbeatAt: since,
		Status: StatusRunning, Owner: "other-token", Runner: "host-b:200"})
}

// beat renews the heartbeat of a run another runner holds, as that runner does.
func (f *fixture) beat(id int64, at time.Time) {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	f.store.run(id).HeartbeatAt = at
}

// end ends a running run that another runner held, as its Finish would.
func (f *fixture) end(id int64, at time.Time) {
	f.store.mu.Lock()
	defer f.store.mu.Unlock()
	r := f.store.run(id)
	r.Status, r.EndedAt, r.Owner = StatusSucceeded, at, ""
}

func (f *fixture) queuedKind(name, kind, priority string, queuedAt time.Time) Run {
	return f.store.add(f.t, Run{Job: name, Kind: kind, Trigger: TriggerManual, Attempt: 1, Priority: priority,
		ScheduledAt: queuedAt, NotBefore: queuedAt, QueuedAt: queuedAt})
}

func (f *fixture) explain(name string) Explanation {
	f.t.Helper()
	e, err := f.pass.ExplainJob(context.Background(), f.store.job(f.t, name))
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

// While a repository's maintenance runs, every other run of that
// repository is held with the reason, whatever its kind and however high
// its priority, also where the repository's limit would allow it; runs of
// other repositories are not; and job explain names the maintenance both
// for a queued run and for a job with none.
func TestMaintenanceHoldsTheRunsOfItsRepositoryWhileItRuns(t *testing.T) {
	cases := []struct {
		name      string
		repoLimit int // 0: none
	}{
		{name: "no repository limit"},
		{name: "the repository's limit allows more runs", repoLimit: 3},
		{name: "the repository's limit is full", repoLimit: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, manual(t, "a"), manual(t, "c"), manual(t, "b", onRepository("other")), pruneJob(t, "manual"))
			if tc.repoLimit > 0 {
				f.pass.Limits.PerRepository = map[string]int{"local": tc.repoLimit}
			}
			f.run(at(0))
			prune := f.running(PruneJobName("local"), KindPrune, at(h))
			a := f.queuedKind("a", KindBackup, "critical", at(h))
			ret := f.queuedKind("c", KindRetention, "normal", at(h))
			b := f.queuedKind("b", KindBackup, "normal", at(h))
			sum := f.run(at(h))
			want := "waiting: repository maintenance (prune) of local is running (run " + itoa(prune.ID) + ")"
			for _, r := range []Run{a, ret} {
				if got := f.store.get(r.ID); got.Status != StatusQueued || got.HeldReason != want {
					t.Errorf("%s run of %s: %s, held %q; want queued and held %q", r.Kind, r.Job, got.Status, got.HeldReason, want)
				}
			}
			if got := f.store.get(b.ID); got.Status != StatusSucceeded {
				t.Errorf("backup of job b on another repository: %s (held %q), want it run", got.Status, got.HeldReason)
			}
			if got := startedJobs(sum); len(got) != 1 || got[0] != "b" {
				t.Errorf("started %v, want only b", got)
			}
			if e := f.explain("a"); e.State != ExplainWaiting || !strings.Contains(e.String(), want) {
				t.Errorf("job explain a:\n%s\nwant waiting with %q", e, want)
			}
			// A job with no run queued: explain says what would hold one.
			f.store.CancelRun(context.Background(), ret.ID)
			if e := f.explain("c"); !strings.Contains(e.String(), "a run now would be "+want) {
				t.Errorf("job explain c:\n%s\nwant %q", e, "a run now would be "+want)
			}
			if e := f.explain("b"); strings.Contains(e.String(), "maintenance") {
				t.Errorf("job explain b (another repository) names the maintenance:\n%s", e)
			}

			f.end(prune.ID, at(2*h))
			f.run(at(2 * h))
			if got := f.store.get(a.ID); got.Status != StatusSucceeded {
				t.Errorf("after the maintenance ended, a's run is %s (held %q), want it run", got.Status, got.HeldReason)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Maintenance that comes due while runs of its repository run waits for
// them, saying which; new runs of the repository, even of a higher
// priority, wait behind it, so a stream of backups cannot starve it; once
// the repository is idle it starts, and the runs behind it follow after
// it.
func TestMaintenanceWaitsWhileRunsOfItsRepositoryRunAndIsNotStarved(t *testing.T) {
	f := newFixture(t, manual(t, "a"), manual(t, "c"), manual(t, "b", onRepository("other")), pruneJob(t, "daily 04:00"))
	f.run(at(0))
	backup := f.running("a", KindBackup, at(3*h))
	f.beat(backup.ID, at(4*h))
	sum := f.run(at(4 * h)) // the maintenance's slot
	if len(sum.Claimed) != 1 || sum.Claimed[0].Kind != KindPrune || sum.Claimed[0].Job != PruneJobName("local") {
		t.Fatalf("claimed %+v at the slot, want one prune run of %s", sum.Claimed, PruneJobName("local"))
	}
	prune := sum.Claimed[0]
	waits := "waiting: repository maintenance (prune) of local waits while 1 run of it runs: backup run " + itoa(backup.ID) + " of a"
	if got := f.store.get(prune.ID); got.Status != StatusQueued || got.HeldReason != waits {
		t.Fatalf("prune run: %s, held %q; want queued and held %q", got.Status, got.HeldReason, waits)
	}
	if e := f.explain(PruneJobName("local")); e.State != ExplainWaiting || !strings.Contains(e.String(), waits) {
		t.Errorf("job explain %s:\n%s\nwant waiting with %q", PruneJobName("local"), e, waits)
	}

	// New runs of the repository come while the backup still runs.
	c := f.queuedKind("c", KindBackup, "critical", at(4*h+time.Minute))
	b := f.queuedKind("b", KindBackup, "normal", at(4*h+time.Minute))
	f.beat(backup.ID, at(4*h+time.Minute))
	f.run(at(4*h + time.Minute))
	behind := "waiting: repository maintenance (prune) of local is queued and goes first: new runs of local wait until it has run"
	if got := f.store.get(c.ID); got.Status != StatusQueued || got.HeldReason != behind {
		t.Errorf("critical backup of c: %s, held %q; want queued and held %q", got.Status, got.HeldReason, behind)
	}
	if got := f.store.get(prune.ID); got.HeldReason != waits {
		t.Errorf("prune run held %q, want %q", got.HeldReason, waits)
	}
	if got := f.store.get(b.ID); got.Status != StatusSucceeded {
		t.Errorf("backup of b on another repository: %s, want it run", got.Status)
	}

	// The backup ends: the maintenance starts, c still waits.
	f.end(backup.ID, at(5*h))
	var during Explanation
	f.exec.do = func(_ context.Context, def JobDef, run Run) (Result, error) {
		if run.Kind == KindPrune {
			if def.Name != PruneJobName("local") || def.Repository != "local" {
				t.Errorf("the executor got %+v for the prune run, want the maintenance of local", def)
			}
			during = f.explain("c")
		}
		return Result{}, nil
	}
	sum = f.run(at(5 * h))
	if got := startedJobs(sum); len(got) != 1 || got[0] != PruneJobName("local") {
		t.Fatalf("started %v once the repository was idle, want only its maintenance", got)
	}
	running := "waiting: repository maintenance (prune) of local is running (run " + itoa(prune.ID) + ")"
	if heldReasons(sum)["c"] != running {
		t.Errorf("c held %q in the pass that started the maintenance, want %q", heldReasons(sum)["c"], running)
	}
	if !strings.Contains(during.String(), running) {
		t.Errorf("job explain c while the maintenance ran:\n%s\nwant %q", during, running)
	}
	wantRun(t, f.store.get(prune.ID), StatusSucceeded, "", "")
	f.exec.do = nil
	f.run(at(5*h + time.Minute))
	if got := f.store.get(c.ID); got.Status != StatusSucceeded {
		t.Errorf("after the maintenance, c's backup is %s (held %q), want it run", got.Status, got.HeldReason)
	}
}

// A maintenance run that a window holds back holds no other run: the
// backups of its repository go on until it may start.
func TestMaintenanceHeldByAWindowHoldsNothing(t *testing.T) {
	f := newFixture(t, manual(t, "a"), pruneJob(t, "manual"))
	s, err := schedule.Parse("daily 00:30", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	w, err := schedule.NewRecurringWindow("no-prune-by-night", schedule.Blackout, s, 2*h, []string{PruneJobName("local")})
	if err != nil {
		t.Fatal(err)
	}
	f.pass.Windows = []schedule.Window{w}
	f.run(at(0))
	prune := f.queuedKind(PruneJobName("local"), KindPrune, "normal", at(h))
	a := f.queuedKind("a", KindBackup, "normal", at(h))
	sum := f.run(at(h))
	if got := f.store.get(a.ID); got.Status != StatusSucceeded {
		t.Errorf("backup of a: %s (held %q), want it run", got.Status, got.HeldReason)
	}
	if r := heldReasons(sum)[PruneJobName("local")]; !strings.Contains(r, "blackout window no-prune-by-night") {
		t.Errorf("prune run %d held %q, want the blackout window", prune.ID, r)
	}
}

// The slots of scheduled work queue runs of its kind on its own job, on
// time and as one catch-up run for missed slots; a drill is executed with
// the job it drills, takes no share of the per-source limit and does not
// wait for the job's backup; a failed maintenance is retried as
// maintenance.
func TestScheduledWorkQueuesItsKind(t *testing.T) {
	x := job(t, "x", "daily 02:00")
	f := newFixture(t, x, drillJob(t, x, "daily 03:00"), pruneJob(t, "weekly wed 04:00"))
	f.pass.Limits = Limits{PerSource: 1}
	f.run(at(0))
	if got := f.store.job(t, DrillJobName("x")).NextRun; !got.Equal(at(3 * h)) {
		t.Errorf("the drill's next slot is %s, want 03:00", got)
	}
	if got := f.store.job(t, PruneJobName("local")).NextRun; !got.Equal(at(4 * h)) { // 2026-06-10 is a Wednesday
		t.Errorf("the maintenance's next slot is %s, want 04:00", got)
	}

	backup := f.running("x", KindBackup, at(2*h))
	var drilled []JobDef
	f.exec.do = func(_ context.Context, def JobDef, run Run) (Result, error) {
		if run.Kind == KindDrill {
			drilled = append(drilled, def)
		}
		return Result{}, nil
	}
	f.beat(backup.ID, at(3*h))
	sum := f.run(at(3 * h))
	if len(sum.Claimed) != 1 || sum.Claimed[0].Job != DrillJobName("x") || sum.Claimed[0].Kind != KindDrill || sum.Claimed[0].Trigger != TriggerSchedule {
		t.Fatalf("claimed %+v at 03:00, want one scheduled drill run of %s", sum.Claimed, DrillJobName("x"))
	}
	if len(drilled) != 1 || drilled[0].Name != "x" || len(drilled[0].Sources) != 1 || drilled[0].Sources[0] != "/x" {
		t.Errorf("the executor got %+v for the drill, want job x with its sources", drilled)
	}
	if got := f.store.get(backup.ID); got.Status != StatusRunning {
		t.Errorf("the backup of x is %s, want still running beside the drill", got.Status)
	}
	f.end(backup.ID, at(3*h+time.Minute))

	// Three days off: each kind gets one catch-up run for the slots missed.
	f.exec.do = func(_ context.Context, _ JobDef, run Run) (Result, error) {
		if run.Kind == KindPrune {
			return Result{}, &ClassError{Class: ClassBusy, Code: "REPOSITORY_BUSY", Err: errors.New("repository is locked")}
		}
		return Result{}, nil
	}
	later := at(7*24*h + 5*h) // next Wednesday, 05:00
	sum = f.run(later)
	kinds := map[string]Run{}
	for _, r := range sum.Claimed {
		kinds[r.Kind] = r
	}
	for _, kind := range []string{KindBackup, KindDrill, KindPrune} {
		r, ok := kinds[kind]
		if !ok || r.Trigger != TriggerCatchUp || r.MissedSlots == 0 {
			t.Errorf("%s: claimed %+v, want one catch-up run for the missed slots", kind, r)
		}
	}
	if len(sum.Claimed) != 3 {
		t.Errorf("claimed %d runs, want 3 (one per job)", len(sum.Claimed))
	}
	retries := f.store.runsOf(PruneJobName("local"))
	if last := retries[len(retries)-1]; last.Kind != KindPrune || last.Trigger != TriggerRetry || last.Status != StatusQueued {
		t.Errorf("after a busy prune, the maintenance's last run is %+v, want a queued prune retry", last)
	}
}

// A prune that outlasts its interval is caught up at the first pass after
// it ends, before admission, and is pending again: a backup queued while
// the first prune ran keeps its place before the next one, and runs.
func TestMaintenanceLongerThanItsIntervalDoesNotStarveEarlierRuns(t *testing.T) {
	f := newFixture(t, manual(t, "a"), pruneJob(t, "every 30m"))
	f.exec.do = func(ctx context.Context, job JobDef, run Run) (Result, error) {
		if run.Kind == KindPrune {
			f.clock.Add(45 * time.Minute) // a prune of a big repository
		}
		return Result{}, nil
	}
	f.run(at(0))
	var backup Run
	f.exec.do = func(ctx context.Context, job JobDef, run Run) (Result, error) {
		if run.Kind == KindPrune {
			if backup.ID == 0 { // queued while the first prune runs
				backup = f.queuedKind("a", KindBackup, "normal", f.clock.Now())
			}
			f.clock.Add(45 * time.Minute)
		}
		return Result{}, nil
	}
	f.clock.Set(at(31 * time.Minute))
	for range 5 {
		f.run(f.clock.Now())
		f.clock.Add(time.Second)
	}
	if got := f.store.get(backup.ID); got.Status != StatusSucceeded {
		t.Errorf("the backup queued during a prune is %s after 5 passes, held %q; want it run before the next prune", got.Status, got.HeldReason)
	}
}
