package jobs

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Counters of a retention run.
const (
	CounterSnapshotsKept      = "snapshots_kept"      // the job's snapshots the policy keeps
	CounterSnapshotsForgotten = "snapshots_forgotten" // removed by this run, with those of an interrupted forget it completed
	CounterKeptPinned         = "kept_pinned"         // chosen, but found pinned after marking, and kept
	CounterPruned             = "pruned"              // 1: prune ran after the forget; 0: skipped, as nothing was forgotten
)

// retentionRun forgets the job's snapshots its retention policy does not
// keep, by repo.Forget, and then, when it forgot any (or when it is a
// retry, whose first attempt may have forgotten some and failed to
// prune), prunes the repository with restic's defaults (repo.Prune): the
// data no snapshot uses goes, of every job, while the data of every
// snapshot kept, of any job, stays. Both take the repository's exclusive
// lock by trying (a busy repository is class busy, and retried), and the
// forget touches only the snapshots the job made on this host (MadeByJob).
func (e *Executor) retentionRun(ctx context.Context, job pass.JobDef, run pass.Run, progress func(pass.Progress)) (pass.Result, error) {
	var res pass.Result
	if !job.Retention.Enabled {
		return res, &pass.ClassError{Class: pass.ClassConfig, Code: "RETENTION_OFF", Err: fmt.Errorf("job %s has retention = \"off\"", job.Name)}
	}
	host, err := os.Hostname()
	if err != nil {
		return res, Classify(fmt.Errorf("host name: %w", err))
	}
	r, err := e.openRepository(ctx, job, e.Open)
	if err != nil {
		return res, err
	}
	defer r.Close()
	defer e.syncCatalog(ctx, job.Repository, r)() // the catalog before the run, and again after it
	progress(pass.Progress{Current: "forget by " + job.Retention.Policy.String()})
	plan := RetentionPlan{Policy: job.Retention.Policy, GroupBy: schedule.DefaultGroupBy, Zone: job.Schedule.Location(), Consider: MadeByJob(job.Name, host, job.Sources)}
	kept := 0
	decide := func(snaps []*repo.Snapshot, pinned map[string]bool) ([]string, error) {
		// Read under forget's lock: a verification recorded before it is seen.
		failed, err := r.VerifyFailed(ctx)
		if err != nil {
			return nil, err
		}
		plan.VerifyFailed = failed
		groups, victims, err := plan.Decide(snaps, pinned)
		kept = 0
		for _, g := range groups {
			for _, d := range g.Decisions {
				if d.Keep {
					kept++
				}
			}
		}
		return victims, err
	}
	out, err := r.Forget(ctx, repo.ForgetOptions{Plan: decide, GroupKey: plan.GroupKey})
	if err != nil {
		return res, Classify(err)
	}
	forgotten := len(out.Forgotten) + len(out.Completed)
	res.Figures.Counters = map[string]int64{
		CounterSnapshotsKept:      int64(kept),
		CounterSnapshotsForgotten: int64(forgotten),
		CounterKeptPinned:         int64(len(out.KeptPinned)),
		CounterPruned:             0,
	}
	if forgotten == 0 && run.Trigger != pass.TriggerRetry {
		progress(pass.Progress{Figures: res.Figures.Clone(), Current: "prune skipped: nothing was forgotten"})
		return res, nil
	}
	progress(pass.Progress{Figures: res.Figures.Clone(), Current: "prune with max-unused " + repo.DefaultMaxUnused.String()})
	sweepSortFiles(&res)
	forgetFigures := res.Figures.Clone()
	err = prune(ctx, r, func(current string) {
		progress(pass.Progress{Figures: forgetFigures.Clone(), Current: current})
	}, res.Figures.Counters)
	if err != nil {
		return res, err
	}
	res.Figures.Counters[CounterPruned] = 1
	return res, nil
}

// RetentionPlan is a retention policy applied to the snapshots a filter
// lets it consider, grouped as `nightjar forget` groups them. Both
// `nightjar forget`, `nightjar job retention` and the retention runs decide
// through it.
type RetentionPlan struct {
	Policy   schedule.RetentionPolicy
	GroupBy  schedule.GroupBy
	Zone     *time.Location            // where calendar buckets are counted
	Consider func(*repo.Snapshot) bool // the snapshots the policy may touch; nil: all
	// VerifyFailed are the snapshots whose verification failed
	// (repo.VerifyFailed): kept, and not counted by the policy.
	VerifyFailed map[string]bool
}

// Decide returns the decisions on each group of the considered snapshots
// and the IDs of the snapshots that go.
func (p RetentionPlan) Decide(snaps []*repo.Snapshot, pinned map[string]bool) ([]schedule.GroupDecisions, []string, error) {
	var considered []schedule.RetentionSnapshot
	for _, s := range snaps {
		if p.Consider == nil || p.Consider(s) {
			rs := RetentionSnapshot(s, pinned)
			rs.VerifyFailed = p.VerifyFailed[s.ID]
			considered = append(considered, rs)
		}
	}
	groups, err := schedule.DecideRetentionGroups(considered, p.GroupBy, p.Policy, p.Zone)
	if err != nil {
		return nil, nil, err
	}
	var victims []string
	for _, g := range groups {
		for _, d := range g.Decisions {
			if !d.Keep {
				victims = append(victims, d.Snapshot.ID)
			}
		}
	}
	return groups, victims, nil
}

// GroupKey is the retention group of s, which repo.Forget uses to refuse
// the removal of a group's newest snapshot.
func (p RetentionPlan) GroupKey(s *repo.Snapshot) string {
	return schedule.GroupSnapshots([]schedule.RetentionSnapshot{RetentionSnapshot(s, nil)}, p.GroupBy)[0].Key
}

// RetentionSnapshot is what the policy knows of s.
func RetentionSnapshot(s *repo.Snapshot, pinned map[string]bool) schedule.RetentionSnapshot {
	return schedule.RetentionSnapshot{ID: s.ID, Time: s.Time, Host: s.Hostname, Paths: s.Paths, Tags: s.Tags, Pinned: pinned[s.ID]}
}

// JobTag is the tag every snapshot of a job's backup runs carries.
func JobTag(job string) string { return "job:" + job }

// MadeByJob reports whether a snapshot is one the job's backups made on
// host: tagged with JobTag, of host, and of exactly one of the job's
// sources. A job's retention considers those only, never another job's,
// another host's or a command-line backup's.
func MadeByJob(job, host string, sources []string) func(*repo.Snapshot) bool {
	return func(s *repo.Snapshot) bool {
		return s.Hostname == host && slices.Contains(s.Tags, JobTag(job)) &&
			len(s.Paths) == 1 && slices.Contains(sources, s.Paths[0])
	}
}
