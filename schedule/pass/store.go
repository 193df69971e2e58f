package pass

import (
	"context"
	"errors"
	"time"
)

// ErrActive is returned by Store.QueueRun when the job already has a queued
// or running run.
var ErrActive = errors.New("job already has an active run")

// ErrUnknownJob is returned for a job name the store does not have.
var ErrUnknownJob = errors.New("no such job")

// Store is the state the pass needs. Every method is one transaction; the
// callbacks run inside it and must be quick and pure (no I/O). Several
// passes in several processes may call a Store at once: it must never hand
// the same job or run to two of them.
type Store interface {
	// SyncJobs makes the stored jobs match defs. A new job, and a job whose
	// schedule spec (spec(def)) changed, gets NextRun = next(def), so that
	// slots before the change are not caught up; a job no longer in defs is
	// soft-deleted and keeps its runs.
	SyncJobs(ctx context.Context, defs []JobDef, spec func(JobDef) string, next func(JobDef) time.Time) error

	// Reclaim ends every running run whose lease ran out before now (a
	// run without a lease: whose heartbeat is before staleBefore), or
	// whose runner dead reports as gone, as failed with class transient
	// and code ORPHANED, and queues the run retry returns for it (nil: none;
	// a job removed from the configuration gets none). It returns the ended
	// runs and the retries it queued, as stored.
	Reclaim(ctx context.Context, now, staleBefore time.Time, dead func(runner string) bool, retry func(Run) *Run) (reclaimed, retries []Run, err error)

	// ClaimDue hands plan every job that is not paused or deleted, whose
	// NextRun is set and not after now, and that has no queued or running
	// run; it stores the NextRun plan returns and queues the run it returns
	// (nil: none).
	ClaimDue(ctx context.Context, now time.Time, plan func(Job) (next time.Time, run *Run)) ([]Run, error)

	// AdmitState reads the admission state: every queued run (oldest
	// first, whatever its NotBefore), every running run, and LastSucceeded.
	// Admit hands decide the same state, read the same way; job explain
	// reads it here, so that it explains what the next pass decides.
	AdmitState(ctx context.Context) (AdmitState, error)

	// Admit hands decide the admission state with only the queued runs
	// whose NotBefore is not after now (oldest first); it starts each
	// admitted run (status running, Owner, Runner, StartedAt and
	// HeartbeatAt = now, LeaseUntil = now + Lease) and stores the HeldReason of every other. It
	// returns the started runs.
	Admit(ctx context.Context, now time.Time, decide func(AdmitState) []Admission) ([]Run, error)

	// Heartbeat renews a running run's heartbeat, and its lease to now +
	// the Lease it was admitted with, if owner still holds it.
	// With progress (nil: none reported yet) it also stores how far the
	// run got: its Figures but the skipped list (BytesRead, BytesAdded,
	// Files, FilesSkipped, Counters) and Current as the run's Current,
	// so that a running run can be shown with them; Finish replaces the
	// figures with the final ones.
	Heartbeat(ctx context.Context, runID int64, owner string, now time.Time, progress *Progress) (HeartbeatReply, error)

	// Finish stores a run's end (Status, EndedAt, error, Figures, Snapshots, Output)
	// if owner still holds it, clears its Current (Reclaim keeps it), and queues next (nil: none) with it, filling
	// in next as stored (its ID above all). A job removed from the
	// configuration gets no next run: the end is stored, Finish reports
	// true and next.ID stays 0. It reports false, changing
	// nothing, when the run was taken away. An error matching ErrStoreBusy
	// means that nothing was written and the call may be made again.
	Finish(ctx context.Context, run Run, owner string, next *Run) (bool, error)

	// FinishOrphan is Finish for another runner's orphaned run (one that
	// Reclaim would end): in the same transaction it first checks that the
	// run is still running under owner and that its lease still ran out
	// before now (without a lease: its heartbeat is before staleBefore) or
	// dead (nil: never) reports its runner gone; else it reports false,
	// changing nothing, so that a runner that renewed meanwhile keeps its run.
	// A failed end of a run whose cancellation was requested is refused
	// too: Reclaim ends that run as cancelled.
	FinishOrphan(ctx context.Context, run Run, owner string, now, staleBefore time.Time, dead func(runner string) bool, next *Run) (bool, error)
}

// HeartbeatReply tells a runner whether to go on.
type HeartbeatReply int

const (
	// HeartbeatOK: the run is still this runner's.
	HeartbeatOK HeartbeatReply = iota
	// HeartbeatCancel: a user asked to cancel the run; stop and record it as cancelled.
	HeartbeatCancel
	// HeartbeatLost: the run was reclaimed; stop and write nothing.
	HeartbeatLost
)

// AdmitState is what Admit's decision is made from.
type AdmitState struct {
	Queued  []Run // oldest first
	Running []Run
	// LastSucceeded tells, per live job name, whether the job's latest
	// backup run that started and ended fully succeeded (false when it has
	// none): what a dependent job waits for. Runs of other kinds (verify,
	// retention, drill) do not count, nor does a run cancelled before it
	// started, which did nothing.
	LastSucceeded map[string]bool
}

// Eligible returns the state with only the queued runs whose NotBefore is
// not after now: the runs admission decides on.
func (s AdmitState) Eligible(now time.Time) AdmitState {
	out := AdmitState{Running: s.Running, LastSucceeded: s.LastSucceeded}
	for _, q := range s.Queued {
		if !q.NotBefore.After(now) {
			out.Queued = append(out.Queued, q)
		}
	}
	return out
}

// Admission is the decision for one queued run.
type Admission struct {
	RunID      int64
	Admit      bool
	Owner      string        // fencing token, for admitted runs
	Runner     string        // the runner's identity, for admitted runs
	Lease      time.Duration // for admitted runs: how long the lease lasts from now and from each heartbeat
	HeldReason string        // why it waits, for runs not admitted
}
