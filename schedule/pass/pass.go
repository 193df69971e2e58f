package pass

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
)

// Defaults of the Pass's durations, used where a field is zero.
const (
	DefaultHeartbeat     = 30 * time.Second // how often a running run renews its heartbeat
	DefaultStaleAfter    = 5 * time.Minute  // how old a heartbeat may grow before its run is reclaimed
	DefaultGrace         = 5 * time.Minute  // how late a slot may be noticed and still count as on time
	DefaultShutdownWait  = 25 * time.Second // how long Run waits for its runs to stop after ctx ends
	DefaultLookupTimeout = 30 * time.Second // how long a pass looks for an orphaned run's snapshots
	RecordTimeout        = 10 * time.Second // how long writing one result may take, even at shutdown
)

// Defaults and limits of a RetryPolicy.
const (
	DefaultRetryAttempts = 4 // the first and 3 retries, at 30, 60 and 120 s
	MaxRetryAttempts     = 10
	DefaultRetryInitial  = 30 * time.Second
	DefaultRetryMax      = 15 * time.Minute
)

// Error codes the pass records.
const (
	CodeOrphaned              = "ORPHANED"                // the runner stopped renewing its heartbeat (set by Store.Reclaim)
	CodeExecutorNotConfigured = "EXECUTOR_NOT_CONFIGURED" // the pass has no Executor
	CodeObjectsSkipped        = "OBJECTS_SKIPPED"         // a partial failure
	CodeCancelled             = "CANCELLED"               // a user cancelled the run
	CodeInterrupted           = "INTERRUPTED"             // a shutdown interrupted the run; it is queued again
	CodeExecutorPanic         = "EXECUTOR_PANIC"          // the executor panicked
	// CodeVerifyFailed is a verify run's verdict that a snapshot is
	// broken (class integrity), recorded in the repository: the job's
	// chain goes on to retention, which keeps that snapshot. Any other
	// failure of a verify run recorded no verdict, and is retried.
	CodeVerifyFailed = "VERIFY_FAILED"
)

// Limits are the concurrency limits of admission; zero means no limit.
type Limits struct {
	Global        int            // runs at once in all
	PerRepository map[string]int // runs at once per repository name
	PerSource     int            // runs at once that back up the same source key
}

// Pass is one scheduler pass: Run synchronises the jobs, reclaims orphans,
// claims due jobs, admits queued runs, executes them and records the results.
type Pass struct {
	Store      Store
	Executor   Executor          // nil: every run fails with EXECUTOR_NOT_CONFIGURED
	Jobs       map[string]JobDef // by name: the config's jobs
	Windows    []schedule.Window // maintenance windows
	Limits     Limits
	Now        func() time.Time // the clock; required
	Heartbeat  time.Duration    // 0: DefaultHeartbeat
	StaleAfter time.Duration    // 0: DefaultStaleAfter; at least StaleHeartbeats × Heartbeat (CheckStaleAfter)
	Grace      time.Duration    // 0: DefaultGrace
	Runner     string           // this process's identity (cmd: host:pid@boot/pidns/start); empty: host:pid
	RunnerDead func(runner string) bool
	NewToken   func() string  // fencing tokens; nil: 128 random bits
	Jitter     func() float64 // in [0, 1), shortens backoffs (unless a job's NoJitter); called concurrently; nil: math/rand/v2
	Logger     *slog.Logger   // nil: discard
	Observers  []Observer     // told of each run event as it happens

	// ShutdownWait is how long Run waits for its runs to stop once ctx is
	// cancelled; runs still executing then are left to orphan reclaim.
	// 0: DefaultShutdownWait.
	ShutdownWait time.Duration

	// LookupTimeout bounds each look into a repository for an orphaned
	// run's snapshots, so that storage that does not answer holds up no
	// pass; reclaim then decides. 0: DefaultLookupTimeout.
	LookupTimeout time.Duration
}

