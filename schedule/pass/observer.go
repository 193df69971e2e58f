package pass

import "sync"

// Observer hears of runs as the pass handles them: metrics, notifications
// and hooks each subscribe with one (Pass.Observers). Any field may be nil.
//
// The pass calls them as things happen, not at the end of the pass, from
// the goroutine that handles the run: calls for different runs may come at
// once. For one run they come in order: Started, any Progress, then
// Finished or Lost, then Queued for the run recorded with its result (a
// retry, or a requeue after a shutdown). They must be quick and must not
// call the pass back; slow work (sending mail) belongs in a goroutine of
// the observer's own.
type Observer struct {
	Queued    func(Run)           // queued by this pass, as stored: claimed when due, a reclaimed run's retry, or queued with a result
	Started   func(Run)           // admitted by this pass, about to be executed
	Progress  func(Run, Progress) // reported by the executor while the run executes
	Finished  func(Run)           // its result recorded, as recorded
	Lost      func(LostRun)       // given up by this pass: nothing was written for it
	Reclaimed func(Run)           // an orphaned run (of any runner) ended by this pass's reclaim, as stored
}

// LostRun is a run the pass gave up: it was taken away while running, or
// its heartbeats could not be recorded, so its result was not written.
type LostRun struct {
	Run           // as started
	Reason string // why, for people
}

// Reasons of a LostRun.
const (
	LostReclaimed      = "taken away while running: another runner's reclaim ended it"
	LostNoHeartbeat    = "given up: its heartbeats could not be recorded for too long, so other runners could take it for orphaned"
	LostBeforeRecorded = "taken away before its result was written"
)

func (p *Pass) observeQueued(r Run) {
	for _, o := range p.Observers {
		if o.Queued != nil {
			o.Queued(r)
		}
	}
}

func (p *Pass) observeStarted(r Run) {
	for _, o := range p.Observers {
		if o.Started != nil {
			o.Started(r)
		}
	}
}

func (p *Pass) observeFinished(r Run) {
	for _, o := range p.Observers {
		if o.Finished != nil {
			o.Finished(r)
		}
	}
}

func (p *Pass) observeLost(l LostRun) {
	p.log().Error("run given up: nothing was written for it", "run", l.ID, "job", l.Job, "reason", l.Reason)
	for _, o := range p.Observers {
		if o.Lost != nil {
			o.Lost(l)
		}
	}
}

func (p *Pass) observeReclaimed(r Run) {
	for _, o := range p.Observers {
		if o.Reclaimed != nil {
			o.Reclaimed(r)
		}
	}
}

// progressReporter is the progress function handed to the executor for
// run: it passes reports to the observers one at a time, and drops those
// that come after the executor returned (stop).
type progressReporter struct {
	p       *Pass
	run     Run
	mu      sync.Mutex
	stopped bool
}

func (pr *progressReporter) report(progress Progress) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.stopped {
		return
	}
	for _, o := range pr.p.Observers {
		if o.Progress != nil {
			o.Progress(pr.run, progress)
		}
	}
}

func (pr *progressReporter) stop() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.stopped = true
}
