package pass

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
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
	if !slices.Equal(events, second.seen()) {
		t.Errorf("two observers heard different events:\n%q\n%q", events, second.seen())
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