// Summary says what a pass did, for the command line to print.
type Summary struct {
	Reclaimed []Run     // orphaned runs ended as failed (the store queued their retries)
	Missed    []Missed  // jobs whose slots passed without a run of their own
	Claimed   []Run     // runs queued for due jobs
	Held      []Held    // queued runs left waiting, with their reasons
	Started   []Run     // runs admitted and started
	Finished  []Run     // runs ended by this pass, as recorded
	Requeued  []Run     // runs queued with a result: retries, and runs interrupted by shutdown
	Lost      []LostRun // runs this pass gave up, with the reason: nothing was written
	Abandoned []Run     // runs still executing when the pass stopped waiting at shutdown
	Warnings  []string  // problems that did not stop the pass
	Shutdown  bool      // ctx was cancelled during the pass
}

// Missed is a job whose slots passed without a run of their own.
type Missed struct {
	Job      string
	Slots    int       // slots missed
	Latest   time.Time // the latest slot that passed
	CaughtUp bool      // a catch-up run was queued for them (catch_up once)
}

// Held is a queued run that admission left waiting.
type Held struct {
	RunID  int64
	Job    string
	Reason string
}

// Counts returns how many runs the pass finished, per status.
func (s Summary) Counts() map[string]int {
	counts := map[string]int{}
	for _, r := range s.Finished {
		counts[r.Status]++
	}
	return counts
}

// WithDefaults returns the policy with zero fields set to their defaults and Attempts capped at MaxRetryAttempts.
func (r RetryPolicy) WithDefaults() RetryPolicy {
	if r.Attempts <= 0 {
		r.Attempts = DefaultRetryAttempts
	}
	r.Attempts = min(r.Attempts, MaxRetryAttempts)
	if r.Initial <= 0 {
		r.Initial = DefaultRetryInitial
	}
	if r.Max <= 0 {
		r.Max = DefaultRetryMax
	}
	return r
}

// Retryable reports whether a failed run of class gets a retry: transient, network, repository, busy and source errors do.
func Retryable(class string) bool {
	switch class {
	case ClassTransient, ClassNetwork, ClassRepository, ClassBusy, ClassSource:
		return true
	}
	return false
}

// NextRun returns the first slot of def's schedule after after, postponed out of the maintenance windows; zero for a manual schedule.
func (p *Pass) NextRun(def JobDef, after time.Time) (time.Time, error) {
	slot, ok := def.Schedule.Next(after)
	if !ok {
		return time.Time{}, nil
	}
	return schedule.FirstAllowed(def.Name, slot, p.Windows)
}

// Run runs one pass and returns when the runs it started have ended.
//
// When ctx is cancelled (shutdown), running runs are cancelled and each
// result is still written, with a fresh context, as interrupted; the run
// is queued again as a new run with the same trigger, attempt and slot
// (an interruption is not a failure, so it uses up no retry), to start
// after the restart. Runs that do not stop within ShutdownWait are left
// to orphan reclaim, with a warning, and reported to the observers as lost
// (LostAbandoned) before Run returns; no observer hears of them again. A
// cancelled pass is not an error.
func (p *Pass) Run(ctx context.Context) (Summary, error) {
	var sum Summary
	if err := p.check(); err != nil {
		return sum, err
	}
	warn := p.warner(&sum)
	steps := []struct {
		name string
		do   func(context.Context) error
	}{
		{"synchronise jobs", func(ctx context.Context) error { return p.syncJobs(ctx, warn) }},
		{"record the snapshots of orphaned runs", func(ctx context.Context) error { p.recordOrphansSnapshots(ctx, &sum, warn); return nil }},
		{"reclaim orphaned runs", func(ctx context.Context) error { return p.reclaim(ctx, &sum) }},
		{"claim due jobs", func(ctx context.Context) error { return p.claim(ctx, &sum, warn) }},
		{"admit queued runs", func(ctx context.Context) error { return p.admit(ctx, &sum) }},
	}
	for _, step := range steps {
		if ctx.Err() != nil {
			sum.Shutdown = true
			return sum, nil
		}
		if err := step.do(ctx); err != nil {
			if ctx.Err() != nil {
				sum.Shutdown = true
				return sum, nil
			}
			return sum, fmt.Errorf("%s: %w", step.name, err)
		}
	}
	err := p.execute(ctx, &sum)
	sum.Shutdown = ctx.Err() != nil
	return sum, err
}

