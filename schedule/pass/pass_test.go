package pass

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
)

// day is the first day of every scenario, in UTC.
var day = time.Date(2026, 6, 10, 0, 0, 0, 0, time.UTC)

// at returns day plus d.
func at(d time.Duration) time.Time { return day.Add(d) }

const h = time.Hour

type fixture struct {
	t     *testing.T
	store *fakeStore
	clock *fakeClock
	exec  *recorder
	pass  *Pass
}

func newFixture(t *testing.T, jobs ...JobDef) *fixture {
	t.Helper()
	f := &fixture{t: t, store: newFakeStore(), clock: &fakeClock{t: day}, exec: &recorder{}}
	f.store.now = f.clock.Now
	var mu sync.Mutex
	tokens := 0
	f.pass = &Pass{
		Store:      f.store,
		Executor:   f.exec,
		Jobs:       map[string]JobDef{},
		Now:        f.clock.Now,
		Heartbeat:  2 * time.Millisecond,
		StaleAfter: 5 * time.Minute,
		Grace:      5 * time.Minute,
		Runner:     "host-a:100",
		Jitter:     func() float64 { return 0 }, // backoffs exact; jitter has tests of its own
		NewToken: func() string {
			mu.Lock()
			defer mu.Unlock()
			tokens++
			return fmt.Sprintf("token-%d", tokens)
		},
	}
	for _, j := range jobs {
		f.pass.Jobs[j.Name] = j
	}
	return f
}

// run runs one pass at the given time.
func (f *fixture) run(now time.Time) Summary {
	f.t.Helper()
	f.clock.Set(now)
	sum, err := f.pass.Run(context.Background())
	if err != nil {
		f.t.Fatalf("pass at %s: %v", now.Format(time.RFC3339), err)
	}
	return sum
}

