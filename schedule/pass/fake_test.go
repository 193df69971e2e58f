package pass

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeStore is an in-memory Store that keeps the rules the real one keeps:
// one active run per job, fencing by owner, no succeeded run with skipped
// objects, no held run without a reason, and no write on a done context.
type fakeStore struct {
	mu        sync.Mutex
	jobs      map[string]*storedJob
	runs      []*Run // by ID
	lastID    int64
	cancels   map[int64]bool          // runs a user asked to cancel
	finishes  map[int64]int           // Finish calls per run
	leases    map[int64]time.Duration // each running run's lease, renewed by its heartbeats
	beatErr   error                   // returned by every Heartbeat while set
	onBeat    func()                  // called by every Heartbeat, outside the store's lock
	finishErr error                   // returned by every Finish while set, nothing written
	now       func() time.Time        // when a user's cancellation ends a queued run
}

type storedJob struct {
	Job
	deleted bool
}

func newFakeStore() *fakeStore {
	return &fakeStore{jobs: map[string]*storedJob{}, cancels: map[int64]bool{}, finishes: map[int64]int{}, leases: map[int64]time.Duration{}, now: time.Now}
}

var _ Store = (*fakeStore)(nil)

func (s *fakeStore) SyncJobs(ctx context.Context, defs []JobDef, spec func(JobDef) string, next func(JobDef) time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := map[string]bool{}
	for _, def := range defs {
		keep[def.Name] = true
		j, ok := s.jobs[def.Name]
		if !ok {
			s.lastID++
			j = &storedJob{Job: Job{ID: s.lastID, Name: def.Name}}
			s.jobs[def.Name] = j
		}
		if !ok || j.deleted || j.Spec != spec(def) {
			j.Spec, j.NextRun = spec(def), next(def)
		}
		j.deleted, j.Priority = false, def.Priority
	}
	for name, j := range s.jobs {
		if !keep[name] {
			j.deleted = true
		}
	}
	return nil
}

func (s *fakeStore) Reclaim(ctx context.Context, now, staleBefore time.Time, dead func(string) bool, retry func(Run) *Run) ([]Run, []Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out, retries []Run
	for _, r := range s.runs {
		if r.Status != StatusRunning || !(LeaseExpired(*r, now, staleBefore) || (dead != nil && dead(r.Runner))) {
			continue
		}
		s.orphan(r, now)
		if s.cancels[r.ID] {
			// Cancellation outweighs everything: no retry.
			r.Status, r.ErrorClass = StatusCancelled, ClassCancelled
			out = append(out, *r)
			continue
		}
		out = append(out, *r)
		if retry == nil {
			continue
		}
		if next := retry(*r); next != nil {
			queued, err := s.queue(*next)
			switch {
			case errors.Is(err, errJobRemoved):
			case err != nil:
				return nil, nil, err
			default:
				retries = append(retries, queued)
			}
		}
	}
	return out, retries, nil
}

// orphan ends a running run as the store's reclaim does.
func (s *fakeStore) orphan(r *Run, now time.Time) {
	r.Status, r.ErrorClass, r.ErrorCode = StatusFailed, ClassTransient, CodeOrphaned
	r.Message = fmt.Sprintf("runner %s stopped renewing its heartbeat", r.Runner)
	r.EndedAt, r.Owner = now, ""
}

