package cmd

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
)

// A purge that cannot be done is an error for the caller to warn about,
// naming what was not purged; "forever" asks the database nothing.
func TestPurgeHistory(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	state, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	if err := purgeHistory(ctx, state, config.History{KeepRuns: config.DefaultKeepRuns, KeepAudit: config.DefaultKeepAudit}, now, log); err != nil {
		t.Fatalf("purge of an empty history: %v", err)
	}
	if logged.Len() != 0 {
		t.Errorf("a purge that deleted nothing logged:\n%s", logged.String())
	}
	// A host gone for longer than keep_runs leaves a heartbeat that goes;
	// the newest tick pass stays.
	for _, b := range []db.PassBeat{
		{Host: "gone", Mode: db.PassTick, PID: 1, Version: "1", At: now.Add(-config.DefaultKeepRuns - time.Hour)},
		{Host: "here", Mode: db.PassTick, PID: 2, Version: "1", At: now},
	} {
		if err := state.RecordPass(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := purgeHistory(ctx, state, config.History{KeepRuns: config.DefaultKeepRuns}, now, log); err != nil {
		t.Fatalf("purge of an old heartbeat: %v", err)
	}
	if facts, err := state.StatusFacts(ctx); err != nil || len(facts.Passes) != 1 || facts.Passes[0].Host != "here" {
		t.Errorf("passes after the purge %+v, %v; want here's only", facts.Passes, err)
	}
	if !strings.Contains(logged.String(), "passes=1") {
		t.Errorf("the purge of a heartbeat was not logged:\n%s", logged.String())
	}
	state.Close()
	for _, tc := range []struct {
		name    string
		history config.History
		want    string // "": no error
	}{
		{"runs", config.History{KeepRuns: config.DefaultKeepRuns}, "old runs not purged (keep_runs 90d)"},
		{"audit", config.History{KeepAudit: config.DefaultKeepAudit}, "old audit rows not purged (keep_audit 400d)"},
		{"forever", config.History{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := purgeHistory(ctx, state, tc.history, now, log)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("keeping everything touched the database: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one with %q", err, tc.want)
			}
		})
	}
}

// A usage error lists at most ten allowed names, then "…".
func TestNamesSaid(t *testing.T) {
	many := func(n int) []string {
		var names []string
		for i := range n {
			names = append(names, fmt.Sprintf("j%02d", i))
		}
		return names
	}
	for _, tc := range []struct {
		name  string
		names []string
		want  string
	}{
		{"none", nil, "none"},
		{"a few", []string{"a", "b"}, "a, b"},
		{"ten", many(10), "j00, j01, j02, j03, j04, j05, j06, j07, j08, j09"},
		{"more than ten", many(25), "j00, j01, j02, j03, j04, j05, j06, j07, j08, j09, …"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := namesSaid(tc.names); got != tc.want {
				t.Errorf("namesSaid = %q, want %q", got, tc.want)
			}
		})
	}
}