func job(t *testing.T, name, spec string, opts ...func(*JobDef)) JobDef {
	t.Helper()
	s, err := schedule.Parse(spec, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	def := JobDef{Name: name, Schedule: s, Priority: "normal", Repository: "local", Sources: []string{"/" + name}, CatchUp: schedule.CatchUpOnce}
	for _, o := range opts {
		o(&def)
	}
	return def
}

func manual(t *testing.T, name string, opts ...func(*JobDef)) JobDef {
	return job(t, name, "manual", opts...)
}

func window(t *testing.T, name string, kind schedule.WindowKind, start string, length time.Duration) schedule.Window {
	t.Helper()
	s, err := schedule.Parse(start, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	w, err := schedule.NewRecurringWindow(name, kind, s, length, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// queued stores a queued manual run of job, queued at queuedAt.
func (f *fixture) queued(name, priority string, queuedAt time.Time) Run {
	return f.store.add(f.t, Run{Job: name, Trigger: TriggerManual, Attempt: 1, Priority: priority,
		ScheduledAt: queuedAt, NotBefore: queuedAt, QueuedAt: queuedAt})
}

func wantRun(t *testing.T, r Run, status, class, code string) {
	t.Helper()
	if r.Status != status || r.ErrorClass != class || r.ErrorCode != code {
		t.Errorf("run %d of %s: status %s, class %q, code %q; want %s, %q, %q (message %q)",
			r.ID, r.Job, r.Status, r.ErrorClass, r.ErrorCode, status, class, code, r.Message)
	}
}

func heldReasons(sum Summary) map[string]string {
	out := map[string]string{}
	for _, h := range sum.Held {
		out[h.Job] = h.Reason
	}
	return out
}

func startedJobs(sum Summary) []string {
	var out []string
	for _, r := range sum.Started {
		out = append(out, r.Job)
	}
	return out
}

func TestDueJobRunsOnceAndNextSlotIsWrittenAtClaim(t *testing.T) {
	f := newFixture(t, job(t, "daten", "daily 02:00"))
	f.run(at(0))
	if got := f.store.job(t, "daten").NextRun; !got.Equal(at(2 * h)) {
		t.Fatalf("a new job's next run is %s, want 02:00", got)
	}
	// The run takes three hours; its job must not come due again meanwhile.
	f.exec.do = func(ctx context.Context, _ JobDef, run Run) (Result, error) {
		if next := f.store.job(t, "daten").NextRun; !next.Equal(at(26 * h)) {
			t.Errorf("while running, the next run is %s, want tomorrow 02:00 (written at claim)", next)
		}
		f.clock.Add(3 * h)
		return Result{Figures: Figures{Files: 3}}, nil
	}
	sum := f.run(at(2*h + 30*time.Second))
	if len(sum.Claimed) != 1 || len(sum.Finished) != 1 {
		t.Fatalf("claimed %d, finished %d runs; want 1 and 1", len(sum.Claimed), len(sum.Finished))
	}
	r := f.store.get(sum.Finished[0].ID)
	wantRun(t, r, StatusSucceeded, "", "")
	if r.Trigger != TriggerSchedule || !r.ScheduledAt.Equal(at(2*h)) || r.MissedSlots != 0 || r.Attempt != 1 {
		t.Errorf("run: trigger %s, slot %s, missed %d, attempt %d", r.Trigger, r.ScheduledAt, r.MissedSlots, r.Attempt)
	}
	if got := sum.Counts(); got[StatusSucceeded] != 1 || len(got) != 1 {
		t.Errorf("counts %v", got)
	}
	// No drift: the next slot is counted from the slot, not from the run's end.
	if next := f.store.job(t, "daten").NextRun; !next.Equal(at(26 * h)) {
		t.Errorf("after the run the next run is %s, want tomorrow 02:00", next)
	}
	f.run(at(5*h + time.Minute))
	if n := len(f.exec.ran()); n != 1 {
		t.Errorf("the job ran %d times, want once", n)
	}
}

func TestJobNotDueDoesNothing(t *testing.T) {
	f := newFixture(t, job(t, "daten", "daily 02:00"))
	f.run(at(0))
	sum := f.run(at(h + 59*time.Minute))
	if len(sum.Claimed)+len(sum.Started)+len(sum.Held)+len(sum.Missed) != 0 || len(f.exec.ran()) != 0 {
		t.Errorf("a job not due did something: %+v", sum)
	}
	if next := f.store.job(t, "daten").NextRun; !next.Equal(at(2 * h)) {
		t.Errorf("next run moved to %s", next)
	}
}

func TestMissedSlotsCatchUpOnce(t *testing.T) {
	f := newFixture(t, job(t, "daten", "daily 02:00"))
	f.run(at(h))
	// The machine was off from day 1 01:00 to day 4 10:00: four slots passed.
	sum := f.run(at(3*24*h + 10*h))
	if len(sum.Claimed) != 1 || len(sum.Finished) != 1 {
		t.Fatalf("claimed %d runs, want one catch-up run", len(sum.Claimed))
	}
	r := f.store.get(sum.Claimed[0].ID)
	if r.Trigger != TriggerCatchUp || r.MissedSlots != 4 || !r.ScheduledAt.Equal(at(3*24*h+2*h)) {
		t.Errorf("run: trigger %s, missed %d, slot %s; want catch_up, 4, the latest slot", r.Trigger, r.MissedSlots, r.ScheduledAt)
	}
	if len(sum.Missed) != 1 || sum.Missed[0] != (Missed{Job: "daten", Slots: 4, Latest: at(3*24*h + 2*h), CaughtUp: true}) {
		t.Errorf("missed %+v", sum.Missed)
	}
	if next := f.store.job(t, "daten").NextRun; !next.Equal(at(4*24*h + 2*h)) {
		t.Errorf("next run %s, want day 5 02:00", next)
	}
}

func TestMissedSlotsCatchUpSkip(t *testing.T) {
	f := newFixture(t, job(t, "daten", "daily 02:00", func(d *JobDef) { d.CatchUp = schedule.CatchUpSkip }))
	f.run(at(h))
	sum := f.run(at(3*24*h + 10*h))
	if len(sum.Claimed) != 0 || len(f.exec.ran()) != 0 {
		t.Fatalf("catch_up skip queued %d runs", len(sum.Claimed))
	}
	if len(sum.Missed) != 1 || sum.Missed[0].Slots != 4 || sum.Missed[0].CaughtUp {
		t.Errorf("missed %+v, want 4 slots not caught up", sum.Missed)
	}
	if next := f.store.job(t, "daten").NextRun; !next.Equal(at(4*24*h + 2*h)) {
		t.Fatalf("next run %s, want day 5 02:00", next)
	}
	sum = f.run(at(4*24*h + 2*h + 10*time.Second))
	if len(sum.Finished) != 1 || sum.Finished[0].Trigger != TriggerSchedule || sum.Finished[0].MissedSlots != 0 {
		t.Errorf("at the next slot: %+v", sum.Finished)
	}
}

func TestBlackoutWindowPostponesTheSlot(t *testing.T) {
	f := newFixture(t, job(t, "daten", "daily 02:00"))
	f.pass.Windows = []schedule.Window{window(t, "maintenance", schedule.Blackout, "daily 01:00", 2*h)}
	f.run(at(0))
	if next := f.store.job(t, "daten").NextRun; !next.Equal(at(3 * h)) {
		t.Fatalf("next run %s, want 03:00 (02:00 postponed out of the blackout)", next)
	}
	if sum := f.run(at(2*h + time.Minute)); len(sum.Claimed) != 0 {
		t.Fatalf("a run was claimed inside the blackout")
	}
	sum := f.run(at(3*h + 10*time.Second))
	if len(sum.Finished) != 1 || !sum.Finished[0].ScheduledAt.Equal(at(3*h)) {
		t.Fatalf("at 03:00: finished %+v", sum.Finished)
	}
	if next := f.store.job(t, "daten").NextRun; !next.Equal(at(24*h + 3*h)) {
		t.Errorf("next run %s, want tomorrow 03:00", next)
	}
}

func TestBlackoutAtClaimTimeDelaysTheRunWithAReason(t *testing.T) {
	f := newFixture(t, job(t, "daten", "daily 02:00"))
	f.run(at(0)) // no windows yet: next run 02:00
	f.pass.Windows = []schedule.Window{window(t, "maintenance", schedule.Blackout, "daily 01:30", 2*h)}
	sum := f.run(at(2*h + 10*time.Second))
	if len(sum.Claimed) != 1 || len(sum.Started) != 0 {
		t.Fatalf("claimed %d, started %d; want the run queued and not started", len(sum.Claimed), len(sum.Started))
	}
	r := f.store.get(sum.Claimed[0].ID)
	if !r.NotBefore.Equal(at(3*h+30*time.Minute)) || !strings.Contains(r.HeldReason, "waiting: blackout window maintenance until") {
		t.Errorf("run: not before %s, reason %q", r.NotBefore, r.HeldReason)
	}
	if next := f.store.job(t, "daten").NextRun; !next.Equal(at(24*h + 3*h + 30*time.Minute)) {
		t.Errorf("next run %s, want tomorrow 03:30", next)
	}
	sum = f.run(at(3*h + 30*time.Minute))
	if len(sum.Finished) != 1 || sum.Finished[0].ID != r.ID || !sum.Finished[0].ScheduledAt.Equal(at(2*h)) {
		t.Errorf("after the blackout: %+v", sum.Finished)
	}
}

func TestAllowedWindow(t *testing.T) {
	f := newFixture(t, job(t, "hourly", "every 1h"))
	f.pass.Windows = []schedule.Window{window(t, "night", schedule.Allowed, "daily 22:00", 4*h)}
	f.run(at(12 * h))
	if next := f.store.job(t, "hourly").NextRun; !next.Equal(at(22 * h)) {
		t.Fatalf("next run %s, want 22:00 when the allowed window opens", next)
	}
	sum := f.run(at(22*h + 5*time.Second))
	if len(sum.Finished) != 1 {
		t.Fatalf("finished %d runs at 22:00", len(sum.Finished))
	}
	if next := f.store.job(t, "hourly").NextRun; !next.Equal(at(23 * h)) {
		t.Errorf("next run %s, want 23:00 inside the window", next)
	}
	// The window closes at 02:00: the 02:00 slot waits for the next evening.
	f.run(at(25*h + 5*time.Second))
	if next := f.store.job(t, "hourly").NextRun; !next.Equal(at(46 * h)) {
		t.Errorf("next run %s after 01:00, want tomorrow 22:00", next)
	}
}

func TestGlobalLimitHoldsWithReason(t *testing.T) {
	f := newFixture(t, manual(t, "a"), manual(t, "b"), manual(t, "c", func(d *JobDef) { d.Repository = "remote" }))
	f.pass.Limits.Global = 2
	f.run(at(0))
	for i, name := range []string{"a", "b", "c"} {
		f.queued(name, "normal", at(time.Duration(i)*time.Minute))
	}
	sum := f.run(at(h))
	if got := startedJobs(sum); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("started %v, want the two oldest", got)
	}
	want := "waiting: global limit of 2 runs"
	if got := heldReasons(sum)["c"]; got != want {
		t.Errorf("held reason %q, want %q", got, want)
	}
	if r := f.store.runsOf("c")[0]; r.Status != StatusQueued || r.HeldReason != want {
		t.Errorf("stored: %s %q", r.Status, r.HeldReason)
	}
	sum = f.run(at(h + time.Minute))
	if got := startedJobs(sum); len(got) != 1 || got[0] != "c" {
		t.Errorf("next pass started %v, want c", got)
	}
}

func TestPerRepositoryLimit(t *testing.T) {
	f := newFixture(t, manual(t, "a"), manual(t, "b"), manual(t, "c", func(d *JobDef) { d.Repository = "remote" }))
	f.pass.Limits.PerRepository = map[string]int{"local": 1}
	f.run(at(0))
	f.queued("a", "normal", at(h))
	f.queued("b", "normal", at(h+time.Minute))
	f.queued("c", "normal", at(h+2*time.Minute))
	sum := f.run(at(2 * h))
	if got := startedJobs(sum); len(got) != 2 || got[0] != "a" || got[1] != "c" {
		t.Errorf("started %v, want a and c", got)
	}
	if got, want := heldReasons(sum)["b"], "waiting: repository local at its limit of 1"; got != want {
		t.Errorf("held reason %q, want %q", got, want)
	}
}

func TestPerSourceLimitCountsOtherRunners(t *testing.T) {
	shared := func(d *JobDef) { d.Sources = []string{"/data"} }
	f := newFixture(t, manual(t, "to-local", shared), manual(t, "to-remote", shared, func(d *JobDef) { d.Repository = "remote" }), manual(t, "other"))
	f.pass.Limits.PerSource = 1
	f.run(at(0))
	// Another pass runs to-local right now.
	f.store.add(t, Run{Job: "to-local", Trigger: TriggerManual, Attempt: 1, Status: StatusRunning,
		Owner: "theirs", Runner: "host-b:7", StartedAt: at(h), HeartbeatAt: at(h)})
	f.queued("to-remote", "normal", at(h))
	f.queued("other", "normal", at(h))
	sum := f.run(at(h + time.Minute))
	if got := startedJobs(sum); len(got) != 1 || got[0] != "other" {
		t.Errorf("started %v, want other", got)
	}
	if got, want := heldReasons(sum)["to-remote"], "waiting: source /data at its limit of 1"; got != want {
		t.Errorf("held reason %q, want %q", got, want)
	}
}

func TestPriorityAndAging(t *testing.T) {
	type queued struct {
		job, priority string
		waited        time.Duration
	}
	cases := []struct {
		name  string
		runs  []queued
		first string
	}{
		{"critical goes before normal", []queued{{"n", "normal", 0}, {"c", "critical", 0}}, "c"},
		{"an aged low never overtakes a fresh critical", []queued{{"l", "low", 100 * h}, {"c", "critical", 0}}, "c"},
		{"an aged low never overtakes a fresh high", []queued{{"l", "low", 100 * h}, {"x", "high", 0}}, "x"},
		{"a normal aged two hours ties a fresh high and, older, goes first", []queued{{"x", "high", 0}, {"n", "normal", 2 * h}}, "n"},
		{"a normal aged one hour stays behind a fresh high", []queued{{"x", "high", 0}, {"n", "normal", h}}, "x"},
		{"a normal aged one hour overtakes a fresh normal queued before it in the list", []queued{{"m", "normal", 0}, {"n", "normal", h}}, "n"},
		{"an unknown level counts as normal", []queued{{"l", "low", 0}, {"u", "urgent", 0}}, "u"},
		{"a high aged one hour overtakes a fresh high", []queued{{"x", "high", 0}, {"y", "high", h}}, "y"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			for _, q := range c.runs {
				f.pass.Jobs[q.job] = manual(t, q.job, func(d *JobDef) { d.Priority = q.priority })
			}
			f.pass.Limits.Global = 1
			now := at(200 * h)
			f.run(now)
			for _, q := range c.runs {
				f.queued(q.job, q.priority, now.Add(-q.waited))
			}
			sum := f.run(now)
			if got := startedJobs(sum); len(got) != 1 || got[0] != c.first {
				t.Errorf("started %v, want %s", got, c.first)
			}
			for job, reason := range heldReasons(sum) {
				if reason != "waiting: global limit of 1 run" {
					t.Errorf("%s held with %q", job, reason)
				}
			}
		})
	}
}

func TestDependencyWaitsUntilPredecessorSucceeded(t *testing.T) {
	f := newFixture(t, manual(t, "db-dump"), manual(t, "daten", func(d *JobDef) { d.DependsOn = []string{"db-dump"} }))
	f.run(at(0))
	f.exec.do = func(_ context.Context, job JobDef, _ Run) (Result, error) {
		if job.Name == "db-dump" {
			return Result{}, &ClassError{Class: ClassAuth, Code: "DB_LOGIN", Err: errors.New("login refused")}
		}
		return Result{}, nil
	}
	f.queued("db-dump", "normal", at(h))
	f.queued("daten", "normal", at(h))
	sum := f.run(at(h + time.Minute))
	if got := startedJobs(sum); len(got) != 1 || got[0] != "db-dump" {
		t.Fatalf("started %v, want db-dump alone", got)
	}
	if got, want := heldReasons(sum)["daten"], "waiting: dependency db-dump has not succeeded: it is starting now"; got != want {
		t.Errorf("held reason %q, want %q", got, want)
	}
	sum = f.run(at(h + 2*time.Minute))
	if got, want := heldReasons(sum)["daten"], "waiting: dependency db-dump has not succeeded"; got != want {
		t.Errorf("after the dump failed: held reason %q, want %q", got, want)
	}
	f.exec.do = nil
	f.queued("db-dump", "normal", at(h+3*time.Minute))
	sum = f.run(at(h + 3*time.Minute))
	if got := startedJobs(sum); len(got) != 1 || got[0] != "db-dump" {
		t.Fatalf("started %v, want db-dump", got)
	}
	sum = f.run(at(h + 4*time.Minute))
	if got := startedJobs(sum); len(got) != 1 || got[0] != "daten" {
		t.Errorf("after the dump succeeded: started %v, want daten", got)
	}
}

func TestRetryWithBackoff(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.run(at(0))
	f.exec.do = func(context.Context, JobDef, Run) (Result, error) {
		return Result{}, &ClassError{Class: ClassTransient, Code: "TIMEOUT", Err: errors.New("repository timed out")}
	}
	first := f.queued("daten", "normal", at(h))
	f.run(at(h))
	wantRun(t, f.store.get(first.ID), StatusFailed, ClassTransient, "TIMEOUT")

	waits := []time.Duration{30 * time.Second, 60 * time.Second, 120 * time.Second}
	now := at(h)
	for i, wait := range waits {
		runs := f.store.runsOf("daten")
		retry := runs[len(runs)-1]
		if retry.Status != StatusQueued || retry.Trigger != TriggerRetry || retry.Attempt != i+2 ||
			!retry.NotBefore.Equal(now.Add(wait)) || !retry.ScheduledAt.Equal(at(h)) {
			t.Fatalf("retry %d: %+v; want attempt %d not before %s", i+1, retry, i+2, now.Add(wait))
		}
		if !strings.HasPrefix(retry.HeldReason, fmt.Sprintf("waiting: retry %d of 4 after a transient error", i+2)) {
			t.Errorf("retry reason %q", retry.HeldReason)
		}
		if sum := f.run(now.Add(wait - time.Second)); len(sum.Started) != 0 {
			t.Fatalf("retry %d started before its backoff", i+1)
		}
		now = now.Add(wait)
		f.run(now)
	}
	runs := f.store.runsOf("daten")
	if len(runs) != 4 || runs[3].Status != StatusFailed || len(f.exec.ran()) != 4 {
		t.Errorf("after 4 attempts: %d runs, the last %s, %d executions; want 4 failed attempts (3 retries) and no fifth", len(runs), runs[len(runs)-1].Status, len(f.exec.ran()))
	}
}

// After one outage shared by many jobs, the default policy's jitter spreads
// their retries over the last fifth of the backoff instead of starting them
// all at once; a job with NoJitter keeps the exact backoff. Both with a
// seeded generator and with the Pass's own default (Jitter nil), which is
// what a user gets.
func TestRetriesOfASharedOutageAreSpread(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 16))
	var rngMu sync.Mutex
	seeded := func() float64 { // locked: the pass records its runs' results at once
		rngMu.Lock()
		defer rngMu.Unlock()
		return rng.Float64()
	}
	for name, jitter := range map[string]func() float64{"seeded": seeded, "default": nil} {
		t.Run(name, func(t *testing.T) { testRetriesSpread(t, jitter) })
	}
}