// check rejects a Pass that cannot run.
func (p *Pass) check() error {
	if p.Store == nil {
		return errors.New("pass has no store")
	}
	if p.Now == nil {
		return errors.New("pass has no clock (Now)")
	}
	if err := CheckStaleAfter(p.heartbeatEvery(), p.staleAfter()); err != nil {
		return fmt.Errorf("stale_after: %w", err)
	}
	return nil
}

// StaleHeartbeats is how many heartbeats stale_after must span at least:
// a run whose runner misses two heartbeats in a row is still not taken for
// dead.
const StaleHeartbeats = 3

// CheckStaleAfter refuses a staleAfter shorter than StaleHeartbeats
// heartbeats: live runs would be reclaimed. The config checks it too.
func CheckStaleAfter(heartbeat, staleAfter time.Duration) error {
	if staleAfter < StaleHeartbeats*heartbeat {
		return fmt.Errorf("%s must be at least three heartbeats (%d × %s): a live run would be taken for dead",
			staleAfter, StaleHeartbeats, heartbeat)
	}
	return nil
}

func (p *Pass) heartbeatEvery() time.Duration { return orDefault(p.Heartbeat, DefaultHeartbeat) }
func (p *Pass) staleAfter() time.Duration     { return orDefault(p.StaleAfter, DefaultStaleAfter) }

// staleBefore is the heartbeat time before which a running run is stale at
// now.
func (p *Pass) staleBefore(now time.Time) time.Time { return now.Add(-p.staleAfter()) }

// runnerGone reports another runner whose process RunnerDead says is gone.
func (p *Pass) runnerGone(runner string) bool {
	return runner != p.runner() && p.RunnerDead != nil && p.RunnerDead(runner)
}

// Orphaned reports whether the next pass's reclaim would end run, a
// running run: its lease ran out (without a lease: its heartbeat is
// stale) or its runner is gone.
func (p *Pass) Orphaned(run Run) bool {
	return LeaseExpired(run, p.Now(), p.staleBefore(p.Now())) || p.runnerGone(run.Runner)
}

// LeaseExpired reports whether a running run's lease ran out before now.
// A run without a lease (admitted by an older nightjar) is judged by its
// heartbeat: expired when it is before staleBefore. The lease, which the
// owner sets from its own stale_after, is what counts otherwise: a
// reclaimer with a shorter stale_after, or whose clock stepped ahead by
// less than the lease has left, leaves the run alone.
func LeaseExpired(run Run, now, staleBefore time.Time) bool {
	if run.LeaseUntil.IsZero() {
		return run.HeartbeatAt.Before(staleBefore)
	}
	return run.LeaseUntil.Before(now)
}
func (p *Pass) grace() time.Duration         { return orDefault(p.Grace, DefaultGrace) }
func (p *Pass) shutdownWait() time.Duration  { return orDefault(p.ShutdownWait, DefaultShutdownWait) }
func (p *Pass) lookupTimeout() time.Duration { return orDefault(p.LookupTimeout, DefaultLookupTimeout) }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (p *Pass) log() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