func (s *fakeStore) ClaimDue(ctx context.Context, now time.Time, plan func(Job) (time.Time, *Run)) ([]Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Run
	for _, name := range sortedKeys(s.jobs) {
		j := s.jobs[name]
		if j.deleted || j.Paused || j.NextRun.IsZero() || j.NextRun.After(now) || s.active(name) != nil {
			continue
		}
		next, run := plan(j.Job)
		j.NextRun = next
		if run != nil {
			r, err := s.queue(*run)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *fakeStore) AdmitState(ctx context.Context) (AdmitState, error) {
	if err := ctx.Err(); err != nil {
		return AdmitState{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitState(), nil
}

// admitState is the admission state: every queued run, oldest first, the
// running runs, and per live job whether its latest run that started and
// ended succeeded.
func (s *fakeStore) admitState() AdmitState {
	st := AdmitState{LastSucceeded: map[string]bool{}}
	last := map[string]*Run{}
	for _, r := range s.runs {
		switch {
		case r.Status == StatusQueued:
			st.Queued = append(st.Queued, *r)
		case r.Status == StatusRunning:
			st.Running = append(st.Running, *r)
		case r.StartedAt.IsZero() || r.EndedAt.IsZero():
			// Cancelled before it started: it did nothing.
		case r.Kind != KindBackup && r.Kind != "":
			// A verify, retention or drill run says nothing of the backup.
		default:
			if l := last[r.Job]; l == nil || !r.EndedAt.Before(l.EndedAt) {
				last[r.Job] = r
			}
		}
	}
	for name, j := range s.jobs {
		if !j.deleted {
			st.LastSucceeded[name] = last[name] != nil && last[name].Status == StatusSucceeded
		}
	}
	slices.SortStableFunc(st.Queued, func(a, b Run) int { return a.QueuedAt.Compare(b.QueuedAt) })
	return st
}

func (s *fakeStore) Admit(ctx context.Context, now time.Time, decide func(AdmitState) []Admission) ([]Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.admitState().Eligible(now)
	decisions := decide(st)
	// Check every decision before storing any: Admit is one transaction.
	handed := map[int64]bool{}
	for _, q := range st.Queued {
		handed[q.ID] = true
	}
	decided := map[int64]bool{}
	for _, d := range decisions {
		switch {
		case !handed[d.RunID]:
			return nil, fmt.Errorf("decision for run %d, which was not handed to the decision", d.RunID)
		case decided[d.RunID]:
			return nil, fmt.Errorf("run %d decided twice", d.RunID)
		case !d.Admit && d.HeldReason == "":
			return nil, fmt.Errorf("run %d held without a reason", d.RunID)
		case d.Admit && (d.Owner == "" || d.Runner == ""):
			return nil, fmt.Errorf("run %d admitted without owner or runner", d.RunID)
		}
		decided[d.RunID] = true
	}
	for _, q := range st.Queued {
		if !decided[q.ID] {
			return nil, fmt.Errorf("no decision for queued run %d", q.ID)
		}
	}
	var started []Run
	for _, d := range decisions {
		r := s.run(d.RunID)
		if !d.Admit {
			r.HeldReason = d.HeldReason
			continue
		}
		r.Status, r.Owner, r.Runner, r.HeldReason = StatusRunning, d.Owner, d.Runner, ""
		r.StartedAt, r.HeartbeatAt = now, now
		if d.Lease > 0 {
			s.leases[r.ID] = d.Lease
			r.LeaseUntil = now.Add(d.Lease)
		}
		started = append(started, *r)
	}
	return started, nil
}

func (s *fakeStore) Heartbeat(ctx context.Context, runID int64, owner string, now time.Time, progress *Progress) (HeartbeatReply, error) {
	if err := ctx.Err(); err != nil {
		return HeartbeatOK, err
	}
	s.mu.Lock()
	onBeat := s.onBeat
	s.mu.Unlock()
	if onBeat != nil {
		onBeat()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.beatErr != nil {
		return HeartbeatOK, s.beatErr
	}
	r := s.run(runID)
	if r == nil || r.Status != StatusRunning || r.Owner != owner {
		return HeartbeatLost, nil
	}
	r.HeartbeatAt = now
	if lease := s.leases[r.ID]; lease > 0 {
		r.LeaseUntil = now.Add(lease)
	}
	if progress != nil {
		skipped := r.Figures.Skipped
		r.Figures = progress.Figures.Clone()
		r.Figures.Skipped = skipped
		r.Current = progress.Current
	}
	if s.cancels[runID] {
		return HeartbeatCancel, nil
	}
	return HeartbeatOK, nil
}

func (s *fakeStore) Finish(ctx context.Context, run Run, owner string, next *Run) (bool, error) {
	return s.finish(ctx, run, owner, next, nil)
}

func (s *fakeStore) FinishOrphan(ctx context.Context, run Run, owner string, now, staleBefore time.Time, dead func(string) bool, next *Run) (bool, error) {
	return s.finish(ctx, run, owner, next, func(r *Run) bool {
		if s.cancels[r.ID] && run.Status == StatusFailed {
			return false
		}
		return LeaseExpired(*r, now, staleBefore) || (dead != nil && r.Runner != "" && dead(r.Runner))
	})
}

// finish is Finish, writing only when orphaned (nil: always) reports true
// of the running run.
func (s *fakeStore) finish(ctx context.Context, run Run, owner string, next *Run, orphaned func(*Run) bool) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishes[run.ID]++
	if s.finishErr != nil {
		return false, s.finishErr
	}
	r := s.run(run.ID)
	if r == nil || r.Status != StatusRunning || r.Owner != owner || (orphaned != nil && !orphaned(r)) {
		return false, nil
	}
	if run.Status == StatusSucceeded && (run.Figures.FilesSkipped > 0 || len(run.Figures.Skipped) > 0) {
		return false, errors.New("check constraint: a run with skipped files cannot be succeeded")
	}
	switch run.Status {
	case StatusSucceeded, StatusPartialFailure, StatusFailed, StatusCancelled, StatusInterrupted:
	default:
		return false, fmt.Errorf("finish with status %q", run.Status)
	}
	r.Status, r.EndedAt = run.Status, run.EndedAt
	r.ErrorClass, r.ErrorCode, r.Message = run.ErrorClass, run.ErrorCode, run.Message
	r.Figures, r.Snapshots, r.HeldReason = run.Figures, run.Snapshots, ""
	r.Output, r.Current = run.Output, ""
	if next != nil {
		queued, err := s.queue(*next)
		switch {
		case errors.Is(err, errJobRemoved):
			// Recorded, with no next run: next.ID stays 0.
		case err != nil:
			return false, err
		default:
			*next = queued
		}
	}
	return true, nil
}

// errJobRemoved: a job removed from the configuration gets no new runs.
var errJobRemoved = errors.New("job was removed from the configuration")

// queue stores a new queued run, keeping one active run per job and
// refusing a removed job.
func (s *fakeStore) queue(r Run) (Run, error) {
	j, ok := s.jobs[r.Job]
	if !ok {
		return Run{}, ErrUnknownJob
	}
	if j.deleted {
		return Run{}, errJobRemoved
	}
	if s.active(r.Job) != nil {
		return Run{}, ErrActive
	}
	if r.Status != StatusQueued {
		return Run{}, fmt.Errorf("queue run with status %q", r.Status)
	}
	s.lastID++
	r.ID, r.JobID = s.lastID, j.ID
	r.Kind = cmp.Or(r.Kind, KindBackup)
	s.runs = append(s.runs, &r)
	return r, nil
}

func (s *fakeStore) active(job string) *Run {
	for _, r := range s.runs {
		if r.Job == job && (r.Status == StatusQueued || r.Status == StatusRunning) {
			return r
		}
	}
	return nil
}

func (s *fakeStore) run(id int64) *Run {
	for _, r := range s.runs {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// The user's side of the store, as the commands use it (the storetest
// suite's Store).

// QueueRun queues run for the live job, as a user's trigger does.
func (s *fakeStore) QueueRun(ctx context.Context, job string, run Run) (Run, error) {
	if err := ctx.Err(); err != nil {
		return Run{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if j, ok := s.jobs[job]; !ok || j.deleted {
		return Run{}, ErrUnknownJob
	}
	run.Job = job
	run.Trigger = cmp.Or(run.Trigger, TriggerManual)
	run.Attempt = max(run.Attempt, 1)
	run.Status = StatusQueued
	now := s.now()
	if run.QueuedAt.IsZero() {
		run.QueuedAt = now
	}
	if run.ScheduledAt.IsZero() {
		run.ScheduledAt = now
	}
	return s.queue(run)
}

// CancelRun cancels a queued run at once and asks a running one to stop.
func (s *fakeStore) CancelRun(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(id)
	switch {
	case r == nil:
		return fmt.Errorf("run %d: not found", id)
	case r.Status == StatusQueued:
		r.Status, r.ErrorClass, r.HeldReason, r.EndedAt = StatusCancelled, ClassCancelled, "", s.now()
	case r.Status == StatusRunning:
		s.cancels[id] = true
	default:
		return fmt.Errorf("run %d has already ended (%s)", id, r.Status)
	}
	return nil
}

// Run reads one run.
func (s *fakeStore) Run(ctx context.Context, id int64) (Run, error) {
	if err := ctx.Err(); err != nil {
		return Run{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.run(id)
	if r == nil {
		return Run{}, fmt.Errorf("run %d: not found", id)
	}
	return *r, nil
}

// The test's side of the store.

// add stores a run directly, as a manual trigger or another runner would.
func (s *fakeStore) add(t *testing.T, r Run) Run {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.jobs[r.Job]; !ok {
		s.lastID++
		s.jobs[r.Job] = &storedJob{Job: Job{ID: s.lastID, Name: r.Job}}
	}
	status := cmp.Or(r.Status, StatusQueued)
	r.Status = StatusQueued
	stored, err := s.queue(r)
	if err != nil {
		t.Fatal(err)
	}
	s.run(stored.ID).Status = status
	stored.Status = status
	return stored
}

// remove soft-deletes job, as a process that reloads a configuration
// without it does.
func (s *fakeStore) remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[name].deleted = true
}

func (s *fakeStore) job(t *testing.T, name string) Job {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[name]
	if !ok {
		t.Fatalf("no job %s in the store", name)
	}
	return j.Job
}

func (s *fakeStore) setJob(name string, change func(*Job)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(&s.jobs[name].Job)
}

// runsOf returns the job's runs, oldest first.
func (s *fakeStore) runsOf(job string) []Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Run
	for _, r := range s.runs {
		if r.Job == job {
			out = append(out, *r)
		}
	}
	return out
}

func (s *fakeStore) get(id int64) Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.run(id)
}

func (s *fakeStore) requestCancel(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancels[id] = true
}

// reclaimNow ends a running run as another pass's reclaim would.
func (s *fakeStore) reclaimNow(id int64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orphan(s.run(id), now)
}

func (s *fakeStore) finishCalls(id int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finishes[id]
}

// fakeClock is the pass's clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// recorder is a recording Executor; do decides each run's result (nil: success).
type recorder struct {
	mu    sync.Mutex
	calls []Run
	do    func(ctx context.Context, job JobDef, run Run) (Result, error)
}

func (e *recorder) Execute(ctx context.Context, job JobDef, run Run, _ func(Progress)) (Result, error) {
	e.mu.Lock()
	e.calls = append(e.calls, run)
	do := e.do
	e.mu.Unlock()
	if do == nil {
		return Result{Figures: Figures{Files: 1}}, nil
	}
	return do(ctx, job, run)
}

func (e *recorder) ran() []Run {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// waitDone waits for ctx to end, failing the test if it does not within a few seconds.
func waitDone(t *testing.T, ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Error("the run's context was never cancelled")
	}
}
