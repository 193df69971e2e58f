package pass

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func withVerify(d *JobDef) { d.Verify = VerifyDef{Enabled: true} }

// failKind makes runs of one kind fail with class and code; others succeed.
func failKind(kind, class, code string) func(context.Context, JobDef, Run) (Result, error) {
	return func(_ context.Context, _ JobDef, r Run) (Result, error) {
		if r.Kind == kind {
			return Result{}, &ClassError{Class: class, Code: code, Err: errors.New(kind + " failed")}
		}
		return Result{}, nil
	}
}

// A succeeded backup queues a verify run of the job with its result, and
// the verify run, once it has a verdict (succeeded, or failed with class
// integrity: the snapshot is marked), queues the job's retention; each in
// the same Finish, so that the job never has two active runs. A failed
// backup queues nothing; a verify that could not run (busy) is retried and
// queues no retention yet; verify off goes straight to retention.
func TestVerifyChainAfterBackup(t *testing.T) {
	type step struct {
		kind   string // the run the pass executes
		status string // how it ends
	}
	cases := []struct {
		name      string
		opts      []func(*JobDef)
		do        func(context.Context, JobDef, Run) (Result, error)
		chain     []step // the runs of the job, in order, as the passes run them
		lastQueue string // the kind still queued at the end; "": none
	}{
		{name: "backup, verify, retention", opts: []func(*JobDef){withVerify, withRetention},
			chain: []step{{KindBackup, StatusSucceeded}, {KindVerify, StatusSucceeded}, {KindRetention, StatusSucceeded}}},
		{name: "failed backup queues nothing", opts: []func(*JobDef){withVerify, withRetention},
			do:    failKind(KindBackup, ClassAuth, "WRONG_PASSWORD"),
			chain: []step{{KindBackup, StatusFailed}}},
		{name: "failed verification still queues retention", opts: []func(*JobDef){withVerify, withRetention},
			do:    failKind(KindVerify, ClassIntegrity, "VERIFY_FAILED"),
			chain: []step{{KindBackup, StatusSucceeded}, {KindVerify, StatusFailed}, {KindRetention, StatusSucceeded}}},
		{name: "a verify that could not run is retried, not followed by retention", opts: []func(*JobDef){withVerify, withRetention},
			do:        failKind(KindVerify, ClassBusy, "REPOSITORY_BUSY"),
			chain:     []step{{KindBackup, StatusSucceeded}, {KindVerify, StatusFailed}},
			lastQueue: KindVerify},
		{name: "a verify that failed without a verdict (damaged index) is not followed by retention", opts: []func(*JobDef){withVerify, withRetention},
			do:    failKind(KindVerify, ClassIntegrity, "INTEGRITY"),
			chain: []step{{KindBackup, StatusSucceeded}, {KindVerify, StatusFailed}}},
		{name: "verify without retention", opts: []func(*JobDef){withVerify},
			chain: []step{{KindBackup, StatusSucceeded}, {KindVerify, StatusSucceeded}}},
		{name: "verify off goes straight to retention", opts: []func(*JobDef){withRetention},
			chain: []step{{KindBackup, StatusSucceeded}, {KindRetention, StatusSucceeded}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, manual(t, "j", tc.opts...))
			f.run(at(0))
			f.exec.do = tc.do
			obs := &recordingObserver{}
			f.pass.Observers = []Observer{obs.observer()}
			backup := f.store.add(t, Run{Job: "j", Kind: KindBackup, Trigger: TriggerManual, Attempt: 1, Priority: "normal",
				ScheduledAt: at(h), NotBefore: at(h), QueuedAt: at(h)})
			for i := range tc.chain {
				f.run(at(h + time.Duration(i)*10*time.Minute))
			}
			runs := f.store.runsOf("j")
			var ended []Run
			var queued []Run
			for _, r := range runs {
				if r.Status == StatusQueued {
					queued = append(queued, r)
				} else {
					ended = append(ended, r)
				}
			}
			if len(ended) != len(tc.chain) || ended[0].ID != backup.ID {
				t.Fatalf("runs %+v, want the chain %+v", runs, tc.chain)
			}
			for i, want := range tc.chain {
				got := ended[i]
				if got.Kind != want.kind || got.Status != want.status {
					t.Errorf("run %d is %s %s (%s), want %s %s", i+1, got.Kind, got.Status, got.Message, want.kind, want.status)
				}
				if i > 0 && (got.Trigger != TriggerSchedule || got.Attempt != 1) {
					t.Errorf("run %d %+v: want trigger schedule, attempt 1", i+1, got)
				}
			}
			switch {
			case tc.lastQueue == "" && len(queued) != 0:
				t.Errorf("runs still queued %+v, want none: the chain ends", queued)
			case tc.lastQueue != "" && (len(queued) != 1 || queued[0].Kind != tc.lastQueue || queued[0].Trigger != TriggerRetry):
				t.Errorf("runs still queued %+v, want a retry of kind %s", queued, tc.lastQueue)
			}
			// Each follow-up was heard queued after the run it follows
			// finished, with a reason naming that run.
			events := eventsOf(obs.seen(), "j")
			for i := 1; i < len(tc.chain); i++ {
				prev, next := tc.chain[i-1], tc.chain[i]
				if indexOf(t, events, "finished j "+prev.status) > indexOf(t, events, "queued j "+next.kind+" schedule") {
					t.Errorf("events %q: %s was heard queued before the %s finished", events, next.kind, prev.kind)
				}
			}
		})
	}
}

// The follow-up run's held reason names the run it follows, so that runs
// show and job explain tell why it waits.
func TestVerifyRunNamesTheBackupItFollows(t *testing.T) {
	f := newFixture(t, manual(t, "j", withVerify, withRetention))
	f.run(at(0))
	backup := f.store.add(t, Run{Job: "j", Kind: KindBackup, Trigger: TriggerManual, Attempt: 1, Priority: "normal",
		ScheduledAt: at(h), NotBefore: at(h), QueuedAt: at(h)})
	f.exec.do = failKind(KindVerify, ClassIntegrity, "VERIFY_FAILED")
	sum := f.run(at(h))
	if len(sum.Requeued) != 1 || sum.Requeued[0].Kind != KindVerify ||
		!strings.Contains(sum.Requeued[0].HeldReason, "verify after backup run "+strconv.FormatInt(backup.ID, 10)) {
		t.Fatalf("the backup's pass queued %+v, want a verify run naming backup run %d", sum.Requeued, backup.ID)
	}
	verify := sum.Requeued[0]
	sum = f.run(at(2 * h))
	if len(sum.Requeued) != 1 || sum.Requeued[0].Kind != KindRetention ||
		!strings.Contains(sum.Requeued[0].HeldReason, "retention after verify run "+strconv.FormatInt(verify.ID, 10)) {
		t.Fatalf("the verify's pass queued %+v, want a retention run naming verify run %d", sum.Requeued, verify.ID)
	}
	if got := f.store.get(verify.ID); got.ErrorClass != ClassIntegrity || got.ErrorCode != "VERIFY_FAILED" {
		t.Errorf("verify run recorded %+v, want class integrity, code VERIFY_FAILED", got)
	}
}
