package pass

import "sync"

// Observer hears of runs as the pass handles them: metrics, notifications
// and hooks each subscribe with one (Pass.Observers). Any field may be nil.
//
// The pass calls them as things happen, not at the end of the pass, from
// the goroutine that handles the run: calls for different runs may come at
// once. For one run they come in order: Started, any Progress, then
// exactly one Finished or Lost, then Queued for the run recorded with its
// result (a retry, or a requeue after a shutdown) if one was queued. None
// comes after Pass.Run returns: a run still executing when the pass stops
// waiting at shutdown is reported Lost (LostAbandoned) before Run returns,
// and what it reports or records later is not passed on. They must be
// quick and must not call the pass back; slow work (sending mail) belongs
// in a goroutine of the observer's own.
type Observer struct {
	Queued    func(Run)           // queued by this pass, as stored: claimed when due, a reclaimed run's retry, or queued with a result
	Started   func(Run)           // admitted by this pass, about to be executed
	Progress  func(Run, Progress) // reported by the executor while the run executes
	Finished  func(Run)           // its result recorded, as recorded
	Lost      func(LostRun)       // given up by this pass without its result recorded, with the reason
	Reclaimed func(Run)           // an orphaned run (of any runner) ended by this pass's reclaim, as stored
}

// LostRun is a run the pass gave up without recording its result: it was
// taken away while running, its heartbeats could not be recorded, its
// result could not be written, or it was still executing when the pass
// stopped waiting at shutdown.
type LostRun struct {
	Run           // as started
	Reason string // why, for people
}

// Reasons of a LostRun.
const (
	LostReclaimed      = "taken away while running: another runner's reclaim ended it"
	LostNoHeartbeat    = "given up: its heartbeats could not be recorded for too long, so other runners could take it for orphaned"
	LostBeforeRecorded = "taken away before its result was written"
	LostNotRecorded    = "its result could not be written: orphan reclaim will end it"
	LostAbandoned      = "still executing when the pass stopped waiting at shutdown: its result is written if it ends before the process exits, else orphan reclaim will end it"
)

// logLost logs a run given up because it was taken away, once.
func (p *Pass) logLost(l LostRun) {
	p.log().Error("run given up: nothing was written for it", "run", l.ID, "job", l.Job, "reason", l.Reason)
}

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

// runEvents passes one run's events to the observers in the order
// Observer promises. It drops Progress once the executor has returned
// (executed), and every event once the run has ended for the observers:
// by its own Finished or Lost (end), or by the pass giving it up at
// shutdown (abandon).
type runEvents struct {
	p         *Pass
	run       Run
	mu        sync.Mutex
	executing bool // the executor has not returned: Progress is passed on
	ended     bool // Finished or Lost was told
}

// startEvents logs the run's start and tells the observers.
func (p *Pass) startEvents(run Run) *runEvents {
	p.log().Info("run started", "run", run.ID, "job", run.Job, "kind", run.Kind, "trigger", run.Trigger, "attempt", run.Attempt)
	p.observeStarted(run)
	return &runEvents{p: p, run: run, executing: true}
}

// progress is the progress function handed to the executor.
func (e *runEvents) progress(progress Progress) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.executing || e.ended {
		return
	}
	for _, o := range e.p.Observers {
		if o.Progress != nil {
			o.Progress(e.run, progress)
		}
	}
}

// executed drops the progress reports that come after the executor returned.
func (e *runEvents) executed() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.executing = false
}

// end tells the observers how the run ended (tell), unless the pass gave
// it up already; then it only logs that the end came too late.
func (e *runEvents) end(how string, tell func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		e.p.log().Warn("run ended after the pass stopped waiting for it at shutdown: observers are not told",
			"run", e.run.ID, "job", e.run.Job, "end", how)
		return
	}
	e.ended = true
	tell()
}

// abandon tells the observers that the pass gave the run up at shutdown
// (LostAbandoned) and drops its later events. It reports false, telling
// nothing, when the run has ended already.
func (e *runEvents) abandon() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return false
	}
	e.ended = true
	e.p.observeLost(LostRun{Run: e.run, Reason: LostAbandoned})
	return true
}
