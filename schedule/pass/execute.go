package pass

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStoreBusy marks a Store error that says the store was busy (another
// process held its lock for longer than the store waits) and nothing was
// written: the call may be made again.
var ErrStoreBusy = errors.New("state store is busy")

// Backoff between attempts to record a result while the store is busy.
const (
	finishBackoff    = 50 * time.Millisecond
	finishBackoffMax = time.Second
)

// outcome is how one run of the pass ended.
type outcome struct {
	run  Run    // as recorded (or as started, when lost)
	next *Run   // queued with the result
	lost string // why the run was given up (nothing was written); "": it was not
	err  error
}

// execute runs the started runs concurrently and records their results.
// It returns when they have all ended, or ShutdownWait after ctx ends. Each
// run's events reach the observers through its runEvents; a run still
// executing when the pass stops waiting is reported lost before execute
// returns, and none of its later events reaches an observer.
func (p *Pass) execute(ctx context.Context, sum *Summary) error {
	if len(sum.Started) == 0 {
		return nil
	}
	outcomes := make(chan outcome, len(sum.Started)) // never blocks a run
	events := map[int64]*runEvents{}
	var wg sync.WaitGroup
	for _, r := range sum.Started {
		ev := p.startEvents(r)
		events[r.ID] = ev
		wg.Go(func() { outcomes <- p.runOne(ctx, r, ev) })
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()

	select {
	case <-all:
	case <-ctx.Done():
		timer := time.NewTimer(p.shutdownWait())
		defer timer.Stop()
		select {
		case <-all:
		case <-timer.C:
		}
	}

	ended := map[int64]bool{}
	var errs []error
	take := func(o outcome) {
		ended[o.run.ID] = true
		switch {
		case o.err != nil:
			errs = append(errs, o.err)
			sum.Warnings = append(sum.Warnings, o.err.Error())
		case o.lost != "":
			sum.Lost = append(sum.Lost, LostRun{Run: o.run, Reason: o.lost})
		default:
			sum.Finished = append(sum.Finished, o.run)
			if o.next != nil {
				sum.Requeued = append(sum.Requeued, *o.next)
			}
		}
	}
	for done := false; !done; {
		select {
		case o := <-outcomes:
			take(o)
		default:
			done = true
		}
	}
	for _, r := range sum.Started {
		if ended[r.ID] {
			continue
		}
		if !events[r.ID].abandon() {
			// It ended just now and its observers were told: its
			// outcome follows at once.
			for !ended[r.ID] {
				take(<-outcomes)
			}
			continue
		}
		msg := fmt.Sprintf("run %d of job %s did not stop within %s of the shutdown: it is left to orphan reclaim", r.ID, r.Job, p.shutdownWait())
		p.log().Warn(msg, "run", r.ID, "job", r.Job)
		sum.Warnings = append(sum.Warnings, msg)
		sum.Abandoned = append(sum.Abandoned, r)
	}
	byID := func(a, b Run) int { return cmp.Compare(a.ID, b.ID) }
	slices.SortFunc(sum.Finished, byID)
	slices.SortFunc(sum.Lost, func(a, b LostRun) int { return byID(a.Run, b.Run) })
	slices.SortFunc(sum.Requeued, func(a, b Run) int { return strings.Compare(a.Job, b.Job) })
	return errors.Join(errs...)
}

// runOne executes one run with its heartbeat and records its result,
// telling the observers through ev as it goes. The run's context ends with
// a cause the executor can read (StoppedStatus): ErrCancelRequested,
// ErrRunLost, or a *Shutdown when ctx ends.
func (p *Pass) runOne(ctx context.Context, run Run, ev *runEvents) outcome {
	def, _ := p.def(run.Job) // admission only starts runs of known jobs
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stopShutdown := context.AfterFunc(ctx, func() {
		wait := p.shutdownWait()
		cancel(&Shutdown{Deadline: time.Now().Add(wait - shutdownMargin(wait))})
	})
	defer stopShutdown()
	var cancelled atomic.Bool
	var lost atomic.Pointer[string]
	var latest atomic.Pointer[Progress] // the executor's last report, for the heartbeat
	// The heartbeat is renewed until the executor returns, also after a
	// cancellation or a shutdown: the after hook still runs.
	beatCtx, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBeat()
	beating := make(chan struct{})
	go func() {
		defer close(beating)
		p.beat(beatCtx, run, cancel, &cancelled, &lost, &latest)
	}()
	progress := func(pr Progress) {
		stored := Progress{Figures: pr.Figures.Clone(), Current: pr.Current}
		stored.Figures.Skipped = nil // the heartbeat stores no list; the result does
		latest.Store(&stored)
		ev.progress(pr)
	}

	res, err := p.executeRun(runCtx, p.executorDef(def), run, progress)
	ev.executed()
	stopBeat()
	<-beating

	if why := lost.Load(); why != nil {
		l := LostRun{Run: run, Reason: *why}
		ev.end("lost", func() { p.observeLost(l) })
		return outcome{run: run, lost: l.Reason}
	}
	final, next := p.result(run, res, err, cancelled.Load(), ctx.Err() != nil)
	// The result is written even when the pass is shutting down.
	wctx, stop := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
	defer stop()
	ok, ferr := p.finish(wctx, final, run.Owner, next)
	switch {
	case ferr != nil:
		p.log().Error("the run's result could not be written: orphan reclaim will end it", "run", run.ID, "job", run.Job,
			"status", final.Status, "err", ferr)
		l := LostRun{Run: run, Reason: LostNotRecorded}
		ev.end("lost", func() { p.observeLost(l) })
		return outcome{run: run, err: fmt.Errorf("record run %d of job %s: %w", run.ID, run.Job, ferr)}
	case !ok:
		l := LostRun{Run: run, Reason: LostBeforeRecorded}
		p.logLost(l)
		ev.end("lost", func() { p.observeLost(l) })
		return outcome{run: run, lost: l.Reason}
	}
	p.log().Info("run ended", "run", final.ID, "job", final.Job, "kind", final.Kind, "status", final.Status,
		"class", final.ErrorClass, "code", final.ErrorCode, "message", final.Message)
	switch {
	case next == nil:
	case next.ID == 0:
		// The store queues nothing for a job removed from the configuration.
		p.log().Info("run not queued again: its job was removed from the configuration", "run", final.ID, "job", final.Job, "trigger", next.Trigger)
		next = nil
	case next.Kind != final.Kind:
		p.log().Info("run queued after the "+final.Kind, "run", next.ID, "job", next.Job, "kind", next.Kind, "after_run", final.ID)
	default:
		p.log().Info("run queued again", "run", next.ID, "job", next.Job, "trigger", next.Trigger, "attempt", next.Attempt,
			"not_before", next.NotBefore, "after_run", final.ID)
	}
	ev.end(final.Status, func() {
		p.observeFinished(final)
		if next != nil {
			p.observeQueued(*next)
		}
	})
	return outcome{run: final, next: next}
}

// finish records a run's result with Store.Finish, trying again while the
// store is busy until ctx ends (RecordTimeout). A store's own wait for a lock
// is shorter than RecordTimeout (SQLite's busy timeout), and a result given
// up on leaves a finished backup running until orphan reclaim records it
// as failed.
func (p *Pass) finish(ctx context.Context, run Run, owner string, next *Run) (bool, error) {
	backoff := finishBackoff
	for {
		ok, err := p.Store.Finish(ctx, run, owner, next)
		if !errors.Is(err, ErrStoreBusy) {
			return ok, err
		}
		p.log().Warn("state store busy: recording the result again", "run", run.ID, "job", run.Job, "err", err)
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return false, err
		case <-timer.C:
		}
		backoff = min(2*backoff, finishBackoffMax)
	}
}

// beat renews the run's heartbeat every Heartbeat until ctx ends (when
// the executor has returned), with the executor's latest progress report.
// A user's cancellation (once: then it only renews) or the loss of the
// run cancels the run's context, with ErrCancelRequested or ErrRunLost.
func (p *Pass) beat(ctx context.Context, run Run, cancel context.CancelCauseFunc, cancelled *atomic.Bool, lost *atomic.Pointer[string], latest *atomic.Pointer[Progress]) {
	every := p.heartbeatEvery()
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	// On the pass's clock: time.Now's monotonic reading in a real runner
	// (no wall-clock step moves it), the fake clock in tests.
	lastRecorded := p.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		reply, err := p.Store.Heartbeat(ctx, run.ID, run.Owner, p.Now(), latest.Load())
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			// A missed heartbeat is not fatal; too many and the run is
			// reclaimed, which the next reply says. A store that cannot
			// be reached gives no reply: before the run can look stale
			// to other runners, which would reclaim it and start a
			// retry beside it, this runner gives it up itself.
			if since := p.Now().Sub(lastRecorded); since+every > p.staleAfter() {
				p.log().Error("no heartbeat recorded for too long: giving the run up, as other runners may reclaim it",
					"run", run.ID, "job", run.Job, "since", since.Round(time.Second), "err", err)
				why := LostNoHeartbeat
				lost.Store(&why)
				cancel(ErrRunLost)
				return
			}
			p.log().Warn("heartbeat failed", "run", run.ID, "job", run.Job, "err", err)
			continue
		}
		lastRecorded = p.Now()
		switch {
		case reply == HeartbeatCancel && !cancelled.Load():
			cancelled.Store(true)
			cancel(ErrCancelRequested)
		case reply == HeartbeatLost:
			why := LostReclaimed
			p.logLost(LostRun{Run: run, Reason: why})
			lost.Store(&why)
			cancel(ErrRunLost)
			return
		}
	}
}

