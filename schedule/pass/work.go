package pass

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
)

// Scheduled work is a run kind other than backup with a schedule of its
// own: a repository's maintenance (prune = SPEC on [repository.NAME]) and a
// job's restore drills (drill = SPEC on a job). Each is a JobDef of its own,
// named so that no config job can take the name (config job names have no
// ':'), so that syncing, claiming, catch-up, retries, runs, job explain and
// pause/resume treat it as any job.

// PruneJobName is the name of the maintenance job of repository:
// "repository:NAME".
func PruneJobName(repository string) string { return "repository:" + repository }

// DrillJobName is the name of the drill job of job: "JOB:drill".
func DrillJobName(job string) string { return job + ":drill" }

// PruneJob returns repository's maintenance, whose slots queue prune runs
// at when. Its priority, catch-up and retries are the defaults.
func PruneJob(repository string, when schedule.Schedule) JobDef {
	return JobDef{
		Name:       PruneJobName(repository),
		Kind:       KindPrune,
		Schedule:   when,
		Priority:   schedule.DefaultPriority,
		Repository: repository,
		CatchUp:    schedule.CatchUpOnce,
		Retry:      RetryPolicy{}.WithDefaults(),
	}
}

// DrillJob returns the drills of job, whose slots queue drill runs at
// when, admitted with the job's priority and retried by its policy. A
// drill reads the repository and no source, so it names no source keys:
// it takes no share of the per-source limits.
func DrillJob(job JobDef, when schedule.Schedule) JobDef {
	return JobDef{
		Name:       DrillJobName(job.Name),
		Kind:       KindDrill,
		ForJob:     job.Name,
		Schedule:   when,
		Priority:   job.Priority,
		Repository: job.Repository,
		CatchUp:    job.CatchUp,
		Retry:      job.Retry,
	}
}

// RunKind returns the kind of run d's slots queue: d.Kind, or KindBackup.
func (d JobDef) RunKind() string { return cmp.Or(d.Kind, KindBackup) }

// executorDef returns the JobDef the executor gets for a run of def: the
// job the work is for when def is scheduled work for another job (a
// scheduled drill of X runs as a drill of X requested by hand does), else
// def.
func (p *Pass) executorDef(def JobDef) JobDef {
	if def.ForJob == "" {
		return def
	}
	if of, ok := p.def(def.ForJob); ok {
		return of
	}
	return def
}

// maintenance is the repositories' maintenance as admission sees it.
type maintenance struct {
	running map[string]string    // repository: the prune run that holds it, running or starting now
	pending map[string]time.Time // repository: when its oldest prune run that may start now and waits for the runs of it was queued
	active  map[string][]string  // repository: its running runs (and those starting now), described
}

func newMaintenance() maintenance {
	return maintenance{running: map[string]string{}, pending: map[string]time.Time{}, active: map[string][]string{}}
}

// started counts run of def as running.
func (m maintenance) started(def JobDef, run Run) {
	m.active[def.Repository] = append(m.active[def.Repository], fmt.Sprintf("%s run %d of %s", run.Kind, run.ID, run.Job))
	if run.Kind == KindPrune {
		m.running[def.Repository] = fmt.Sprintf("run %d", run.ID)
	}
}

// markPending marks the repositories whose prune run is among queued (the
// runs that may start now) and no window holds back: until it has run, the
// other runs of its repository wait behind it, so that a stream of backups
// cannot starve it.
func (p *Pass) markPending(m maintenance, now time.Time, queued []Run) {
	for _, q := range queued {
		def, ok := p.def(q.Job)
		if !ok || q.Kind != KindPrune || p.windowHold(def.Name, now) != "" {
			continue
		}
		if at, ok := m.pending[def.Repository]; !ok || q.QueuedAt.Before(at) {
			m.pending[def.Repository] = q.QueuedAt
		}
	}
}

// hold says why run of def waits for its repository's maintenance, or ""
// if it does not: a prune waits while any run of its repository runs; any
// other run waits while the prune runs, and while it is due and waiting.
func (m maintenance) hold(def JobDef, run Run) string {
	repo := def.Repository
	if run.Kind == KindPrune {
		if active := m.active[repo]; len(active) > 0 {
			return fmt.Sprintf("waiting: repository maintenance (prune) of %s waits while %s of it %s: %s",
				repo, plural(len(active), "run"), runVerb(len(active)), strings.Join(active, ", "))
		}
		return ""
	}
	if by, ok := m.running[repo]; ok {
		return fmt.Sprintf("waiting: repository maintenance (prune) of %s is running (%s)", repo, by)
	}
	// Only runs queued after the prune wait behind it: a run queued
	// before it keeps its place, so that a prune that outlasts its
	// interval (and is queued again, caught up) cannot hold them forever.
	if at, ok := m.pending[repo]; ok && !run.QueuedAt.Before(at) {
		return fmt.Sprintf("waiting: repository maintenance (prune) of %s is queued and goes first: new runs of %s wait until it has run", repo, repo)
	}
	return ""
}

func runVerb(n int) string {
	if n == 1 {
		return "runs"
	}
	return "run"
}
