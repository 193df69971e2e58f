package pass

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/schedule"
)

func withRetention(d *JobDef) {
	d.Retention = RetentionDef{Enabled: true, Policy: schedule.RetentionPolicy{Last: 2}}
}

// A retention run is queued with the result of a succeeded backup run of a
// job whose retention is on, and after nothing else: a failed, partial or
// cancelled backup never starts retention, and a retention run starts no
// other.
func TestRetentionIsQueuedOnlyAfterASucceededBackup(t *testing.T) {
	cases := []struct {
		name          string
		retention     bool
		kind          string
		result        func(context.Context, JobDef, Run) (Result, error)
		wantStatus    string
		wantRetention bool
	}{
		{name: "succeeded backup", retention: true, kind: KindBackup, wantStatus: StatusSucceeded, wantRetention: true},
		{name: "succeeded backup of a job whose retention is off", retention: false, kind: KindBackup, wantStatus: StatusSucceeded},
		{name: "partial backup", retention: true, kind: KindBackup, wantStatus: StatusPartialFailure,
			result: func(context.Context, JobDef, Run) (Result, error) {
				return Result{Figures: Figures{FilesSkipped: 1, Skipped: []Skipped{{Object: "/x", Reason: "permission denied"}}}}, nil
			}},
		{name: "failed backup", retention: true, kind: KindBackup, wantStatus: StatusFailed,
			result: func(context.Context, JobDef, Run) (Result, error) {
				return Result{}, &ClassError{Class: ClassAuth, Code: "WRONG_PASSWORD", Err: errors.New("wrong password")}
			}},
		{name: "full disk", retention: true, kind: KindBackup, wantStatus: StatusFailed,
			result: func(context.Context, JobDef, Run) (Result, error) {
				return Result{}, &ClassError{Class: ClassRepository, Code: "NO_SPACE", Err: errors.New("no space left on device")}
			}},
		{name: "cancelled backup", retention: true, kind: KindBackup, wantStatus: StatusCancelled,
			result: func(context.Context, JobDef, Run) (Result, error) {
				return Result{}, &ClassError{Class: ClassCancelled, Code: CodeCancelled, Err: context.Canceled}
			}},
		{name: "succeeded retention run", retention: true, kind: KindRetention, wantStatus: StatusSucceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var opts []func(*JobDef)
			if tc.retention {
				opts = append(opts, withRetention)
			}
			f := newFixture(t, manual(t, "j", opts...))
			f.run(at(0))
			obs := &recordingObserver{}
			f.pass.Observers = []Observer{obs.observer()}
			f.exec.do = tc.result
			r := f.store.add(t, Run{Job: "j", Kind: tc.kind, Trigger: TriggerManual, Attempt: 1, Priority: "normal",
				ScheduledAt: at(h), NotBefore: at(h), QueuedAt: at(h)})
			f.run(at(h))
			if got := f.store.get(r.ID); got.Status != tc.wantStatus {
				t.Fatalf("run %d ended %s (%s), want %s", r.ID, got.Status, got.Message, tc.wantStatus)
			}
			var retention []Run
			for _, q := range f.store.runsOf("j") {
				if q.ID != r.ID && q.Kind == KindRetention {
					retention = append(retention, q)
				}
			}
			heard := slices.ContainsFunc(obs.seen(), func(e string) bool { return strings.HasPrefix(e, "queued j retention") })
			if !tc.wantRetention {
				if len(retention) != 0 || heard {
					t.Fatalf("retention runs %+v queued (observers heard it: %v), want none", retention, heard)
				}
				return
			}
			if len(retention) != 1 {
				t.Fatalf("retention runs %+v, want one", retention)
			}
			q := retention[0]
			if q.Status != StatusQueued || q.Trigger != TriggerSchedule || q.Attempt != 1 || !strings.Contains(q.HeldReason, "after backup run") {
				t.Errorf("retention run %+v: want queued, trigger schedule, attempt 1, a reason naming the backup run", q)
			}
			events := eventsOf(obs.seen(), "j")
			if indexOf(t, events, "finished j succeeded") > indexOf(t, events, "queued j retention schedule") {
				t.Errorf("events %q: the retention run was heard queued before the backup finished", events)
			}

			f.exec.do = nil
			f.run(at(2 * h))
			ran := f.exec.ran()
			if last := ran[len(ran)-1]; last.ID != q.ID || last.Kind != KindRetention {
				t.Errorf("the next pass executed %+v, want retention run %d", last, q.ID)
			}
			if got := f.store.get(q.ID); got.Status != StatusSucceeded {
				t.Errorf("retention run ended %s, want succeeded", got.Status)
			}
			if n := len(f.store.runsOf("j")); n != 2 {
				t.Errorf("job has %d runs, want 2: a retention run queues nothing after it", n)
			}
		})
	}
}