func testRetriesSpread(t *testing.T, jitter func() float64) {
	var defs []JobDef
	for i := range 40 {
		defs = append(defs, manual(t, fmt.Sprintf("job%02d", i)))
	}
	defs = append(defs, manual(t, "exact", func(d *JobDef) { d.Retry.NoJitter = true }))
	f := newFixture(t, defs...)
	f.pass.Limits = Limits{}
	f.pass.Jitter = jitter
	f.run(at(0))
	f.exec.do = func(context.Context, JobDef, Run) (Result, error) {
		return Result{}, &ClassError{Class: ClassNetwork, Err: errors.New("connection refused")}
	}
	for _, d := range defs {
		f.queued(d.Name, "normal", at(h))
	}
	f.run(at(h))
	distinct := map[time.Time]bool{}
	for _, d := range defs {
		runs := f.store.runsOf(d.Name)
		retry := runs[len(runs)-1]
		if retry.Trigger != TriggerRetry || retry.Status != StatusQueued {
			t.Fatalf("job %s: last run %+v, want a queued retry", d.Name, retry)
		}
		wait := retry.NotBefore.Sub(at(h))
		if d.Name == "exact" {
			if wait != DefaultRetryInitial {
				t.Errorf("job with NoJitter: retry after %s, want exactly %s", wait, DefaultRetryInitial)
			}
			continue
		}
		if wait > DefaultRetryInitial || wait < DefaultRetryInitial*4/5 {
			t.Errorf("job %s: retry after %s, want within the last fifth of %s", d.Name, wait, DefaultRetryInitial)
		}
		distinct[retry.NotBefore] = true
	}
	t.Logf("40 retries after one outage: %d distinct start instants", len(distinct))
	if len(distinct) < 35 {
		t.Errorf("40 retries after one outage start at %d distinct instants, want them spread (at least 35)", len(distinct))
	}
}

