package pass

import (
	"errors"
	"testing"
	"time"
)

// Judge is what the pass records: for every executor outcome, the
// verdict an executor computes with Judge is the status, class, code and
// message of the run the pass records.
func TestJudgeAgreesWithTheRecordedRun(t *testing.T) {
	skippedOne := Result{Figures: Figures{FilesSkipped: 1, Skipped: []Skipped{{Object: "hook after", Reason: "exit status 1"}}}}
	cases := []struct {
		name string
		res  Result
		err  error
		want Verdict
	}{
		{"success", Result{}, nil, Verdict{Status: StatusSucceeded}},
		{"skipped objects", skippedOne, nil,
			Verdict{Status: StatusPartialFailure, Code: CodeObjectsSkipped, Message: "1 object skipped: hook after: exit status 1"}},
		{"a classed error", Result{}, &ClassError{Class: ClassSource, Code: "HOOK_FAILED", Err: errors.New("before hook failed")},
			Verdict{Status: StatusFailed, Class: ClassSource, Code: "HOOK_FAILED", Message: "before hook failed"}},
		{"an error with skipped objects", skippedOne, &ClassError{Class: ClassRepository, Code: "IO_ERROR", Err: errors.New("disk gone")},
			Verdict{Status: StatusFailed, Class: ClassRepository, Code: "IO_ERROR", Message: "disk gone; 1 object skipped: hook after: exit status 1"}},
		{"an error without a class", Result{}, errors.New("boom"), Verdict{Status: StatusFailed, Class: ClassUnknown, Message: "boom"}},
		{"the class cancelled", Result{}, &ClassError{Class: ClassCancelled, Code: CodeCancelled, Err: errors.New("stopped")},
			Verdict{Status: StatusCancelled, Class: ClassCancelled, Code: CodeCancelled, Message: "stopped"}},
	}
	p := &Pass{Now: func() time.Time { return time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) }}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Judge(c.res, c.err)
			if got != c.want {
				t.Errorf("Judge = %+v, want %+v", got, c.want)
			}
			r, _ := p.result(Run{ID: 1, Job: "a", Kind: KindBackup}, c.res, c.err, false, false)
			if recorded := (Verdict{Status: r.Status, Class: r.ErrorClass, Code: r.ErrorCode, Message: r.Message}); recorded != got {
				t.Errorf("the pass records %+v, Judge says %+v", recorded, got)
			}
		})
	}
}