// ErrCancelRequested is the cause of a run's context when a user asked for
// the run's cancellation: the pass records it cancelled.
var ErrCancelRequested = errors.New("cancelled on request")

// ErrRunLost is the cause of a run's context when the runner gave the run
// up (another runner reclaimed it, or no heartbeat could be recorded for
// too long): this runner records nothing of it.
var ErrRunLost = errors.New("the run was given up")

// Shutdown is the cause of a run's context when the pass shuts down. The
// pass stops waiting for its runs ShutdownWait after the shutdown, and
// Deadline is a little before that: what the run still does after its
// cancellation (an after hook) must have ended by then, so that its
// result is recorded.
type Shutdown struct {
	Deadline time.Time
}

func (s *Shutdown) Error() string { return "interrupted by shutdown" }

// shutdownMargin is how long before the pass stops waiting a run stopped
// by a shutdown must have ended (Shutdown.Deadline): the time to record
// its result.
func shutdownMargin(wait time.Duration) time.Duration { return min(wait/5, 5*time.Second) }

// StoppedStatus returns the status the pass records for a run whose
// context is ctx when its executor returns err, if the pass does not judge
// the result (Judge): StatusCancelled after a user's cancellation, the
// loss of the run or any other end of ctx, StatusInterrupted after a
// shutdown when err is not nil; "" while ctx has not ended, and after a
// shutdown when err is nil (the work was done: Judge decides). An executor
// that acts on its run's status (hooks) asks it first.
func StoppedStatus(ctx context.Context, err error) string {
	if ctx.Err() == nil {
		return ""
	}
	var shutdown *Shutdown
	if errors.As(context.Cause(ctx), &shutdown) {
		if err != nil {
			return StatusInterrupted
		}
		return ""
	}
	return StatusCancelled
}

