package pass

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingObserver writes down every event as a line: "started 3 a".
type recordingObserver struct {
	mu     sync.Mutex
	events []string
}

func (o *recordingObserver) add(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, fmt.Sprintf(format, args...))
}

func (o *recordingObserver) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events)
}

func (o *recordingObserver) observer() Observer {
	return Observer{
		Queued:   func(r Run) { o.add("queued %s %s %s", r.Job, r.Kind, r.Trigger) },
		Started:  func(r Run) { o.add("started %s", r.Job) },
		Progress: func(r Run, p Progress) { o.add("progress %s %s files=%d", r.Job, p.Current, p.Figures.Files) },
		Finished: func(r Run) { o.add("finished %s %s", r.Job, r.Status) },
		Lost:     func(l LostRun) { o.add("lost %s: %s", l.Job, l.Reason) },
		Reclaimed: func(r Run) {
			o.add("reclaimed %s %s", r.Job, r.ErrorCode)
		},
	}
}

// eventsOf returns the events of job's runs, in the order heard.
func eventsOf(events []string, job string) []string {
	var out []string
	for _, e := range events {
		if fields := strings.Fields(e); len(fields) > 1 && strings.TrimSuffix(fields[1], ":") == job {
			out = append(out, e)
		}
	}
	return out
}

// indexOf returns where event is in events, failing the test when it is not.
func indexOf(t *testing.T, events []string, event string) int {
	t.Helper()
	i := slices.Index(events, event)
	if i < 0 {
		t.Fatalf("no event %q in %q", event, events)
	}
	return i
}

// funcExecutor runs each run with a function that may report progress.
type funcExecutor func(ctx context.Context, job JobDef, run Run, progress func(Progress)) (Result, error)

func (e funcExecutor) Execute(ctx context.Context, job JobDef, run Run, progress func(Progress)) (Result, error) {
	return e(ctx, job, run, progress)
}

// Observers hear of each run while the pass runs, not from its Summary:
// while a's executor is held, a's start and progress are already told.
// For each run the events come in order, with one finished per started,
// and the retry queued with b's failure comes after it.
func TestObserversHearEventsAsTheyHappen(t *testing.T) {
	f := newFixture(t, manual(t, "a"), manual(t, "b"))
	first, second := &recordingObserver{}, &recordingObserver{}
	f.pass.Observers = []Observer{first.observer(), second.observer()}
	f.run(at(0))

	reported, release := make(chan struct{}), make(chan struct{})
	var lateProgress func(Progress)
	f.pass.Executor = funcExecutor(func(ctx context.Context, job JobDef, run Run, progress func(Progress)) (Result, error) {
		if job.Name == "b" {
			return Result{}, &ClassError{Class: ClassNetwork, Code: "NET", Err: errors.New("link down")}
		}
		progress(Progress{Current: "source /a", Figures: Figures{Files: 1}})
		lateProgress = progress
		close(reported)
		<-release
		return Result{Figures: Figures{Files: 2}}, nil
	})
	f.queued("a", "normal", at(h))
	f.queued("b", "normal", at(h))
	f.clock.Set(at(h))
	done := make(chan Summary)
	go func() {
		sum, err := f.pass.Run(context.Background())
		if err != nil {
			t.Errorf("pass: %v", err)
		}
		done <- sum
	}()

	<-reported
	during := first.seen()
	indexOf(t, during, "started a")
	indexOf(t, during, "progress a source /a files=1")
	if slices.Contains(during, "finished a succeeded") {
		t.Errorf("a finished while its executor was held: %q", during)
	}
	close(release)
	sum := <-done

	events := first.seen()
	// Events of different runs may come at once (Observer's contract), so
	// the two observers may interleave a's and b's differently; each run's
	// own events they must hear alike and in the same order.
	for _, job := range []string{"a", "b"} {
		if a, b := eventsOf(events, job), eventsOf(second.seen(), job); !slices.Equal(a, b) {
			t.Errorf("two observers heard different events of %s:\n%q\n%q", job, a, b)
		}
	}
	if s, p, e := indexOf(t, events, "started a"), indexOf(t, events, "progress a source /a files=1"), indexOf(t, events, "finished a succeeded"); !(s < p && p < e) {
		t.Errorf("a's events out of order: %q", events)
	}
	if s, e, q := indexOf(t, events, "started b"), indexOf(t, events, "finished b failed"), indexOf(t, events, "queued b backup retry"); !(s < e && e < q) {
		t.Errorf("b's events out of order: %q", events)
	}
	started, finished := 0, 0
	for _, e := range events {
		switch {
		case strings.HasPrefix(e, "started "):
			started++
		case strings.HasPrefix(e, "finished "):
			finished++
		}
	}
	if started != 2 || finished != 2 || len(sum.Finished) != 2 {
		t.Errorf("%d started and %d finished events for %d finished runs: %q", started, finished, len(sum.Finished), events)
	}

	// A progress report after the executor returned is not passed on.
	lateProgress(Progress{Current: "too late"})
	if got := first.seen(); len(got) != len(events) {
		t.Errorf("a progress report after the run ended reached the observers: %q", got[len(events):])
	}
}

