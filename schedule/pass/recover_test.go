package pass

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// snapshotFinder is the recorder that also finds the snapshots a run wrote,
// as jobs.Executor finds them in the repository.
type snapshotFinder struct {
	*recorder
	mu      sync.Mutex
	written map[int64]Result // by run: what the executor wrote into the "repository"
	partial map[int64]bool   // runs that did not get to their last source
}

func (s *snapshotFinder) RunSnapshots(_ context.Context, _ JobDef, run Run) (Result, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.written[run.ID]
	if s.partial[run.ID] {
		res.Snapshots = res.Snapshots[:1]
	}
	return res, ok && !s.partial[run.ID], nil
}

// When a run's result cannot be recorded (the state database's disk is
// full), its snapshot is still in the repository: the next pass after its
// lease ran out records the run as succeeded with that snapshot, and
// queues no retry, but the verify that follows a succeeded backup. A run
// that did not write every source's snapshot is ended ORPHANED and retried
// as before, with the snapshots it did write in its record.
func TestOrphanedRunIsRecordedFromItsSnapshots(t *testing.T) {
	f := newFixture(t, manual(t, "daten", func(d *JobDef) { d.Verify.Enabled = true }), manual(t, "halb"))
	finder := &snapshotFinder{recorder: f.exec, written: map[int64]Result{}, partial: map[int64]bool{}}
	f.pass.Executor = finder
	f.exec.do = func(_ context.Context, _ JobDef, run Run) (Result, error) {
		res := Result{Figures: Figures{Files: 3, BytesRead: 300}, Snapshots: []SnapshotRef{
			{RepositoryID: "repo", SnapshotID: "snap-" + run.Job, Source: "/" + run.Job},
			{RepositoryID: "repo", SnapshotID: "snap2-" + run.Job, Source: "/2" + run.Job}}}
		finder.mu.Lock()
		finder.written[run.ID] = res
		finder.partial[run.ID] = run.Job == "halb"
		finder.mu.Unlock()
		return res, nil
	}
	f.run(at(0))
	f.store.mu.Lock()
	f.store.finishErr = errors.New("database or disk is full")
	f.store.mu.Unlock()
	daten := f.queued("daten", "normal", at(h))
	halb := f.queued("halb", "normal", at(h))
	f.clock.Set(at(h))
	if _, err := f.pass.Run(context.Background()); err == nil {
		t.Fatal("the pass that could not record its results reports no error")
	}
	for _, id := range []int64{daten.ID, halb.ID} {
		if got := f.store.get(id); got.Status != StatusRunning {
			t.Fatalf("run %d is %s after its result could not be recorded, want running", id, got.Status)
		}
	}
	f.store.mu.Lock()
	f.store.finishErr = nil
	f.store.mu.Unlock()

	// Within the lease nothing is taken.
	sum := f.run(at(h + 2*time.Minute))
	if len(sum.Finished)+len(sum.Reclaimed) != 0 {
		t.Fatalf("within the lease: finished %+v, reclaimed %+v; want nothing", sum.Finished, sum.Reclaimed)
	}
	sum = f.run(at(h + f.pass.StaleAfter + time.Minute))
	got := f.store.get(daten.ID)
	if got.Status != StatusSucceeded || len(got.Snapshots) != 2 || got.Snapshots[0].SnapshotID != "snap-daten" ||
		got.Figures.Files != 3 || got.Message != recordedLater {
		t.Errorf("run of daten after the next pass: %+v, want succeeded with its snapshot and figures, recorded later", got)
	}
	if len(sum.Finished) < 2 || sum.Finished[0].ID != daten.ID || sum.Finished[1].ID != halb.ID {
		t.Errorf("pass finished %+v, want daten's and halb's runs first", sum.Finished)
	}
	if runs := f.store.runsOf("daten"); len(runs) != 2 || runs[1].Kind != KindVerify || runs[1].Trigger == TriggerRetry {
		t.Errorf("daten's runs %+v, want the recorded run and the verify that follows it: a recorded run is not retried", runs)
	}
	if got := f.store.get(halb.ID); got.Status != StatusFailed || got.ErrorCode != CodeOrphaned ||
		len(got.Snapshots) != 1 || got.Snapshots[0].SnapshotID != "snap-halb" {
		t.Errorf("run of halb, with a source missing its snapshot: %s %s with snapshots %+v, want failed ORPHANED with the one it wrote",
			got.Status, got.ErrorCode, got.Snapshots)
	}
	if runs := f.store.runsOf("halb"); len(runs) != 2 || runs[1].Trigger != TriggerRetry {
		t.Errorf("halb's runs %+v, want the orphaned run and its retry", runs)
	}
}

