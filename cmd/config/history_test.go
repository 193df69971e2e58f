package config

import (
	"strings"
	"testing"
	"time"
)

func TestHistoryKeys(t *testing.T) {
	for _, tc := range []struct {
		name      string
		scheduler string
		runs      time.Duration
		audit     time.Duration
		problem   string // a substring of the one problem; "": none
	}{
		{name: "defaults", runs: DefaultKeepRuns, audit: DefaultKeepAudit},
		{name: "durations", scheduler: "keep_runs = \"30d\"\nkeep_audit = \"2w\"", runs: 30 * 24 * time.Hour, audit: 14 * 24 * time.Hour},
		{name: "forever", scheduler: "keep_runs = \"forever\"\nkeep_audit = \"forever\"", runs: 0, audit: 0},
		{name: "minutes are refused", scheduler: "keep_runs = \"3m\"", problem: "scheduler.keep_runs: \"3m\" is not allowed: want a duration of at least 1d"},
		{name: "zero is refused", scheduler: "keep_audit = \"0\"", problem: "scheduler.keep_audit: \"0\" is not allowed"},
		{name: "nonsense is refused", scheduler: "keep_runs = \"always\"", problem: "or \"forever\" to keep everything"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("/etc/nightjar/config.toml", "[scheduler]\n"+tc.scheduler+"\n"+goodRepo, testNow)
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("error %v, want one naming %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.History.KeepRuns != tc.runs || cfg.History.KeepAudit != tc.audit {
				t.Errorf("history %+v, want runs %s, audit %s", cfg.History, tc.runs, tc.audit)
			}
		})
	}
}