// A run taken away while it runs is reported lost, with its reason, and
// never finished.
func TestObserversHearLostRuns(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	rec := &recordingObserver{}
	f.pass.Observers = []Observer{rec.observer()}
	f.run(at(0))
	f.exec.do = func(ctx context.Context, _ JobDef, run Run) (Result, error) {
		f.store.reclaimNow(run.ID, at(2*h)) // another pass took it away
		waitDone(t, ctx)
		return Result{Figures: Figures{Files: 10}}, nil
	}
	f.queued("daten", "normal", at(h))
	sum := f.run(at(h))
	want := []string{"started daten", "lost daten: " + LostReclaimed}
	if got := rec.seen(); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if len(sum.Lost) != 1 || sum.Lost[0].Reason != LostReclaimed {
		t.Errorf("summary lost %+v, want the run with its reason", sum.Lost)
	}
}

// Reclaimed orphans, their retries and claimed due runs are told as the
// pass handles them, in the pass's order: reclaim, claim, then the runs it
// starts.
func TestObserversHearReclaimsAndClaims(t *testing.T) {
	f := newFixture(t, manual(t, "stale"), job(t, "hourly", "hourly :00"))
	rec := &recordingObserver{}
	f.pass.Observers = []Observer{rec.observer()}
	f.run(at(0))
	f.store.add(t, Run{Job: "stale", Trigger: TriggerManual, Attempt: 1, Status: StatusRunning,
		Owner: "t1", Runner: "host-b:7", StartedAt: at(0), HeartbeatAt: at(0)})
	f.run(at(h))
	events := rec.seen()
	r, retry := indexOf(t, events, "reclaimed stale "+CodeOrphaned), indexOf(t, events, "queued stale backup retry")
	q := indexOf(t, events, "queued hourly backup schedule")
	s, e := indexOf(t, events, "started hourly"), indexOf(t, events, "finished hourly succeeded")
	if !(r < retry && retry < q && q < s && s < e) {
		t.Errorf("events out of the pass's order: %q", events)
	}
}

// logRecorder is a slog handler that writes down each message and closes
// the channel of a message waited for (logged) when it is first logged.
type logRecorder struct {
	mu       sync.Mutex
	messages []string
	errors   []string                 // the messages logged at level error
	waiting  map[string]chan struct{} // by message, until it is logged
}

func newLogRecorder() *logRecorder {
	return &logRecorder{waiting: map[string]chan struct{}{}}
}