// A run admitted by another runner with a 10-minute lease (its
// stale_after) is not reclaimed by a pass whose stale_after is 1 minute (a
// config reload lowered it), nor by one whose clock stepped ahead within
// the lease; once the lease ran out it is.
func TestReclaimHonoursTheOwnersLeaseNotTheReclaimersStaleAfter(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.run(at(0))
	run := f.queued("daten", "normal", at(h))
	if _, err := f.store.Admit(context.Background(), at(h), func(st AdmitState) []Admission {
		return []Admission{{RunID: run.ID, Admit: true, Owner: "other", Runner: "other-host:7", Lease: 10 * time.Minute}}
	}); err != nil {
		t.Fatal(err)
	}
	f.pass.StaleAfter = time.Minute
	for _, now := range []time.Time{at(h + 3*time.Minute), at(h + 9*time.Minute)} {
		f.clock.Set(now)
		if f.pass.Orphaned(f.store.get(run.ID)) {
			t.Errorf("at %s the live run is called orphaned", now.Sub(at(h)))
		}
		if sum := f.run(now); len(sum.Reclaimed) != 0 {
			t.Fatalf("a pass with stale_after 1m reclaimed a run whose lease runs 10m, at %s", now.Sub(at(h)))
		}
	}
	if sum := f.run(at(h + 10*time.Minute + time.Second)); len(sum.Reclaimed) != 1 || sum.Reclaimed[0].ID != run.ID {
		t.Fatalf("after the lease ran out: reclaimed %+v, want run %d", sum.Reclaimed, run.ID)
	}
}

// hangingFinder is a finder whose repository never answers: each lookup
// ends only when its context does.
type hangingFinder struct {
	*recorder
	mu      sync.Mutex
	lookups int
}

func (h *hangingFinder) RunSnapshots(ctx context.Context, _ JobDef, _ Run) (Result, bool, error) {
	h.mu.Lock()
	h.lookups++
	h.mu.Unlock()
	<-ctx.Done()
	return Result{}, false, ctx.Err()
}

// A repository that does not answer holds up the pass only for the lookup
// timeout, once per repository: the orphans are reclaimed, and the other
// jobs are admitted.
func TestOrphanLookupIsBoundedOncePerRepository(t *testing.T) {
	f := newFixture(t, manual(t, "a"), manual(t, "b"), manual(t, "c"))
	finder := &hangingFinder{recorder: f.exec}
	f.pass.LookupTimeout = time.Millisecond
	f.run(at(0))
	a, b := f.queued("a", "normal", at(h)), f.queued("b", "normal", at(h))
	if _, err := f.store.Admit(context.Background(), at(h), func(AdmitState) []Admission {
		return []Admission{{RunID: a.ID, Admit: true, Owner: "other", Runner: "other-host:7", Lease: time.Minute},
			{RunID: b.ID, Admit: true, Owner: "other", Runner: "other-host:7", Lease: time.Minute}}
	}); err != nil {
		t.Fatal(err)
	}
	f.pass.Executor = finder
	c := f.queued("c", "normal", at(h+2*time.Minute))
	sum := f.run(at(h + 2*time.Minute))
	if len(sum.Reclaimed) != 2 {
		t.Errorf("reclaimed %+v, want the two orphans", sum.Reclaimed)
	}
	if len(sum.Started) != 1 || sum.Started[0].ID != c.ID {
		t.Errorf("started %+v, want run %d of c", sum.Started, c.ID)
	}
	if finder.lookups != 1 {
		t.Errorf("%d lookups into the one repository that does not answer, want 1", finder.lookups)
	}
	if len(sum.Warnings) == 0 {
		t.Error("no warning that the snapshots could not be looked for")
	}
}
