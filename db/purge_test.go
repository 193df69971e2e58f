package db

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// history makes runs for purge tests: each ends at the fake clock's time,
// which then moves on by a day.
type history struct {
	t   *testing.T
	d   *DB
	clk *clock
}

// run queues a run of kind for job, starts it and ends it with status;
// it returns the run's ID.
func (h history) run(job, kind, status string) int64 {
	h.t.Helper()
	ctx := context.Background()
	r, err := h.d.QueueRun(ctx, job, pass.Run{Kind: kind}, admin)
	if err != nil {
		h.t.Fatal(err)
	}
	start(h.t, h.d, h.clk.Now(), "tok")
	end := pass.Run{ID: r.ID, Status: status,
		Snapshots: []pass.SnapshotRef{{RepositoryID: "repo1", SnapshotID: fmt.Sprintf("run-%d-src", r.ID), Source: "/src"}}}
	if status != pass.StatusSucceeded {
		end.ErrorClass = pass.ClassTransient
	}
	if ok, err := h.d.Finish(ctx, end, "tok", nil); !ok || err != nil {
		h.t.Fatalf("finish run %d: %v, %v", r.ID, ok, err)
	}
	h.clk.Add(24 * time.Hour)
	return r.ID
}

// cancelQueued queues a run for job and cancels it before it starts.
func (h history) cancelQueued(job string) int64 {
	h.t.Helper()
	r := queue(h.t, h.d, job)
	if _, err := h.d.CancelRun(context.Background(), r.ID, admin); err != nil {
		h.t.Fatal(err)
	}
	h.clk.Add(24 * time.Hour)
	return r.ID
}

// runIDs lists every run's ID, oldest first.
func runIDs(t *testing.T, d *DB) []int64 {
	t.Helper()
	runs, err := d.Runs(context.Background(), RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	slices.Reverse(ids)
	return ids
}

func TestPurgeRuns(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"), def(t, "b", "manual"))
	h := history{t, d, clk}

	oldFail := h.run("a", pass.KindBackup, pass.StatusFailed)          // day 0: an older failure
	lastGood := h.run("a", pass.KindBackup, pass.StatusSucceeded)      // day 1: a's newest succeeded backup
	newFail := h.run("a", pass.KindBackup, pass.StatusFailed)          // day 2: a's newest failed backup
	verify := h.run("a", pass.KindVerify, pass.StatusSucceeded)        // day 3: a's only verify
	oldB := h.run("b", pass.KindBackup, pass.StatusSucceeded)          // day 4
	startedCancel := h.run("b", pass.KindBackup, pass.StatusCancelled) // day 5: b's last run that started and ended
	newB := h.run("b", pass.KindBackup, pass.StatusSucceeded)          // day 6: b's newest succeeded backup
	unstarted := h.cancelQueued("b")                                   // day 7: cancelled before it started
	running := queue(t, d, "a")                                        // day 8: still running, old
	start(t, d, clk.Now(), "tok")
	_ = newB
	stateBefore, err := d.AdmitState(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Everything ended more than a year ago.
	clk.Add(400 * 24 * time.Hour)
	n, err := d.PurgeRuns(ctx, clk.Now().Add(-90*24*time.Hour), 500)
	if err != nil {
		t.Fatal(err)
	}
	// Only the older of a's failures and the older of b's succeeded
	// backups have a newer run of their job, kind and status.
	if want := []int64{oldFail, oldB}; n != len(want) {
		t.Errorf("purged %d runs, want %d (%v)", n, len(want), want)
	}
	want := []int64{lastGood, newFail, verify, startedCancel, newB, unstarted, running.ID}
	if got := runIDs(t, d); !slices.Equal(got, want) {
		t.Errorf("runs left %v, want %v", got, want)
	}
	if c := count(t, d, `SELECT count(*) FROM run_snapshots WHERE run_id IN (?, ?)`, oldFail, oldB); c != 0 {
		t.Errorf("%d snapshot references of purged runs are left", c)
	}
	if c := count(t, d, `SELECT count(*) FROM run_snapshots`); c != 5 {
		t.Errorf("%d snapshot references left, want the 5 of the runs kept", c)
	}
	stateAfter, err := d.AdmitState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(stateBefore.LastSucceeded, stateAfter.LastSucceeded) {
		t.Errorf("purge changed what dependencies read: LastSucceeded %v, was %v", stateAfter.LastSucceeded, stateBefore.LastSucceeded)
	}
	a := mustJob(t, d, "a")
	if a.LastRun == nil || a.LastRun.ID != verify || a.Active == nil || a.Active.ID != running.ID {
		t.Errorf("job a after purge: last %+v, active %+v", a.LastRun, a.Active)
	}
	// A second purge has nothing left to do.
	if n, err := d.PurgeRuns(ctx, clk.Now(), 500); err != nil || n != 0 {
		t.Errorf("second purge: %d, %v; want nothing purged", n, err)
	}
}

func TestPurgeRunsKeepsRecentRuns(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"))
	h := history{t, d, clk}
	var ids []int64
	for range 5 {
		ids = append(ids, h.run("a", pass.KindBackup, pass.StatusFailed)) // days 0 to 4
	}
	// Now is day 5; runs that ended before day 3 are old enough.
	n, err := d.PurgeRuns(ctx, t0.Add(3*24*time.Hour), 500)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("purged %d, want the 3 runs that ended before the cut", n)
	}
	if got := runIDs(t, d); !slices.Equal(got, ids[3:]) {
		t.Errorf("runs left %v, want %v", got, ids[3:])
	}
}

func TestPurgeRunsBatchBound(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"))
	h := history{t, d, clk}
	var ids []int64
	for range 7 {
		ids = append(ids, h.run("a", pass.KindBackup, pass.StatusSucceeded))
	}
	clk.Add(365 * 24 * time.Hour)
	for i, want := range []int{3, 3, 0} {
		n, err := d.PurgeRuns(ctx, clk.Now(), 3)
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("purge %d: %d runs, want %d", i+1, n, want)
		}
	}
	// The oldest went first; the newest stays.
	if got := runIDs(t, d); !slices.Equal(got, ids[6:]) {
		t.Errorf("runs left %v, want %v", got, ids[6:])
	}
	if _, err := d.PurgeRuns(ctx, clk.Now(), 0); err == nil {
		t.Error("a purge without a bound was accepted")
	}
}