// logged returns a channel closed when message is next logged.
func (l *logRecorder) logged(message string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := make(chan struct{})
	l.waiting[message] = c
	return c
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.messages = append(l.messages, r.Message)
	if r.Level >= slog.LevelError {
		l.errors = append(l.errors, r.Message)
	}
	if c, ok := l.waiting[r.Message]; ok {
		close(c)
		delete(l.waiting, r.Message)
	}
	return nil
}

// count returns how many times message was logged.
func (l *logRecorder) count(message string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.messages {
		if m == message {
			n++
		}
	}
	return n
}

// oneEndPerStart fails the test unless every started run in events has
// exactly one finished or lost event, after it.
func oneEndPerStart(t *testing.T, events []string) {
	t.Helper()
	ends := map[string]int{}
	for i, e := range events {
		job, ok := strings.CutPrefix(e, "started ")
		if !ok {
			continue
		}
		for _, later := range events[i+1:] {
			if strings.HasPrefix(later, "finished "+job+" ") || strings.HasPrefix(later, "lost "+job+": ") {
				ends[job]++
			}
		}
		if ends[job] != 1 {
			t.Errorf("run of %s started with %d finished or lost events after it, want 1: %q", job, ends[job], events)
		}
	}
}

// A run's result queues the next run only for a job still in the
// configuration: for a job removed while its run executes, the store
// queues nothing, and the pass neither tells the observers of a queued run
// nor lists one in the summary, and logs that none was queued.
func TestObserversHearOnlyRunsThatWereQueued(t *testing.T) {
	cases := []struct {
		name       string
		removed    bool
		wantEvents []string
	}{
		{"a kept job's retry is queued and told", false,
			[]string{"started daten", "finished daten failed", "queued daten backup retry"}},
		{"a removed job gets no retry, and none is told", true,
			[]string{"started daten", "finished daten failed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, manual(t, "daten"))
			rec := &recordingObserver{}
			f.pass.Observers = []Observer{rec.observer()}
			logs := newLogRecorder()
			f.pass.Logger = slog.New(logs)
			f.run(at(0))
			f.exec.do = func(context.Context, JobDef, Run) (Result, error) {
				if c.removed {
					f.store.remove("daten") // serve reloaded a configuration without it
				}
				return Result{}, &ClassError{Class: ClassNetwork, Code: "NET", Err: errors.New("link down")}
			}
			first := f.queued("daten", "normal", at(h))
			sum := f.run(at(h))

			if got := rec.seen(); !slices.Equal(got, c.wantEvents) {
				t.Errorf("events %q, want %q", got, c.wantEvents)
			}
			wantRun(t, f.store.get(first.ID), StatusFailed, ClassNetwork, "NET")
			wantQueued := 1
			if c.removed {
				wantQueued = 0
			}
			if n := len(f.store.runsOf("daten")) - 1; n != wantQueued {
				t.Errorf("%d runs queued with the result, want %d", n, wantQueued)
			}
			if len(sum.Requeued) != wantQueued {
				t.Errorf("summary requeued %+v, want %d runs", sum.Requeued, wantQueued)
			}
			for _, r := range sum.Requeued {
				if r.ID == 0 {
					t.Errorf("summary lists a requeued run that was never queued: %+v", r)
				}
			}
			if n := logs.count("run queued again"); n != wantQueued {
				t.Errorf("%q logged %d times, want %d", "run queued again", n, wantQueued)
			}
			if n := logs.count("run not queued again: its job was removed from the configuration"); n != 1-wantQueued {
				t.Errorf("the job's removal was logged %d times, want %d", n, 1-wantQueued)
			}
		})
	}
}

