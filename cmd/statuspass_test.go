package cmd

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
)

// A probe that has nothing to record gives its claim back, so that the
// next pass probes at once rather than up to probe_every later.
func TestProbeDueReleasesAClaimThatRecordedNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	t.Setenv("NIGHTJAR_TEST_PW", "secret-password")
	text := fmt.Sprintf(`
[scheduler]
probe_every = "1h"

[repository.later]
path = %q
password_env = "NIGHTJAR_TEST_PW"
create_if_missing = true
`, filepath.Join(dir, "not-made-yet"))
	cfg, err := config.Parse(filepath.Join(dir, "config.toml"), text, now)
	if err != nil {
		t.Fatal(err)
	}
	state, err := db.Open(ctx, filepath.Join(dir, "state.db"), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	warn := func(format string, args ...any) { t.Errorf("warning: "+format, args...) }
	probeDue(ctx, cfg, state, func() time.Time { return now }, warn)
	if facts, err := state.StatusFacts(ctx); err != nil || len(facts.Probes) != 0 {
		t.Fatalf("probes of a repository not made yet = %+v, %v; want none", facts.Probes, err)
	}
	next := now.Add(time.Minute)
	claimed, err := state.ClaimProbe(ctx, "later", next, cfg.ProbeEvery)
	if err != nil {
		t.Fatal(err)
	}
	if !claimed {
		t.Errorf("the next pass (a minute later, probe_every 1h) could not claim the probe the first one skipped")
	}
}