// executeRun calls the Executor, turning a missing executor and a panic
// into errors.
func (p *Pass) executeRun(ctx context.Context, def JobDef, run Run, progress func(Progress)) (res Result, err error) {
	if p.Executor == nil {
		return Result{}, &ClassError{Class: ClassConfig, Code: CodeExecutorNotConfigured,
			Err: errors.New("no executor is configured: nothing was backed up")}
	}
	defer func() {
		if v := recover(); v != nil {
			res, err = Result{}, &ClassError{Class: ClassUnknown, Code: CodeExecutorPanic, Err: fmt.Errorf("executor panicked: %v", v)}
		}
	}()
	return p.Executor.Execute(ctx, def, run, progress)
}

// result decides how a run ended, in this order: a user's cancellation
// outweighs everything; then an interruption by shutdown; then the
// executor's error with its class; then skipped objects (partial
// failure). It returns the run to record and the run to queue with it.
func (p *Pass) result(run Run, res Result, err error, cancelled, shutdown bool) (Run, *Run) {
	now := p.Now()
	r := run
	r.EndedAt = now
	r.Figures = res.Figures
	r.Snapshots = res.Snapshots
	r.Output = res.Output
	r.HeldReason = ""
	r.ErrorClass, r.ErrorCode, r.Message = "", "", ""

	switch {
	case cancelled:
		r.Status, r.ErrorClass, r.ErrorCode = StatusCancelled, ClassCancelled, CodeCancelled
		r.Message = "cancelled on request"
		return r, nil
	case shutdown && err != nil:
		r.Status, r.ErrorClass, r.ErrorCode = StatusInterrupted, ClassCancelled, CodeInterrupted
		r.Message = "interrupted by shutdown: queued again to run after the restart"
		return r, p.requeue(run, now)
	}
	v := Judge(res, err)
	r.Status, r.ErrorClass, r.ErrorCode, r.Message = v.Status, v.Class, v.Code, v.Message
	switch r.Status {
	case StatusCancelled, StatusPartialFailure:
		// A partial failure is not retried: it would skip the same
		// objects again; it needs a look.
		return r, nil
	case StatusFailed:
		if r.Kind == KindVerify && r.ErrorClass == ClassIntegrity && r.ErrorCode == CodeVerifyFailed {
			// The verdict is recorded in the repository: the chain goes
			// on, and retention keeps the failed snapshot.
			return r, p.afterBackup(r, now)
		}
		if r.ErrorCode == CodeRepositoryReplaced {
			return r, nil
		}
		return r, p.retryOf(r, r.ErrorClass, now)
	}
	return r, p.afterBackup(r, now)
}