// A run whose result cannot be written is reported lost, with a reason
// saying so, once: the observers hear Started then Lost, never Finished.
func TestObserversHearRunsWhoseResultCouldNotBeWritten(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	rec := &recordingObserver{}
	f.pass.Observers = []Observer{rec.observer()}
	f.run(at(0))
	f.store.mu.Lock()
	f.store.finishErr = errors.New("disk I/O error")
	f.store.mu.Unlock()
	first := f.queued("daten", "normal", at(h))
	f.clock.Set(at(h))
	sum, err := f.pass.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "disk I/O error") {
		t.Errorf("pass error %v, want the store's", err)
	}
	want := []string{"started daten", "lost daten: " + LostNotRecorded}
	if got := rec.seen(); !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if len(sum.Finished) != 0 || len(sum.Warnings) != 1 {
		t.Errorf("summary: finished %d, warnings %q; want the failure to record as the one warning", len(sum.Finished), sum.Warnings)
	}
	if got := f.store.get(first.ID); got.Status != StatusRunning {
		t.Errorf("run is %s, want it left running for orphan reclaim", got.Status)
	}
}

// A run still executing when the pass stops waiting at shutdown is
// reported lost before Run returns; what it reports and records after that
// (it may still end while the process lives) reaches no observer.
func TestObserversHearNothingAfterRunReturns(t *testing.T) {
	const lateEnd = "run ended after the pass stopped waiting for it at shutdown: observers are not told"
	f := newFixture(t, manual(t, "stuck"), manual(t, "quick"))
	f.pass.ShutdownWait = time.Millisecond // how long does not matter: stuck runs until released
	rec := &recordingObserver{}
	f.pass.Observers = []Observer{rec.observer()}
	logs := newLogRecorder()
	lateEnded := logs.logged(lateEnd)
	f.pass.Logger = slog.New(logs)
	f.run(at(0))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	var stuckDone sync.WaitGroup
	stuckDone.Add(1)
	f.pass.Executor = funcExecutor(func(runCtx context.Context, job JobDef, run Run, progress func(Progress)) (Result, error) {
		if job.Name == "quick" {
			return Result{}, nil
		}
		defer stuckDone.Done()
		progress(Progress{Current: "source /a", Figures: Figures{Files: 1}})
		cancel()  // SIGTERM
		<-release // ignores its context
		progress(Progress{Current: "too late"})
		return Result{}, &ClassError{Class: ClassTransient, Err: runCtx.Err()}
	})
	stuck := f.queued("stuck", "normal", at(h))
	f.queued("quick", "normal", at(h))
	f.clock.Set(at(h))
	sum, err := f.pass.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	atReturn := rec.seen()
	indexOf(t, atReturn, "progress stuck source /a files=1")
	if s, l := indexOf(t, atReturn, "started stuck"), indexOf(t, atReturn, "lost stuck: "+LostAbandoned); s > l {
		t.Errorf("stuck's events out of order: %q", atReturn)
	}
	oneEndPerStart(t, atReturn)
	if len(sum.Abandoned) != 1 || sum.Abandoned[0].ID != stuck.ID {
		t.Errorf("summary abandoned %+v, want run %d", sum.Abandoned, stuck.ID)
	}

	close(release)
	stuckDone.Wait()
	<-lateEnded // stuck's end was recorded and not passed on
	if got := rec.seen(); !slices.Equal(got, atReturn) {
		t.Errorf("events reached the observers after Run returned: %q", got[len(atReturn):])
	}
	// The process lived on, so the result was written after all.
	wantRun(t, f.store.get(stuck.ID), StatusInterrupted, ClassCancelled, CodeInterrupted)
}