// The run with the highest ID is never purged, so that SQLite never
// gives its ID to a new run: snapshot IDs carry run IDs.
func TestPurgeRunsNeverReusesIDs(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"))
	// The clock stepped back while the second run ran: it ended before
	// the first, so it is not the newest of its job, kind and status.
	var last int64
	for _, ended := range []time.Time{t0.Add(10 * 24 * time.Hour), t0.Add(24 * time.Hour)} {
		r := queue(t, d, "a")
		start(t, d, clk.Now(), "tok")
		if ok, err := d.Finish(ctx, pass.Run{ID: r.ID, Status: pass.StatusSucceeded, EndedAt: ended}, "tok", nil); !ok || err != nil {
			t.Fatalf("finish run %d: %v, %v", r.ID, ok, err)
		}
		last = r.ID
	}
	clk.Add(365 * 24 * time.Hour)
	if n, err := d.PurgeRuns(ctx, clk.Now(), 500); err != nil || n != 0 {
		t.Fatalf("purged %d, %v; want nothing: the older run is the newest by its end, the other has the highest ID", n, err)
	}
	if next := queue(t, d, "a"); next.ID <= last {
		t.Errorf("a new run got ID %d, not above the highest ever given (%d)", next.ID, last)
	}
}

func TestPurgeAudit(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	for i := range 6 {
		if err := d.RecordAudit(ctx, AuditEntry{Actor: admin, Action: AuditPause, Target: "a", Detail: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		clk.Add(24 * time.Hour)
	}
	// Rows written before day 4 may go, two at a time.
	cut := t0.Add(4 * 24 * time.Hour)
	for i, want := range []int{2, 2, 0} {
		n, err := d.PurgeAudit(ctx, cut, 2)
		if err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("purge %d: %d rows, want %d", i+1, n, want)
		}
	}
	var details []string
	for _, e := range audits(t, d) {
		details = append(details, e.Detail)
	}
	if want := []string{"4", "5"}; !slices.Equal(details, want) {
		t.Errorf("audit rows left %v, want %v", details, want)
	}
}

// PurgePasses deletes the heartbeats of hosts whose last pass began
// before the cutoff, but keeps the newest pass of each mode however old.
func TestPurgePasses(t *testing.T) {
	ctx := context.Background()
	d, _ := newDB(t)
	cutoff := t0.Add(30 * 24 * time.Hour)
	beats := []PassBeat{
		{Host: "old1", Mode: PassTick, PID: 1, Version: "1", At: t0},                      // purged
		{Host: "old2", Mode: PassTick, PID: 2, Version: "1", At: t0.Add(time.Hour)},       // purged
		{Host: "live", Mode: PassTick, PID: 3, Version: "1", At: cutoff.Add(time.Minute)}, // recent
		{Host: "old1", Mode: PassServe, PID: 4, Version: "1", At: t0},                     // purged
		{Host: "old3", Mode: PassServe, PID: 5, Version: "1", At: t0.Add(24 * time.Hour)}, // old, but the newest serve pass
		{Host: "edge", Mode: PassTick, PID: 6, Version: "1", At: cutoff},                  // not before the cutoff
	}
	for _, b := range beats {
		if err := d.RecordPass(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	n, err := d.PurgePasses(ctx, cutoff)
	if err != nil || n != 3 {
		t.Fatalf("purged %d passes, %v; want 3", n, err)
	}
	var left []string
	for _, b := range readStatusFacts(t, d).Passes {
		left = append(left, b.Host+"/"+b.Mode)
	}
	if want := []string{"live/tick", "edge/tick", "old3/serve"}; !slices.Equal(left, want) {
		t.Errorf("passes left %v, want %v", left, want)
	}
	if n, err := d.PurgePasses(ctx, cutoff.Add(100*24*time.Hour)); err != nil || n != 1 {
		t.Errorf("a later purge deleted %d, %v; want 1: edge/tick, the newest of each mode stays", n, err)
	}
}
