package notify

import (
	"strings"
	"testing"
)

// A summary is one line however the run's message runs: its lines are
// folded (a hook's output included) and a long one is cut.
func TestSummaryIsOneLine(t *testing.T) {
	base := Document{Host: "db1", Kind: "backup", RunID: 12, Job: "db", Attempt: 1, Event: EventFailed, ErrorClass: "source", ErrorCode: "HOOK_FAILED"}
	tests := []struct {
		name, message, want string
	}{
		{"lines fold", "before hook failed:\n  pg_dump: connection refused\n",
			"nightjar on db1: backup run 12 of job db (attempt 1) failed [source/HOOK_FAILED]: before hook failed: pg_dump: connection refused"},
		{"a long message is cut", strings.Repeat("x", 2*maxSummaryMessage),
			"nightjar on db1: backup run 12 of job db (attempt 1) failed [source/HOOK_FAILED]: " + strings.Repeat("x", maxSummaryMessage) + "..."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := base
			d.Message = tc.message
			if got := d.summary(); got != tc.want {
				t.Errorf("summary = %q, want %q", got, tc.want)
			}
		})
	}
}
