package pass

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
)

// States an Explanation gives a job.
const (
	ExplainPaused    = "paused"    // paused by a user
	ExplainRunning   = "running"   // a run of the job is running
	ExplainStarting  = "starting"  // a run is queued and the next pass starts it
	ExplainWaiting   = "waiting"   // a run is queued and held back
	ExplainDue       = "due"       // the next slot has come: the next pass claims it
	ExplainScheduled = "scheduled" // waiting for its next slot
	ExplainManual    = "manual"    // runs only on request
)

// Explanation says why a job is or is not running now, for nightjar job explain.
type Explanation struct {
	Job     string
	State   string    // one of the Explain states
	NextRun time.Time // the stored next slot; zero for a manual job
	Lines   []string  // what decides it, most important first
}

// String writes the explanation as lines: the state, then the reasons.
func (e Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "job %s: %s\n", e.Job, e.State)
	for _, l := range e.Lines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	return b.String()
}

// ExplainJob says why job, as stored, is or is not running at Now, from the
// admission state the Store gives (Store.AdmitState): the same state, read
// the same way, as the next pass's admission decides from.
func (p *Pass) ExplainJob(ctx context.Context, job Job) (Explanation, error) {
	current, err := p.Store.AdmitState(ctx)
	if err != nil {
		return Explanation{}, fmt.Errorf("read admission state: %w", err)
	}
	def, _ := p.def(job.Name)
	return p.Explain(def, job, current), nil
}

// Explain says why the job def, stored as job, is or is not running at Now, given the current runs: every queued and running run, and whether each job's latest finished run succeeded.
func (p *Pass) Explain(def JobDef, job Job, current AdmitState) Explanation {
	now := p.Now()
	if def.Name == "" {
		def.Name = job.Name
	}
	e := Explanation{Job: def.Name, NextRun: job.NextRun}
	add := func(format string, args ...any) { e.Lines = append(e.Lines, fmt.Sprintf(format, args...)) }

	if job.Paused {
		e.State = ExplainPaused
		add("paused: no new runs are claimed; nightjar job resume %s computes its next run from then on", def.Name)
	}
	if r, ok := findRun(current.Running, def.Name); ok {
		e.State = ExplainRunning
		add("running as run %d since %s (%s, attempt %d, last heartbeat %s ago, runner %s)",
			r.ID, stamp(r.StartedAt), r.Trigger, r.Attempt, now.Sub(r.HeartbeatAt).Round(time.Second), r.Runner)
		return e
	}
	if r, ok := findRun(current.Queued, def.Name); ok {
		e.State = ExplainWaiting
		if r.NotBefore.After(now) {
			add("queued as run %d (%s, attempt %d), not before %s", r.ID, r.Trigger, r.Attempt, stamp(r.NotBefore))
			if r.HeldReason != "" {
				add("%s", r.HeldReason)
			}
			return e
		}
		for _, d := range p.decide(now, current.Eligible(now)) {
			if d.RunID != r.ID {
				continue
			}
			add("queued as run %d (%s, attempt %d) since %s", r.ID, r.Trigger, r.Attempt, stamp(r.QueuedAt))
			if d.Admit {
				e.State = ExplainStarting
				add("nothing holds it back: the next pass starts it")
			} else {
				add("%s", d.HeldReason)
			}
		}
		return e
	}
	if job.Paused {
		return e
	}

	if _, scheduled := def.Schedule.Next(now); !scheduled {
		e.State = ExplainManual
		add("runs only on request: nightjar job run %s", def.Name)
	} else if job.NextRun.IsZero() {
		e.State = ExplainScheduled
		add("no next run is stored yet: the next pass computes it")
	} else if !job.NextRun.After(now) {
		e.State = ExplainDue
		due := schedule.CheckDue(def.Schedule, job.NextRun, now, p.grace(), def.CatchUp)
		switch {
		case due.CatchUp:
			add("due since %s: %s missed; the next pass queues one catch-up run", stamp(job.NextRun), plural(due.Missed, "slot"))
		case due.Run:
			add("due at %s: the next pass queues its run", stamp(due.Slot))
		default:
			add("%s missed and skipped (catch_up skip): the next run is at %s", plural(due.Missed, "slot"), stamp(due.Next))
		}
	} else {
		e.State = ExplainScheduled
		add("next run at %s", stamp(job.NextRun))
		if slot, _ := def.Schedule.Next(now); slot.Before(job.NextRun) {
			if at, err := p.NextRun(def, now); err == nil && at.Equal(job.NextRun) {
				add("its slot at %s is postponed by the maintenance windows", stamp(slot))
			}
		}
	}

	// What would hold a run back if it were queued now.
	if reason := p.windowHold(def.Name, now); reason != "" {
		add("a run now would be %s", reason)
	}
	u := p.usage(AdmitState{Running: current.Running, LastSucceeded: current.LastSucceeded})
	for _, q := range current.Queued {
		u.active[q.Job] = StatusQueued
	}
	p.markPending(u.maint, now, current.Eligible(now).Queued)
	if reason := u.maint.hold(def, Run{Job: def.Name, Kind: def.RunKind(), QueuedAt: now}); reason != "" {
		add("a run now would be %s", reason)
	}
	for _, dep := range def.DependsOn {
		switch state, busy := u.active[dep]; {
		case busy:
			add("dependency %s is %s: a run waits for it to end and succeed", dep, state)
		case !current.LastSucceeded[dep]:
			add("dependency %s has not succeeded: a run waits until it does", dep)
		default:
			add("dependency %s: its last run succeeded", dep)
		}
	}
	if limit := p.Limits.Global; limit > 0 {
		add("global limit: %d of %d running", u.global, limit)
	}
	if limit := p.Limits.PerRepository[def.Repository]; limit > 0 {
		add("repository %s: %d of %d running", def.Repository, u.repo[def.Repository], limit)
	}
	if limit := p.Limits.PerSource; limit > 0 {
		for _, s := range uniq(def.Sources) {
			if u.source[s] >= limit {
				add("source %s: %d of %d running", s, u.source[s], limit)
			}
		}
	}
	return e
}

func findRun(runs []Run, job string) (Run, bool) {
	for _, r := range runs {
		if r.Job == job {
			return r, true
		}
	}
	return Run{}, false
}
