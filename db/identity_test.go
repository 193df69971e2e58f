package db

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The first ID seen under a name is kept: a later, different one is
// returned as the recorded one and changes nothing, until forgotten.
func TestSeeRepository(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	if id, err := d.RecordedRepositoryID(ctx, "offsite"); err != nil || id != "" {
		t.Fatalf("nothing recorded yet: %q, %v", id, err)
	}
	if got, err := d.SeeRepository(ctx, "offsite", "aaaa", true); err != nil || got != "aaaa" {
		t.Fatalf("first sight = %q, %v; want aaaa", got, err)
	}
	clk.Add(time.Hour)
	if got, err := d.SeeRepository(ctx, "offsite", "aaaa", false); err != nil || got != "aaaa" {
		t.Fatalf("same again = %q, %v; want aaaa", got, err)
	}
	if got, err := d.SeeRepository(ctx, "offsite", "bbbb", true); err != nil || got != "aaaa" {
		t.Fatalf("another repository = %q, %v; want the recorded aaaa", got, err)
	}
	if id, err := d.RecordedRepositoryID(ctx, "offsite"); err != nil || id != "aaaa" {
		t.Fatalf("recorded = %q, %v; want aaaa", id, err)
	}
	// The second sight found it unencrypted; the replacement changed nothing.
	if names, err := d.UnencryptedRepositories(ctx); err != nil || !slices.Equal(names, []string{"offsite"}) {
		t.Fatalf("unencrypted = %q, %v; want offsite", names, err)
	}
	if forgot, err := d.ForgetRepositoryIdentity(ctx, "offsite"); err != nil || !forgot {
		t.Fatalf("forget = %v, %v", forgot, err)
	}
	if forgot, err := d.ForgetRepositoryIdentity(ctx, "offsite"); err != nil || forgot {
		t.Fatalf("forget again = %v, %v; want nothing to forget", forgot, err)
	}
	if got, err := d.SeeRepository(ctx, "offsite", "bbbb", true); err != nil || got != "bbbb" {
		t.Fatalf("after forgetting = %q, %v; want bbbb", got, err)
	}
	if names, err := d.UnencryptedRepositories(ctx); err != nil || len(names) != 0 {
		t.Fatalf("unencrypted = %q, %v; want none", names, err)
	}
}

// Probes that found a repository unencrypted count too.
func TestUnencryptedRepositoriesFromProbes(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	for _, p := range []RepositoryProbe{
		{Name: "plain", Location: "/r1", At: clk.Now(), Reachable: true, EncryptionKnown: true, Encrypted: false},
		{Name: "sealed", Location: "/r2", At: clk.Now(), Reachable: true, EncryptionKnown: true, Encrypted: true},
	} {
		if _, err := d.ClaimProbe(ctx, p.Name, clk.Now(), time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := d.RecordProbe(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := d.UnencryptedRepositories(ctx); err != nil || !slices.Equal(names, []string{"plain"}) {
		t.Fatalf("unencrypted = %q, %v; want plain", names, err)
	}
}

// A database from before migration 00013 keeps the IDs it knew: the one
// a catalog sync read, else the one of the newest backup run's snapshots.
func TestMigrationSeedsRepositoryIdentities(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	path := filepath.Join(t.TempDir(), "state.db")
	d := openAt(t, path, clk)
	migrateDownTo(t, d, 11)
	for _, stmt := range []string{
		`INSERT INTO catalog_repositories (name, repository_id, synced_at, attempted_at) VALUES ('synced', 'id-synced', 1, 1)`,
		`INSERT INTO catalog_repositories (name, attempted_at, sync_error) VALUES ('failed', 1, 'gone')`,
		`INSERT INTO jobs (id, name, spec, repository, created_at, updated_at) VALUES (1, 'a', 'manual', 'ran', 0, 0)`,
		`INSERT INTO jobs (id, name, spec, repository, created_at, updated_at) VALUES (2, 'b', 'manual', 'synced', 0, 0)`,
		`INSERT INTO runs (id, job_id, trigger, scheduled_at, queued_at, started_at, ended_at, status) VALUES (1, 1, 'manual', 0, 0, 1, 2, 'succeeded')`,
		`INSERT INTO runs (id, job_id, trigger, scheduled_at, queued_at, started_at, ended_at, status) VALUES (2, 1, 'manual', 0, 0, 3, 4, 'succeeded')`,
		`INSERT INTO runs (id, job_id, trigger, scheduled_at, queued_at, started_at, ended_at, status) VALUES (3, 2, 'manual', 0, 0, 3, 4, 'succeeded')`,
		`INSERT INTO run_snapshots (run_id, repository_id, snapshot_id, source) VALUES (1, 'id-old', 's1', '/x')`,
		`INSERT INTO run_snapshots (run_id, repository_id, snapshot_id, source) VALUES (2, 'id-new', 's2', '/x')`,
		`INSERT INTO run_snapshots (run_id, repository_id, snapshot_id, source) VALUES (3, 'id-run', 's3', '/x')`,
	} {
		if _, err := d.sql.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	d.Close()

	d = openAt(t, path, clk)
	for name, want := range map[string]string{"synced": "id-synced", "ran": "id-new", "failed": ""} {
		if id, err := d.RecordedRepositoryID(ctx, name); err != nil || id != want {
			t.Errorf("repository %s: recorded %q, %v; want %q", name, id, err, want)
		}
	}
}