// runEvents passes on one Finished or Lost per run, and no Progress once
// the executor returned or the run ended; the pass's giving a run up at
// shutdown and the run's own end exclude each other.
func TestRunEventsTellOneEnd(t *testing.T) {
	cases := []struct {
		name        string
		steps       func(e *runEvents) bool // reports what abandon returned, if called
		wantAbandon bool
		want        []string
	}{
		{"an ended run is not abandoned", func(e *runEvents) bool {
			e.progress(Progress{Current: "/a"})
			e.executed()
			e.progress(Progress{Current: "late"})
			e.end(StatusSucceeded, func() { e.p.observeFinished(Run{Job: "j", Status: StatusSucceeded}) })
			return e.abandon()
		}, false, []string{"progress j /a files=0", "finished j succeeded"}},
		{"an abandoned run tells nothing more", func(e *runEvents) bool {
			e.progress(Progress{Current: "/a"})
			abandoned := e.abandon()
			e.progress(Progress{Current: "late"})
			e.executed()
			e.end(StatusSucceeded, func() { e.p.observeFinished(Run{Job: "j", Status: StatusSucceeded}) })
			return abandoned
		}, true, []string{"progress j /a files=0", "lost j: " + LostAbandoned}},
		{"a lost run is not abandoned", func(e *runEvents) bool {
			e.executed()
			e.end("lost", func() { e.p.observeLost(LostRun{Run: Run{Job: "j"}, Reason: LostReclaimed}) })
			return e.abandon()
		}, false, []string{"lost j: " + LostReclaimed}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recordingObserver{}
			p := &Pass{Observers: []Observer{rec.observer()}}
			e := &runEvents{p: p, run: Run{Job: "j"}, executing: true}
			if got := c.steps(e); got != c.wantAbandon {
				t.Errorf("abandon returned %v, want %v", got, c.wantAbandon)
			}
			if got := rec.seen(); !slices.Equal(got, c.want) {
				t.Errorf("events %q, want %q", got, c.want)
			}
		})
	}
}

// errorsLogged returns the messages logged at level error.
func (l *logRecorder) errorsLogged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errors)
}

// A run the pass gives up is logged once, as an error, whichever way it
// was lost, and told to the observers once.
func TestLostRunsAreLoggedOnce(t *testing.T) {
	cases := []struct {
		name   string
		setUp  func(t *testing.T, f *fixture)
		reason string
	}{
		{"taken away while running", func(t *testing.T, f *fixture) {
			f.exec.do = func(ctx context.Context, _ JobDef, run Run) (Result, error) {
				f.store.reclaimNow(run.ID, at(2*h))
				waitDone(t, ctx)
				return Result{}, nil
			}
		}, LostReclaimed},
		{"heartbeats not recorded", func(t *testing.T, f *fixture) {
			f.pass.Heartbeat, f.pass.StaleAfter = 5*time.Millisecond, 60*time.Millisecond
			f.store.mu.Lock()
			f.store.beatErr = errors.New("database is locked")
			f.store.onBeat = func() { f.clock.Add(f.pass.Heartbeat) }
			f.store.mu.Unlock()
			f.exec.do = func(ctx context.Context, _ JobDef, _ Run) (Result, error) {
				waitDone(t, ctx)
				return Result{}, nil
			}
		}, LostNoHeartbeat},
		{"taken away before its result was written", func(t *testing.T, f *fixture) {
			f.pass.Heartbeat, f.pass.StaleAfter = time.Hour, 3*time.Hour // no heartbeat sees it
			f.exec.do = func(_ context.Context, _ JobDef, run Run) (Result, error) {
				f.store.reclaimNow(run.ID, at(2*h))
				return Result{}, nil
			}
		}, LostBeforeRecorded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, manual(t, "daten"))
			f.run(at(0))
			rec := &recordingObserver{}
			f.pass.Observers = []Observer{rec.observer()}
			logs := newLogRecorder()
			f.pass.Logger = slog.New(logs)
			c.setUp(t, f)
			f.queued("daten", "normal", at(h))
			sum := f.run(at(h))
			if len(sum.Lost) != 1 || sum.Lost[0].Reason != c.reason {
				t.Errorf("summary lost %+v, want the run with reason %q", sum.Lost, c.reason)
			}
			if got := logs.errorsLogged(); len(got) != 1 {
				t.Errorf("the lost run was logged %d times as an error, want once: %q", len(got), got)
			}
			want := []string{"started daten", "lost daten: " + c.reason}
			if got := rec.seen(); !slices.Equal(got, want) {
				t.Errorf("events %q, want %q", got, want)
			}
		})
	}
}
