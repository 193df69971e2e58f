package db

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"
)

// migrateDownTo takes d's schema back to version, as an older nightjar
// left it.
func migrateDownTo(t *testing.T, d *DB, version int64) {
	t.Helper()
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, d.sql, files, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(context.Background(), version); err != nil {
		t.Fatalf("migrate down to %d: %v", version, err)
	}
}

// Runs recorded before runs had a kind are backups, with no counters.
func TestMigrationGivesOldRunsTheKindBackup(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	path := filepath.Join(t.TempDir(), "state.db")
	d := openAt(t, path, clk)
	migrateDownTo(t, d, 1)
	for _, stmt := range []string{
		`INSERT INTO jobs (id, name, spec, repository, created_at, updated_at) VALUES (1, 'a', 'manual', 'local', 0, 0)`,
		`INSERT INTO runs (id, job_id, trigger, scheduled_at, queued_at, started_at, ended_at, status, bytes_read)
			VALUES (1, 1, 'manual', 0, 0, 1, 2, 'succeeded', 42)`,
	} {
		if _, err := d.sql.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	d.Close()

	d = openAt(t, path, clk)
	r, err := d.Run(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Kind != "backup" || r.Figures.Counters != nil || r.Figures.BytesRead != 42 || r.Status != "succeeded" {
		t.Errorf("old run after the migration: %+v", r)
	}
}

// The runners table, written and never read, is gone; going back to the
// schema before it brings it back empty.
func TestRunnersTableIsDropped(t *testing.T) {
	d, _ := newDB(t)
	const tables = `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runners'`
	if n := count(t, d, tables); n != 0 {
		t.Fatalf("runners table present after the migrations")
	}
	migrateDownTo(t, d, 2)
	if n := count(t, d, tables); n != 1 {
		t.Fatalf("runners table not restored by the down migration")
	}
}