func (p *Pass) runner() string {
	if p.Runner != "" {
		return p.Runner
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

func (p *Pass) token() string {
	if p.NewToken != nil {
		return p.NewToken()
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

func (p *Pass) jitter() float64 {
	if p.Jitter == nil {
		return mathrand.Float64()
	}
	return p.Jitter()
}

// def returns the config's job of that name.
func (p *Pass) def(name string) (JobDef, bool) {
	d, ok := p.Jobs[name]
	if ok && d.Name == "" {
		d.Name = name
	}
	return d, ok
}

// defs returns the config's jobs, by name.
func (p *Pass) defs() []JobDef {
	names := make([]string, 0, len(p.Jobs))
	for name := range p.Jobs {
		names = append(names, name)
	}
	slices.Sort(names)
	defs := make([]JobDef, 0, len(names))
	for _, name := range names {
		d, _ := p.def(name)
		defs = append(defs, d)
	}
	return defs
}

// warner returns a function that logs a warning and adds it, once, to sum.
// Store callbacks may run more than once when a transaction is retried.
func (p *Pass) warner(sum *Summary) func(string, ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		mu.Lock()
		defer mu.Unlock()
		if slices.Contains(sum.Warnings, msg) {
			return
		}
		sum.Warnings = append(sum.Warnings, msg)
		p.log().Warn(msg)
	}
}

// jobSpec is what SyncJobs compares to notice a changed schedule: the
// spec in its normal form and its time zone.
func jobSpec(def JobDef) string {
	return def.Schedule.String() + " (" + def.Schedule.Location().String() + ")"
}

// syncJobs makes the stored jobs match the config; a new or changed job
// waits for its first allowed slot after now.
func (p *Pass) syncJobs(ctx context.Context, warn func(string, ...any)) error {
	now := p.Now()
	next := func(def JobDef) time.Time {
		at, err := p.NextRun(def, now)
		if err != nil {
			// The windows leave no instant: keep the slot itself; claim
			// and admission hold its run with the reason.
			warn("job %s: %v", def.Name, err)
			at, _ = def.Schedule.Next(now)
		}
		return at
	}
	return p.Store.SyncJobs(ctx, p.defs(), jobSpec, next)
}

// reclaim ends the runs of runners that are gone and queues their retries.
func (p *Pass) reclaim(ctx context.Context, sum *Summary) error {
	now := p.Now()
	retry := func(r Run) *Run { return p.retryOf(r, ClassTransient, now) }
	runs, retries, err := p.Store.Reclaim(ctx, now, p.staleBefore(now), p.runnerGone, retry)
	if err != nil {
		return err
	}
	for _, r := range runs {
		p.log().Warn("reclaimed orphaned run", "run", r.ID, "job", r.Job, "runner", r.Runner, "heartbeat", r.HeartbeatAt)
		p.observeReclaimed(r)
	}
	for _, r := range retries {
		p.log().Info("retry of a reclaimed run queued", "run", r.ID, "job", r.Job, "attempt", r.Attempt, "not_before", r.NotBefore)
		p.observeQueued(r)
	}
	sum.Reclaimed = runs
	return nil
}

// RunSnapshotFinder is what an Executor may offer besides: the snapshots
// that an orphaned backup run wrote into its repository (found by the run
// they record), so that a run whose result could not be recorded (its
// runner died after the last snapshot, the state database's disk was full)
// is recorded with them instead of being retried.
type RunSnapshotFinder interface {
	// RunSnapshots returns the result of run as its snapshots tell it, and
	// complete = true when every source of job has one; complete = false
	// when some source has none (the run did not get to its end), res then
	// holding the ones found; or err. It must never create a repository.
	RunSnapshots(ctx context.Context, job JobDef, run Run) (res Result, complete bool, err error)
}

// recordedLater is the message of a run whose end a later pass recorded
// from its snapshots.
const recordedLater = "recorded by a later pass from the snapshots it wrote: its runner stopped before it could record its end"

// orphanedWithSnapshots is the message of an orphaned run that wrote some of
// its snapshots, which are kept in its record.
const orphanedWithSnapshots = "orphaned: its runner stopped before the run ended; the snapshots it wrote are recorded with it"

// recordOrphansSnapshots records every orphaned backup run (one that
// reclaim is about to end) from the snapshots it wrote, so that a history
// never loses a snapshot. A run with every source's snapshot did its work
// and only its record is missing: it gets the verdict Judge gives its
// result (the executor adds a skipped entry for hooks that did not end)
// and the follow-ups of a normal end, and is not retried. A run with only
// some is ended failed, ORPHANED, with the ones found and the retry
// reclaim would queue. Each lookup is bounded by LookupTimeout, and a
// repository whose lookup failed is not looked into again in this pass;
// each write is fenced by the run's owner token and its lease, which must
// still be expired, in the store's transaction.
func (p *Pass) recordOrphansSnapshots(ctx context.Context, sum *Summary, warn func(string, ...any)) {
	finder, ok := p.Executor.(RunSnapshotFinder)
	if !ok {
		return
	}
	st, err := p.Store.AdmitState(ctx)
	if err != nil {
		return // reclaim reads the store next and reports
	}
	failed := map[string]bool{} // repositories whose lookup failed in this pass
	for _, r := range st.Running {
		if (r.Kind != KindBackup && r.Kind != "") || !p.Orphaned(r) {
			continue
		}
		def, ok := p.def(r.Job)
		if !ok || failed[def.Repository] {
			continue
		}
		lookup, cancel := context.WithTimeout(ctx, p.lookupTimeout())
		res, complete, err := finder.RunSnapshots(lookup, def, r)
		cancel()
		if err != nil {
			failed[def.Repository] = true
			warn("run %d of job %s: its snapshots could not be looked for, it is reclaimed as orphaned: %v", r.ID, r.Job, err)
			continue
		}
		if !complete && len(res.Snapshots) == 0 {
			continue
		}
		now := p.Now()
		ended := r
		ended.EndedAt, ended.Figures, ended.Snapshots = now, res.Figures, res.Snapshots
		var next *Run
		if complete {
			v := Judge(res, nil)
			ended.Status, ended.ErrorClass, ended.ErrorCode = v.Status, v.Class, v.Code
			ended.Message = recordedLater
			if v.Message != "" {
				ended.Message += "; " + v.Message
			}
			if v.Status == StatusSucceeded {
				next = p.afterBackup(ended, now)
			}
		} else {
			ended.Status, ended.ErrorClass, ended.ErrorCode = StatusFailed, ClassTransient, CodeOrphaned
			ended.Message = orphanedWithSnapshots
			next = p.retryOf(r, ClassTransient, now)
		}
		recorded, err := p.Store.FinishOrphan(ctx, ended, r.Owner, now, p.staleBefore(now), p.runnerGone, next)
		if err != nil || !recorded {
			continue // reclaim decides
		}
		stored := ended
		stored.Owner = ""
		p.log().Warn("orphaned run recorded from its snapshots", "run", r.ID, "job", r.Job, "status", stored.Status, "snapshots", len(res.Snapshots))
		sum.Finished = append(sum.Finished, stored)
		p.observeFinished(stored)
		if next != nil && next.ID != 0 {
			sum.Requeued = append(sum.Requeued, *next)
			p.observeQueued(*next)
		}
	}
}

// retryOf returns the retry of a run that failed with class, or nil when
// the class is not retried, the job is gone or its attempts are used up.
func (p *Pass) retryOf(r Run, class string, now time.Time) *Run {
	if !Retryable(class) {
		return nil
	}
	def, ok := p.def(r.Job)
	if !ok {
		return nil
	}
	policy := def.Retry.WithDefaults()
	attempt := max(r.Attempt, 1)
	if attempt >= policy.Attempts {
		return nil
	}
	jitter := 0.0
	if !policy.NoJitter {
		jitter = p.jitter()
	}
	notBefore := now.Add(schedule.Backoff(attempt, policy.Initial, policy.Max, jitter))
	if at, err := schedule.FirstAllowed(def.Name, notBefore, p.Windows); err == nil {
		notBefore = at
	}
	return &Run{
		JobID:       r.JobID,
		Job:         r.Job,
		Kind:        r.Kind,
		Trigger:     TriggerRetry,
		Attempt:     attempt + 1,
		Priority:    def.Priority,
		ScheduledAt: r.ScheduledAt,
		NotBefore:   notBefore,
		QueuedAt:    now,
		Status:      StatusQueued,
		HeldReason: fmt.Sprintf("waiting: retry %d of %d after a %s error, not before %s",
			attempt+1, policy.Attempts, class, stamp(notBefore)),
	}
}

// claim queues a run for every due job and writes its next slot.
func (p *Pass) claim(ctx context.Context, sum *Summary, warn func(string, ...any)) error {
	now := p.Now()
	var mu sync.Mutex
	missed := map[string]Missed{}
	plan := func(job Job) (time.Time, *Run) {
		def, ok := p.def(job.Name)
		if !ok {
			return job.NextRun, nil
		}
		if _, ok := def.Schedule.Next(now); !ok {
			return time.Time{}, nil // now a manual job
		}
		due := schedule.CheckDue(def.Schedule, job.NextRun, now, p.grace(), def.CatchUp)
		next := due.Next
		if !next.IsZero() {
			if at, err := schedule.FirstAllowed(def.Name, next, p.Windows); err != nil {
				warn("job %s: %v", def.Name, err)
			} else {
				next = at
			}
		}
		if due.Missed > 0 {
			mu.Lock()
			missed[def.Name] = Missed{Job: def.Name, Slots: due.Missed, Latest: due.Slot, CaughtUp: due.CatchUp}
			mu.Unlock()
		}
		if !due.Run {
			return next, nil
		}
		run := &Run{
			JobID:       job.ID,
			Job:         def.Name,
			Kind:        def.RunKind(), // a job's slots queue its backups; scheduled work's, its own kind
			Trigger:     TriggerSchedule,
			Attempt:     1,
			Priority:    def.Priority,
			ScheduledAt: due.Slot,
			NotBefore:   now,
			QueuedAt:    now,
			Status:      StatusQueued,
			MissedSlots: due.Missed,
		}
		if due.CatchUp {
			run.Trigger = TriggerCatchUp
		}
		// A run that may not start now is postponed, never dropped.
		if at, err := schedule.FirstAllowed(def.Name, now, p.Windows); err != nil {
			warn("job %s: %v", def.Name, err)
		} else if at.After(now) {
			run.NotBefore = at
			run.HeldReason = p.windowReason(def.Name, now, at)
		}
		return next, run
	}
	runs, err := p.Store.ClaimDue(ctx, now, plan)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(missed) {
		m := missed[name]
		action := "skipped, as catch_up is skip: waiting for the next slot"
		switch {
		case m.CaughtUp:
			action = "one catch-up run queued for them"
		case slices.ContainsFunc(runs, func(r Run) bool { return r.Job == name }):
			action = "covered by the run on time"
		}
		p.log().Warn("missed slots", "job", name, "missed", m.Slots, "latest", m.Latest, "action", action)
		sum.Missed = append(sum.Missed, m)
	}
	for _, r := range runs {
		p.log().Info("claimed due job", "job", r.Job, "run", r.ID, "trigger", r.Trigger, "slot", r.ScheduledAt, "not_before", r.NotBefore)
		p.observeQueued(r)
	}
	sum.Claimed = runs
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// stamp writes an instant for a message.
func stamp(t time.Time) string {
	return t.Format("2006-01-02 15:04:05 MST")
}

// Sync makes the stored jobs match the config, as the first step of Run
// does; commands that work on jobs call it so that they see the config.
func (p *Pass) Sync(ctx context.Context) ([]string, error) {
	var sum Summary
	err := p.syncJobs(ctx, p.warner(&sum))
	return sum.Warnings, err
}