// Verdict is how a run ended, as the pass records it: its status, error
// class and code, and message.
type Verdict struct {
	Status  string
	Class   string
	Code    string
	Message string
}

// Judge returns the verdict the pass records for an executor's result and
// error, when neither a user's cancellation nor a shutdown came first
// (only the pass knows of those): failed with the error's class (or
// cancelled, for the class cancelled), else partial_failure when objects
// were skipped, else succeeded. An executor that must act on its run's
// status before returning (the hooks on_success, on_failure and
// on_partial) calls it, so that it and the pass never disagree.
func Judge(res Result, err error) Verdict {
	switch {
	case err != nil:
		v := Verdict{Status: StatusFailed, Class: ClassUnknown, Message: err.Error()}
		var ce *ClassError
		if errors.As(err, &ce) {
			v.Class = cmp.Or(ce.Class, ClassUnknown)
			v.Code = ce.Code
		}
		if v.Class == ClassCancelled {
			v.Status = StatusCancelled
			return v
		}
		if skipped(res.Figures) > 0 {
			v.Message += "; " + skippedMessage(res.Figures)
		}
		return v
	case skipped(res.Figures) > 0:
		return Verdict{Status: StatusPartialFailure, Code: CodeObjectsSkipped, Message: skippedMessage(res.Figures)}
	}
	return Verdict{Status: StatusSucceeded}
}

