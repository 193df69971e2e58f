package pass

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
)

// admit starts the queued runs that may start now and stores why the
// others wait.
func (p *Pass) admit(ctx context.Context, sum *Summary) error {
	now := p.Now()
	runner := p.runner()
	var held []Held
	decide := func(st AdmitState) []Admission {
		decisions := p.decide(now, st)
		held = held[:0]
		for i := range decisions {
			d := &decisions[i]
			if d.Admit {
				d.Owner, d.Runner, d.Lease = p.token(), runner, p.staleAfter()
				continue
			}
			held = append(held, Held{RunID: d.RunID, Job: jobOf(st.Queued, d.RunID), Reason: d.HeldReason})
		}
		return decisions
	}
	started, err := p.Store.Admit(ctx, now, decide)
	if err != nil {
		return err
	}
	for _, h := range held {
		p.log().Info("run held", "run", h.RunID, "job", h.Job, "reason", h.Reason)
	}
	sum.Held = held
	sum.Started = started
	return nil
}

func jobOf(runs []Run, id int64) string {
	for _, r := range runs {
		if r.ID == id {
			return r.Job
		}
	}
	return ""
}

// decide admits st's queued runs in order of effective priority (oldest
// first among equals) while the windows, dependencies and limits allow,
// and gives every other run its reason. It is pure: owners are set later.
func (p *Pass) decide(now time.Time, st AdmitState) []Admission {
	type candidate struct {
		run   Run
		score float64
		order int
	}
	cands := make([]candidate, len(st.Queued))
	for i, r := range st.Queued {
		level := r.Priority
		if def, ok := p.def(r.Job); ok {
			level = def.Priority // the config is the truth
		}
		cands[i] = candidate{run: r, score: schedule.EffectivePriority(level, now.Sub(r.QueuedAt)), order: i}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		switch {
		case a.score != b.score:
			if a.score > b.score {
				return -1
			}
			return 1
		case !a.run.QueuedAt.Equal(b.run.QueuedAt):
			return a.run.QueuedAt.Compare(b.run.QueuedAt)
		}
		return a.order - b.order
	})

	u := p.usage(st)
	p.markPending(u.maint, now, st.Queued)
	decisions := make([]Admission, 0, len(cands))
	for _, c := range cands {
		reason := p.holdReason(now, c.run, st, u)
		if reason == "" {
			def, _ := p.def(c.run.Job)
			u.add(def, c.run)
			u.active[c.run.Job] = "starting now" // for the reasons of its dependents
		}
		decisions = append(decisions, Admission{RunID: c.run.ID, Admit: reason == "", HeldReason: reason})
	}
	return decisions
}

// usage counts the runs that hold a share of each limit.
type usage struct {
	global  int
	repo    map[string]int
	source  map[string]int
	active  map[string]string // job name: "running" or "queued"
	lastWin map[string]bool   // per job: its latest finished run fully succeeded
	maint   maintenance       // the repositories' maintenance
}

// usage counts st's running runs; the caller marks pending maintenance.
func (p *Pass) usage(st AdmitState) *usage {
	u := &usage{repo: map[string]int{}, source: map[string]int{}, active: map[string]string{}, lastWin: st.LastSucceeded, maint: newMaintenance()}
	for _, r := range st.Queued {
		u.active[r.Job] = StatusQueued
	}
	for _, r := range st.Running {
		u.active[r.Job] = StatusRunning
		def, ok := p.def(r.Job)
		if !ok {
			u.global++ // a job no longer in the config still takes its share
			continue
		}
		u.add(def, r)
	}
	return u
}

// add counts run of def, running or starting now.
func (u *usage) add(def JobDef, run Run) {
	u.maint.started(def, run)
	u.global++
	u.repo[def.Repository]++
	for _, s := range uniq(def.Sources) {
		u.source[s]++
	}
}

func uniq(items []string) []string {
	out := slices.Clone(items)
	slices.Sort(out)
	return slices.Compact(out)
}

// holdReason says why run may not start now, or "" if it may.
func (p *Pass) holdReason(now time.Time, run Run, st AdmitState, u *usage) string {
	def, ok := p.def(run.Job)
	if !ok {
		return fmt.Sprintf("waiting: job %s is no longer in the config: cancel the run or declare the job again", run.Job)
	}
	if reason := p.windowHold(def.Name, now); reason != "" {
		return reason
	}
	if reason := u.maint.hold(def, run); reason != "" {
		return reason
	}
	for _, dep := range def.DependsOn {
		if state, busy := u.active[dep]; busy && dep != def.Name {
			return fmt.Sprintf("waiting: dependency %s has not succeeded: it is %s", dep, state)
		}
		if !u.lastWin[dep] {
			return fmt.Sprintf("waiting: dependency %s has not succeeded", dep)
		}
	}
	if limit := p.Limits.Global; limit > 0 && u.global >= limit {
		return fmt.Sprintf("waiting: global limit of %s", plural(limit, "run"))
	}
	if limit := p.Limits.PerRepository[def.Repository]; limit > 0 && u.repo[def.Repository] >= limit {
		return fmt.Sprintf("waiting: repository %s at its limit of %d", def.Repository, limit)
	}
	if limit := p.Limits.PerSource; limit > 0 {
		for _, s := range uniq(def.Sources) {
			if u.source[s] >= limit {
				return fmt.Sprintf("waiting: source %s at its limit of %d", s, limit)
			}
		}
	}
	return ""
}

// windowHold says why job may not start at now because of the maintenance
// windows, or "" if it may.
func (p *Pass) windowHold(job string, now time.Time) string {
	at, err := schedule.FirstAllowed(job, now, p.Windows)
	if err != nil {
		return "waiting: the maintenance windows leave no instant to start within 31 days: change the windows"
	}
	if at.After(now) {
		return p.windowReason(job, now, at)
	}
	return ""
}

// windowReason names the window that keeps job from starting at now, until until.
func (p *Pass) windowReason(job string, now, until time.Time) string {
	for _, w := range p.Windows {
		if w.Kind() == schedule.Blackout && w.AppliesTo(job) && w.Contains(now) {
			return fmt.Sprintf("waiting: blackout window %s until %s", w.Name(), stamp(until))
		}
	}
	return fmt.Sprintf("waiting: outside the allowed windows until %s", stamp(until))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
