package cmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// serve's catalog sync skips a repository that is not the one recorded
// under its name (a replaced disk), and records why: its listing would
// mark every snapshot of the recorded one forgotten.
func TestCatalogSyncSkipsAReplacedRepository(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "repo")
	be, err := local.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t, be)
	t.Setenv("NJ_TEST_SYNC_PW", "pw")
	cfg := &config.Config{Repositories: map[string]config.Repository{
		"main": {Name: "main", Path: path, Password: config.PasswordSource{Env: "NJ_TEST_SYNC_PW"}},
	}}
	state, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	const recorded = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if _, err := state.SeeRepository(ctx, "main", recorded, true); err != nil {
		t.Fatal(err)
	}
	var lines []string
	syncAllCatalogs(ctx, cfg, state, func(line string, failed bool) {
		if !failed {
			t.Errorf("reported as a success: %s", line)
		}
		lines = append(lines, line)
	})
	want := "catalog of repository main not synced: the repository found has ID " + r.ID()[:8] + ", not the recorded 01234567: it was replaced (REPOSITORY_REPLACED)"
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("reported %q, want %q", lines, want)
	}
	st, err := state.CatalogStatus(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if !st.SyncedAt.IsZero() || !strings.Contains(st.Error, "it was replaced") {
		t.Errorf("catalog status %+v: want no sync and the reason recorded", st)
	}
}

func TestFindProgram(t *testing.T) {
	tests := []struct {
		line  string
		found bool
	}{
		{"sh -c 'echo pw'", true},
		{"/bin/sh -c true", true},
		{"VAULT_ADDR=https://vault:8200 exec sh -c true", true},
		{"nightjar-test-no-such-program --get offsite", false},
		{"/nonexistent/vault-get", false},
		{"TOKEN=x nightjar-test-no-such-program", false},
		{"exec nightjar-test-no-such-program", false},
		{"cd /etc && sh -c true", true}, // a builtin first: not judged
		{"'quoted program' arg", true},  // shell syntax: not judged
		{"$HOME/bin/vault-get", true},   // a variable: not judged
		{". /etc/profile; vault", true}, // a builtin first: not judged
		{"/etc/passwd", false},          // not executable
	}
	for _, tc := range tests {
		if err := findProgram(tc.line); (err == nil) != tc.found {
			t.Errorf("findProgram(%q) = %v, want found %v", tc.line, err, tc.found)
		}
	}
}