// afterBackup returns the run queued with the result of a run in the chain
// that follows a succeeded backup (nil: none): a succeeded backup queues a
// verify run of the job (the verify checks the job's snapshots that have no
// verification record yet), or its retention when verify is off; a verify
// run that ended with a verdict (succeeded, or failed with class integrity:
// the snapshot is marked verify_failed) queues the job's retention, when it
// has one. A failed or
// partial backup queues nothing, so never starts retention. Queued in the
// same Finish as the result, the next run needs no second active run of
// the job; its trigger is schedule (it is scheduled work) and its held
// reason names the run it follows.
func (p *Pass) afterBackup(r Run, now time.Time) *Run {
	def, ok := p.def(r.Job)
	if !ok {
		return nil
	}
	next := &Run{
		JobID:       r.JobID,
		Job:         r.Job,
		Trigger:     TriggerSchedule, // the schema's triggers are fixed: this one needs no migration
		Attempt:     1,
		Priority:    def.Priority,
		ScheduledAt: now,
		NotBefore:   now,
		QueuedAt:    now,
		Status:      StatusQueued,
	}
	switch {
	case r.Kind == KindBackup && def.Verify.Enabled:
		next.Kind = KindVerify
		next.HeldReason = fmt.Sprintf("waiting: verify after backup run %d", r.ID)
	case r.Kind == KindBackup && def.Retention.Enabled:
		next.Kind = KindRetention
		next.HeldReason = fmt.Sprintf("waiting: retention after backup run %d", r.ID)
	case r.Kind == KindVerify && def.Retention.Enabled:
		next.Kind = KindRetention
		next.HeldReason = fmt.Sprintf("waiting: retention after verify run %d", r.ID)
	default:
		return nil
	}
	return next
}

// requeue returns the run that replaces one interrupted by shutdown: the
// same job, trigger, attempt and slot, to start as soon as a pass admits it.
func (p *Pass) requeue(run Run, now time.Time) *Run {
	priority := run.Priority
	if def, ok := p.def(run.Job); ok {
		priority = def.Priority
	}
	return &Run{
		JobID:       run.JobID,
		Job:         run.Job,
		Kind:        run.Kind,
		Trigger:     run.Trigger,
		Attempt:     max(run.Attempt, 1),
		Priority:    priority,
		ScheduledAt: run.ScheduledAt,
		NotBefore:   now,
		QueuedAt:    now,
		Status:      StatusQueued,
		MissedSlots: run.MissedSlots,
		HeldReason:  fmt.Sprintf("waiting: queued again after a shutdown interrupted run %d", run.ID),
	}
}

func skipped(f Figures) int64 {
	return max(f.FilesSkipped, int64(len(f.Skipped)))
}

// skippedMessage says how many objects a run skipped and why, the most
// frequent reasons first, naming the object of a reason met once (the
// line cron mails must say which source or file it was):
// "17 objects skipped: permission denied (16), /srv/x: source does not exist".
func skippedMessage(f Figures) string {
	n := skipped(f)
	noun := "objects"
	if n == 1 {
		noun = "object"
	}
	msg := fmt.Sprintf("%d %s skipped", n, noun)
	type reason struct {
		text   string
		object string // the first object skipped for it
		count  int
	}
	var reasons []reason
	for _, s := range f.Skipped {
		text := cmp.Or(s.Reason, "no reason given")
		if i := slices.IndexFunc(reasons, func(r reason) bool { return r.text == text }); i >= 0 {
			reasons[i].count++
		} else {
			reasons = append(reasons, reason{text: text, object: s.Object, count: 1})
		}
	}
	slices.SortStableFunc(reasons, func(a, b reason) int { return b.count - a.count })
	say := func(r reason) string {
		if r.count == 1 && r.object != "" {
			return r.object + ": " + r.text
		}
		return r.text
	}
	switch len(reasons) {
	case 0:
		return msg
	case 1:
		return msg + ": " + say(reasons[0])
	}
	const shown = 3
	var parts []string
	for _, r := range reasons[:min(len(reasons), shown)] {
		if r.count == 1 {
			parts = append(parts, say(r))
		} else {
			parts = append(parts, fmt.Sprintf("%s (%d)", r.text, r.count))
		}
	}
	if len(reasons) > shown {
		parts = append(parts, plural(len(reasons)-shown, "other reason"))
	}
	return msg + ": " + strings.Join(parts, ", ")
}