func TestRetryJitterOnlyShortens(t *testing.T) {
	f := newFixture(t, manual(t, "daten", func(d *JobDef) { d.Retry = RetryPolicy{Attempts: 5, Initial: time.Minute, Max: 10 * time.Minute} }))
	f.pass.Jitter = func() float64 { return 0.5 }
	f.run(at(0))
	f.exec.do = func(context.Context, JobDef, Run) (Result, error) {
		return Result{}, &ClassError{Class: ClassNetwork, Err: errors.New("connection reset")}
	}
	f.queued("daten", "normal", at(h))
	f.run(at(h))
	runs := f.store.runsOf("daten")
	if got, want := runs[1].NotBefore, at(h+54*time.Second); !got.Equal(want) {
		t.Errorf("retry not before %s, want %s (one minute less a tenth)", got, want)
	}
}

func TestRetriedClasses(t *testing.T) {
	cases := []struct {
		err   error
		class string
		retry bool
	}{
		{&ClassError{Class: ClassTransient, Err: errors.New("x")}, ClassTransient, true},
		{&ClassError{Class: ClassNetwork, Err: errors.New("x")}, ClassNetwork, true},
		{&ClassError{Class: ClassRepository, Err: errors.New("x")}, ClassRepository, true},
		{&ClassError{Class: ClassSource, Err: errors.New("x")}, ClassSource, true},
		{fmt.Errorf("open repository: %w", &ClassError{Class: ClassBusy, Err: errors.New("locked")}), ClassBusy, true},
		{&ClassError{Class: ClassAuth, Err: errors.New("wrong password")}, ClassAuth, false},
		{&ClassError{Class: ClassIntegrity, Err: errors.New("x")}, ClassIntegrity, false},
		{&ClassError{Class: ClassSecurity, Err: errors.New("x")}, ClassSecurity, false},
		{&ClassError{Class: ClassConfig, Err: errors.New("x")}, ClassConfig, false},
		{&ClassError{Err: errors.New("no class")}, ClassUnknown, false},
		{errors.New("plain error"), ClassUnknown, false},
	}
	for _, c := range cases {
		t.Run(c.class+" "+c.err.Error(), func(t *testing.T) {
			f := newFixture(t, manual(t, "daten"))
			f.run(at(0))
			f.exec.do = func(context.Context, JobDef, Run) (Result, error) { return Result{}, c.err }
			first := f.queued("daten", "normal", at(h))
			sum := f.run(at(h))
			r := f.store.get(first.ID)
			if r.Status != StatusFailed || r.ErrorClass != c.class || r.Message != c.err.Error() {
				t.Errorf("run: %s, class %q, message %q", r.Status, r.ErrorClass, r.Message)
			}
			if got := len(f.store.runsOf("daten")) == 2; got != c.retry || (len(sum.Requeued) == 1) != c.retry {
				t.Errorf("retry queued: %v, want %v", got, c.retry)
			}
		})
	}
}

