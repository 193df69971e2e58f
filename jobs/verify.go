package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Counters of a verify run.
const (
	CounterSnapshotsVerified = "snapshots_verified" // snapshots checked by this run
	CounterSnapshotsFailed   = "snapshots_failed"   // of those, the ones whose verification failed
	CounterTreesChecked      = "trees_checked"      // trees loaded, authenticated and decoded
	CounterBlobsChecked      = "blobs_checked"      // references to data blobs checked
	CounterBytesRead         = "bytes_read"         // bytes of packs read whole (deep only)
	CounterDeep              = "deep"               // 1: the newest snapshot was verified deeply
)

// CodeVerifyFailed is the error code of a verify run that found a snapshot
// broken (class integrity): the verdict is recorded in the repository.
const CodeVerifyFailed = pass.CodeVerifyFailed

// VerifyPlan is what a verify run checks: the job's snapshots without a
// verification record, structurally, oldest first, and the job's newest
// snapshot deeply when it is due (Deep).
type VerifyPlan struct {
	Structural []string // snapshot IDs
	Deep       string   // snapshot ID; "": no deep verification is due
	LastDeep   time.Time
}

// PlanVerify decides a verify run's work from the repository alone (so that
// it survives the loss of the state database, and a crash between a backup
// and its verify heals at the next verify): the snapshots consider selects
// (the job's, MadeByJob), oldest first, that have no verification record are
// verified structurally; the newest of them is verified deeply when none of
// them has had a deep verification within deepEvery of now (0: always;
// negative: never).
func PlanVerify(snaps []*repo.Snapshot, records map[string]*repo.Verification, verified map[string]bool,
	consider func(*repo.Snapshot) bool, deepEvery time.Duration, now time.Time) VerifyPlan {
	var plan VerifyPlan
	var newest string
	for _, s := range snaps { // oldest first
		if !consider(s) {
			continue
		}
		newest = s.ID
		if v := records[s.ID]; v != nil && v.Deep && v.Time.After(plan.LastDeep) {
			plan.LastDeep = v.Time
		}
		if !verified[s.ID] {
			plan.Structural = append(plan.Structural, s.ID)
		}
	}
	if newest != "" && deepEvery >= 0 && (plan.LastDeep.IsZero() || !now.Before(plan.LastDeep.Add(deepEvery))) {
		plan.Deep = newest
		if n := len(plan.Structural); n > 0 && plan.Structural[n-1] == newest {
			plan.Structural = plan.Structural[:n-1] // the deep verification covers it
		}
	}
	return plan
}

// verifyRun verifies the job's snapshots that have no verification record
// yet, and deeply its newest snapshot when no deep verification of the
// job's snapshots is within job.Verify.DeepEvery, holding the repository's
// shared lock (beside an exclusive one it is busy, and retried). Each
// verdict is recorded in the repository (repo.SaveVerification). A failed
// verification fails the run with class integrity and code VERIFY_FAILED,
// naming the snapshot and its first problem; the pass then still queues the
// job's retention, which keeps that snapshot without counting it.
func (e *Executor) verifyRun(ctx context.Context, job pass.JobDef, progress func(pass.Progress)) (_ pass.Result, err error) {
	var res pass.Result
	host, err := os.Hostname()
	if err != nil {
		return res, Classify(fmt.Errorf("host name: %w", err))
	}
	r, release, err := e.openShared(ctx, job, "verify")
	if err != nil {
		return res, err
	}
	defer release(&err)
	plan, err := e.planVerify(ctx, r, job, host)
	if err != nil {
		return res, Classify(err)
	}

	counters := map[string]int64{CounterSnapshotsVerified: 0, CounterSnapshotsFailed: 0, CounterTreesChecked: 0,
		CounterBlobsChecked: 0, CounterBytesRead: 0, CounterDeep: 0}
	res.Figures.Counters = counters
	reportUnreadable(r, &res.Figures) // met while planning: not verified, named
	var failed []string
	var firstProblem string
	verify := func(id string, deep bool) error {
		what := "snapshot " + id
		if deep {
			what += " (deep)"
		}
		progress(pass.Progress{Figures: res.Figures.Clone(), Current: what})
		rep, err := r.VerifySnapshot(ctx, id, deep)
		if errors.Is(err, repo.ErrSnapshotNotFound) {
			return nil // forgotten since it was listed
		}
		if err != nil {
			return err
		}
		v := &repo.Verification{Snapshot: id, Time: e.now().UTC(), Deep: deep, OK: rep.OK(), Problems: rep.ProblemLines()}
		if err := r.SaveVerification(ctx, v); err != nil {
			return err
		}
		counters[CounterSnapshotsVerified]++
		counters[CounterTreesChecked] += int64(rep.Trees)
		counters[CounterBlobsChecked] += int64(rep.Blobs)
		counters[CounterBytesRead] += rep.BytesRead
		if deep {
			counters[CounterDeep] = 1
		}
		if !rep.OK() {
			counters[CounterSnapshotsFailed]++
			failed = append(failed, id)
			if firstProblem == "" {
				firstProblem = rep.ProblemLines()[0]
				if n := len(rep.Problems); n > 1 {
					firstProblem += fmt.Sprintf(" (and %d more problems)", n-1)
				}
			}
		}
		return nil
	}
	for _, id := range plan.Structural {
		if err := verify(id, false); err != nil {
			return res, Classify(err)
		}
	}
	if plan.Deep != "" {
		if err := verify(plan.Deep, true); err != nil {
			return res, Classify(err)
		}
	}
	if len(failed) > 0 {
		msg := fmt.Sprintf("snapshot %s failed verification: %s", failed[0], firstProblem)
		if len(failed) > 1 {
			msg = fmt.Sprintf("%d snapshots failed verification (%s): %s: %s", len(failed), strings.Join(failed, ", "), failed[0], firstProblem)
		}
		return res, &pass.ClassError{Class: pass.ClassIntegrity, Code: CodeVerifyFailed, Err: errors.New(msg)}
	}
	return res, nil
}

// planVerify reads what PlanVerify decides from: the snapshots, which of
// them have a verification record, and the readable records.
func (e *Executor) planVerify(ctx context.Context, r *repo.Repository, job pass.JobDef, host string) (VerifyPlan, error) {
	snaps, err := r.Snapshots(ctx)
	if err != nil {
		return VerifyPlan{}, err
	}
	ids, err := r.VerifiedIDs(ctx)
	if err != nil {
		return VerifyPlan{}, err
	}
	verified := map[string]bool{}
	records := map[string]*repo.Verification{}
	for _, id := range ids {
		verified[id] = true
		v, err := r.Verification(ctx, id)
		switch {
		case err == nil:
			records[id] = v
		case errors.Is(err, repo.ErrIntegrity), errors.Is(err, repo.ErrUnsupportedVersion), errors.Is(err, repo.ErrVerificationNotFound):
			// A damaged record counts as no deep verification; check
			// reports it.
		default:
			return VerifyPlan{}, err
		}
	}
	return PlanVerify(snaps, records, verified, MadeByJob(job.Name, host, job.Sources), job.Verify.DeepEvery, e.now()), nil
}

func (e *Executor) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}
