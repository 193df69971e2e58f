package pass

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// Every log record about a run carries the run's ID and its job, so that
// an operator can follow one run through JSON logs: a pass that claims,
// holds, starts, ends, retries, reclaims and queues a follow-up run is
// logged as JSON, and each record is checked.
func TestEveryRunLogRecordNamesRunAndJob(t *testing.T) {
	f := newFixture(t, manual(t, "stale"), job(t, "good", "daily 02:00", withVerify),
		job(t, "flaky", "daily 02:00"), job(t, "waits", "daily 02:00"))
	f.pass.Limits = Limits{Global: 2}
	var out bytes.Buffer
	f.pass.Logger = slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.exec.do = func(_ context.Context, _ JobDef, run Run) (Result, error) {
		if run.Job == "flaky" {
			return Result{}, &ClassError{Class: ClassNetwork, Code: "NET", Err: errors.New("connection reset")}
		}
		return Result{Figures: Figures{Files: 1}}, nil
	}
	f.run(at(0))
	f.store.add(t, Run{Job: "stale", Trigger: TriggerManual, Attempt: 1, Status: StatusRunning,
		Owner: "t1", Runner: "host-b:7", StartedAt: at(0), HeartbeatAt: at(0)})
	f.run(at(2 * h))

	// The messages of run events that this scenario must produce.
	want := map[string]bool{
		"claimed due job":                 false,
		"run held":                        false,
		"run started":                     false,
		"run ended":                       false,
		"run queued again":                false,
		"run queued after the backup":     false,
		"reclaimed orphaned run":          false,
		"retry of a reclaimed run queued": false,
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, line)
		}
		msg, _ := rec["msg"].(string)
		if _, ok := want[msg]; ok {
			want[msg] = true
			if _, ok := rec["run"]; !ok {
				t.Errorf("a record of a run event has no run: %s", line)
			}
		}
		run, hasRun := rec["run"].(float64)
		job, _ := rec["job"].(string)
		if hasRun && (run <= 0 || job == "") {
			t.Errorf("a record with a run does not name its run and job: %s", line)
		}
	}
	for msg, seen := range want {
		if !seen {
			t.Errorf("the scenario logged no %q: it does not test that record\n%s", msg, out.String())
		}
	}
}