func TestPartialFailureIsNotRetriedAndNeverSucceeded(t *testing.T) {
	f := newFixture(t, manual(t, "daten"), manual(t, "after", func(d *JobDef) { d.DependsOn = []string{"daten"} }))
	f.run(at(0))
	var skipped []Skipped
	for i := range 17 {
		skipped = append(skipped, Skipped{Object: fmt.Sprintf("/daten/secret-%d", i), Reason: "permission denied"})
	}
	f.exec.do = func(context.Context, JobDef, Run) (Result, error) {
		return Result{Figures: Figures{Files: 100, FilesSkipped: 17, Skipped: skipped}}, nil
	}
	first := f.queued("daten", "normal", at(h))
	f.run(at(h))
	r := f.store.get(first.ID)
	wantRun(t, r, StatusPartialFailure, "", CodeObjectsSkipped)
	if r.Message != "17 objects skipped: permission denied" {
		t.Errorf("message %q", r.Message)
	}
	if n := len(f.store.runsOf("daten")); n != 1 {
		t.Errorf("a partial failure was retried: %d runs", n)
	}
	f.queued("after", "normal", at(h+time.Minute))
	sum := f.run(at(h + time.Minute))
	if got, want := heldReasons(sum)["after"], "waiting: dependency daten has not succeeded"; got != want {
		t.Errorf("a partial failure satisfied a dependency: held %q", got)
	}
}

func TestSkippedMessage(t *testing.T) {
	skips := func(reasons ...string) []Skipped {
		var out []Skipped
		for _, r := range reasons {
			out = append(out, Skipped{Object: "x", Reason: r})
		}
		return out
	}
	cases := []struct {
		name string
		f    Figures
		want string
	}{
		{"one", Figures{FilesSkipped: 1, Skipped: skips("permission denied")}, "1 object skipped: x: permission denied"},
		{"count without reasons", Figures{FilesSkipped: 4}, "4 objects skipped"},
		{"more skipped than listed", Figures{FilesSkipped: 500, Skipped: skips("permission denied", "permission denied")}, "500 objects skipped: permission denied"},
		{"listed without a count", Figures{Skipped: skips("gone", "gone")}, "2 objects skipped: gone"},
		{"most frequent reason first", Figures{FilesSkipped: 3, Skipped: skips("gone", "permission denied", "permission denied")},
			"3 objects skipped: permission denied (2), x: gone"},
		{"at most three reasons", Figures{FilesSkipped: 5, Skipped: skips("a", "b", "c", "d", "e")},
			"5 objects skipped: x: a, x: b, x: c, 2 other reasons"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := skippedMessage(c.f); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestErrorWithSkippedObjectsIsFailedAndSaysBoth(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.run(at(0))
	f.exec.do = func(context.Context, JobDef, Run) (Result, error) {
		return Result{Figures: Figures{FilesSkipped: 2}}, &ClassError{Class: ClassSource, Code: "ALL_SOURCES_FAILED", Err: errors.New("every source failed")}
	}
	first := f.queued("daten", "normal", at(h))
	f.run(at(h))
	r := f.store.get(first.ID)
	wantRun(t, r, StatusFailed, ClassSource, "ALL_SOURCES_FAILED")
	if r.Message != "every source failed; 2 objects skipped" {
		t.Errorf("message %q", r.Message)
	}
}

func TestUserCancellationOutweighsEverything(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.run(at(0))
	f.exec.do = func(ctx context.Context, _ JobDef, run Run) (Result, error) {
		f.store.requestCancel(run.ID)
		waitDone(t, ctx)
		// A retryable error: still no retry, as the user cancelled.
		return Result{}, &ClassError{Class: ClassTransient, Err: ctx.Err()}
	}
	first := f.queued("daten", "normal", at(h))
	sum := f.run(at(h))
	wantRun(t, f.store.get(first.ID), StatusCancelled, ClassCancelled, CodeCancelled)
	if n := len(f.store.runsOf("daten")); n != 1 || len(sum.Requeued) != 0 {
		t.Errorf("a cancelled run was retried")
	}
}

func TestLostOwnershipWritesNothing(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.run(at(0))
	f.exec.do = func(ctx context.Context, _ JobDef, run Run) (Result, error) {
		f.store.reclaimNow(run.ID, at(2*h)) // another pass took it away
		waitDone(t, ctx)
		return Result{Figures: Figures{Files: 10}}, nil // and it "succeeded"
	}
	first := f.queued("daten", "normal", at(h))
	sum := f.run(at(h))
	wantRun(t, f.store.get(first.ID), StatusFailed, ClassTransient, CodeOrphaned)
	if n := f.store.finishCalls(first.ID); n != 0 {
		t.Errorf("the runner tried to write %d results after losing the run", n)
	}
	if len(sum.Lost) != 1 || len(sum.Finished) != 0 {
		t.Errorf("summary: lost %d, finished %d", len(sum.Lost), len(sum.Finished))
	}
}

// A runner whose heartbeats cannot be recorded gives its run up before
// the run can look stale to other runners, so that a retry they start
// never runs beside it; the run is left to be reclaimed.
func TestUnrecordedHeartbeatsGiveTheRunUp(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.pass.Heartbeat, f.pass.StaleAfter = 5*time.Millisecond, 60*time.Millisecond
	f.run(at(0))
	f.store.mu.Lock()
	f.store.beatErr = errors.New("database is locked")
	// Each heartbeat comes one Heartbeat later on the pass's clock,
	// however late the machine's scheduler runs the ticker.
	f.store.onBeat = func() { f.clock.Add(f.pass.Heartbeat) }
	f.store.mu.Unlock()
	var ranFor time.Duration
	f.exec.do = func(ctx context.Context, _ JobDef, run Run) (Result, error) {
		start := f.clock.Now()
		waitDone(t, ctx)
		ranFor = f.clock.Now().Sub(start)
		return Result{Figures: Figures{Files: 10}}, nil
	}
	first := f.queued("daten", "normal", at(h))
	sum := f.run(at(h))
	if len(sum.Lost) != 1 || len(sum.Finished) != 0 {
		t.Errorf("summary: lost %d, finished %d; want the run given up", len(sum.Lost), len(sum.Finished))
	}
	if ranFor > f.pass.StaleAfter {
		t.Errorf("the run went on for %s without a recorded heartbeat, longer than stale_after %s", ranFor, f.pass.StaleAfter)
	}
	if n := f.store.finishCalls(first.ID); n != 0 {
		t.Errorf("the runner wrote %d results for a run it gave up", n)
	}
	if got := f.store.get(first.ID); got.Status != StatusRunning {
		t.Errorf("the given-up run is %s, want it left running for reclaim", got.Status)
	}
}

func TestReclaimStaleRun(t *testing.T) {
	f := newFixture(t, manual(t, "stale"), manual(t, "dead"), manual(t, "alive"))
	f.pass.RunnerDead = func(runner string) bool { return runner == "host-a:55" }
	f.run(at(0))
	now := at(h)
	stale := f.store.add(t, Run{Job: "stale", Trigger: TriggerManual, Attempt: 1, Status: StatusRunning,
		Owner: "t1", Runner: "host-b:7", StartedAt: now.Add(-h), HeartbeatAt: now.Add(-6 * time.Minute)})
	dead := f.store.add(t, Run{Job: "dead", Trigger: TriggerManual, Attempt: 1, Status: StatusRunning,
		Owner: "t2", Runner: "host-a:55", StartedAt: now.Add(-time.Minute), HeartbeatAt: now.Add(-10 * time.Second)})
	alive := f.store.add(t, Run{Job: "alive", Trigger: TriggerManual, Attempt: 1, Status: StatusRunning,
		Owner: "t3", Runner: "host-b:8", StartedAt: now.Add(-h), HeartbeatAt: now.Add(-4 * time.Minute)})
	sum := f.run(now)
	if len(sum.Reclaimed) != 2 {
		t.Fatalf("reclaimed %d runs, want the stale one and the dead runner's", len(sum.Reclaimed))
	}
	for _, r := range []Run{stale, dead} {
		wantRun(t, f.store.get(r.ID), StatusFailed, ClassTransient, CodeOrphaned)
		runs := f.store.runsOf(r.Job)
		retry := runs[len(runs)-1]
		if len(runs) != 2 || retry.Trigger != TriggerRetry || retry.Attempt != 2 || !retry.NotBefore.Equal(now.Add(30*time.Second)) {
			t.Errorf("%s: retry %+v", r.Job, retry)
		}
	}
	if got := f.store.get(alive.ID); got.Status != StatusRunning {
		t.Errorf("a live run was reclaimed: %s", got.Status)
	}
}

func TestNilExecutorFailsTheRun(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.pass.Executor = nil
	f.run(at(0))
	first := f.queued("daten", "normal", at(h))
	sum := f.run(at(h))
	r := f.store.get(first.ID)
	wantRun(t, r, StatusFailed, ClassConfig, CodeExecutorNotConfigured)
	if len(f.store.runsOf("daten")) != 1 || sum.Counts()[StatusSucceeded] != 0 {
		t.Errorf("a run without executor was retried or reported as succeeded")
	}
}

func TestExecutorPanicFailsTheRun(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.run(at(0))
	f.exec.do = func(context.Context, JobDef, Run) (Result, error) { panic("boom") }
	first := f.queued("daten", "normal", at(h))
	f.run(at(h))
	wantRun(t, f.store.get(first.ID), StatusFailed, ClassUnknown, CodeExecutorPanic)
}

func TestShutdownInterruptsAndRequeues(t *testing.T) {
	f := newFixture(t, job(t, "daten", "daily 02:00"))
	f.run(at(0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.exec.do = func(runCtx context.Context, _ JobDef, _ Run) (Result, error) {
		cancel() // SIGTERM
		waitDone(t, runCtx)
		return Result{}, &ClassError{Class: ClassTransient, Err: runCtx.Err()}
	}
	f.clock.Set(at(2 * h))
	sum, err := f.pass.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Shutdown || len(sum.Finished) != 1 || len(sum.Requeued) != 1 {
		t.Fatalf("summary: shutdown %v, finished %d, requeued %d", sum.Shutdown, len(sum.Finished), len(sum.Requeued))
	}
	runs := f.store.runsOf("daten")
	wantRun(t, runs[0], StatusInterrupted, ClassCancelled, CodeInterrupted)
	again := runs[1]
	if again.Status != StatusQueued || again.Trigger != TriggerSchedule || again.Attempt != 1 ||
		!again.ScheduledAt.Equal(at(2*h)) || again.HeldReason == "" {
		t.Errorf("queued again: %+v", again)
	}
	// After the restart it runs.
	f.exec.do = nil
	sum = f.run(at(2*h + time.Minute))
	if len(sum.Finished) != 1 || sum.Finished[0].ID != again.ID || sum.Finished[0].Status != StatusSucceeded {
		t.Errorf("after the restart: %+v", sum.Finished)
	}
}

func TestShutdownLeavesStuckRunsToReclaim(t *testing.T) {
	f := newFixture(t, manual(t, "stuck"))
	f.pass.ShutdownWait = 20 * time.Millisecond
	f.run(at(0))
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	f.exec.do = func(context.Context, JobDef, Run) (Result, error) {
		cancel()
		<-release // ignores its context
		return Result{}, nil
	}
	f.queued("stuck", "normal", at(h))
	f.clock.Set(at(h))
	sum, err := f.pass.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Abandoned) != 1 || len(sum.Warnings) != 1 || !strings.Contains(sum.Warnings[0], "left to orphan reclaim") {
		t.Errorf("abandoned %d, warnings %q", len(sum.Abandoned), sum.Warnings)
	}
}

func TestCancelledBeforeStartDoesNothing(t *testing.T) {
	f := newFixture(t, job(t, "daten", "daily 02:00"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sum, err := f.pass.Run(ctx)
	if err != nil || !sum.Shutdown {
		t.Errorf("err %v, shutdown %v", err, sum.Shutdown)
	}
}

func TestChangedScheduleDoesNotCatchUpOldSlots(t *testing.T) {
	f := newFixture(t, job(t, "daten", "daily 02:00"))
	f.run(at(h))
	// At 03:00, before any tick saw 02:00, the schedule becomes 04:00.
	f.pass.Jobs["daten"] = job(t, "daten", "daily 04:00")
	sum := f.run(at(3 * h))
	if len(sum.Claimed) != 0 {
		t.Errorf("the old schedule's slot was caught up")
	}
	if next := f.store.job(t, "daten").NextRun; !next.Equal(at(4 * h)) {
		t.Errorf("next run %s, want 04:00", next)
	}
}

func TestRunOfRemovedJobIsHeldWithReason(t *testing.T) {
	f := newFixture(t, manual(t, "gone"))
	f.run(at(0))
	f.queued("gone", "normal", at(h))
	delete(f.pass.Jobs, "gone")
	sum := f.run(at(h))
	if got := heldReasons(sum)["gone"]; !strings.HasPrefix(got, "waiting: job gone is no longer in the config") {
		t.Errorf("held reason %q", got)
	}
}

// The pass keeps the config's rule (CheckStaleAfter): stale_after spans at
// least three heartbeats.
func TestPassRejectsStaleAfterBelowThreeHeartbeats(t *testing.T) {
	for _, c := range []struct {
		name   string
		stale  time.Duration
		refuse bool
	}{
		{"one and a half heartbeats", 90 * time.Second, true},
		{"two and a half heartbeats", 150 * time.Second, true},
		{"three heartbeats", 3 * time.Minute, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.pass.Heartbeat, f.pass.StaleAfter = time.Minute, c.stale
			_, err := f.pass.Run(context.Background())
			if refused := err != nil && strings.Contains(err.Error(), "stale_after"); refused != c.refuse {
				t.Errorf("stale_after %s with a heartbeat of 1m: err %v, want refused %v", c.stale, err, c.refuse)
			}
		})
	}
}

func TestNextRun(t *testing.T) {
	p := &Pass{Windows: []schedule.Window{window(t, "maintenance", schedule.Blackout, "daily 01:00", 2*h)}}
	cases := []struct {
		name  string
		def   JobDef
		after time.Time
		want  time.Time
	}{
		{"plain slot", job(t, "a", "daily 05:00"), at(0), at(5 * h)},
		{"postponed out of the blackout", job(t, "a", "daily 02:00"), at(0), at(3 * h)},
		{"manual has none", manual(t, "a"), at(0), time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.NextRun(c.def, c.after)
			if err != nil || !got.Equal(c.want) {
				t.Errorf("got %s, %v; want %s", got, err, c.want)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	daten := job(t, "daten", "daily 02:00", func(d *JobDef) { d.DependsOn = []string{"db-dump"} })
	p := &Pass{
		Now:     func() time.Time { return at(h) },
		Windows: []schedule.Window{window(t, "maintenance", schedule.Blackout, "daily 01:30", h)},
		Limits:  Limits{Global: 2, PerRepository: map[string]int{"local": 1}},
		Jobs:    map[string]JobDef{"daten": daten},
	}
	other := Run{ID: 9, Job: "other", Status: StatusRunning, StartedAt: at(0), HeartbeatAt: at(h)}
	p.Jobs["other"] = manual(t, "other")
	cases := []struct {
		name    string
		job     Job
		current AdmitState
		state   string
		lines   []string // each must be in the explanation
	}{
		{"paused", Job{Name: "daten", Paused: true}, AdmitState{}, ExplainPaused,
			[]string{"paused: no new runs are claimed"}},
		{"postponed slot, dependency not yet succeeded", Job{Name: "daten", NextRun: at(2*h + 30*time.Minute)}, AdmitState{}, ExplainScheduled,
			[]string{"next run at 2026-06-10 02:30:00 UTC", "its slot at 2026-06-10 02:00:00 UTC is postponed", "dependency db-dump has not succeeded"}},
		{"queued and held by the repository limit", Job{Name: "daten", NextRun: at(26 * h)},
			AdmitState{Queued: []Run{{ID: 3, Job: "daten", QueuedAt: at(h)}}, Running: []Run{other}, LastSucceeded: map[string]bool{"db-dump": true}},
			ExplainWaiting, []string{"queued as run 3", "waiting: repository local at its limit of 1"}},
		{"queued and free to start", Job{Name: "daten", NextRun: at(26 * h)},
			AdmitState{Queued: []Run{{ID: 3, Job: "daten", QueuedAt: at(h)}}, LastSucceeded: map[string]bool{"db-dump": true}},
			ExplainStarting, []string{"the next pass starts it"}},
		{"running", Job{Name: "daten"}, AdmitState{Running: []Run{{ID: 4, Job: "daten", Trigger: TriggerSchedule, Attempt: 1, StartedAt: at(0), HeartbeatAt: at(h)}}},
			ExplainRunning, []string{"running as run 4"}},
		{"due", Job{Name: "daten", NextRun: at(30 * time.Minute)}, AdmitState{LastSucceeded: map[string]bool{"db-dump": true}}, ExplainDue,
			[]string{"1 slot missed; the next pass queues one catch-up run", "dependency db-dump: its last run succeeded"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := p.Explain(daten, c.job, c.current)
			text := e.String()
			if e.State != c.state {
				t.Errorf("state %s, want %s\n%s", e.State, c.state, text)
			}
			for _, l := range c.lines {
				if !strings.Contains(text, l) {
					t.Errorf("explanation lacks %q:\n%s", l, text)
				}
			}
		})
	}
}
