package db

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

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

// Runs left running by a nightjar from before leases (schema 00011) are
// judged by their heartbeat after the migration to 00012: a stale one is
// reclaimed, a fresh one is left alone; and the migration goes back down.
func TestLeaseMigrationKeepsOldRunningRunsReclaimable(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	path := filepath.Join(t.TempDir(), "state.db")
	d := openAt(t, path, clk)
	migrateDownTo(t, d, 11)
	now := clk.Now()
	stale, fresh := now.Add(-10*time.Minute).UnixNano(), now.Add(-time.Minute).UnixNano()
	for _, stmt := range []string{
		`INSERT INTO jobs (id, name, spec, repository, created_at, updated_at) VALUES (1, 'a', 'manual', 'local', 0, 0), (2, 'b', 'manual', 'local', 0, 0)`,
		fmt.Sprintf(`INSERT INTO runs (id, job_id, kind, trigger, scheduled_at, queued_at, started_at, heartbeat_at, status, owner, runner)
			VALUES (1, 1, 'backup', 'manual', 0, 0, %d, %d, 'running', 'tok-a', 'old-host:1'),
			(2, 2, 'backup', 'manual', 0, 0, %d, %d, 'running', 'tok-b', 'old-host:2')`, stale, stale, fresh, fresh),
	} {
		if _, err := d.sql.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	d.Close()

	d = openAt(t, path, clk)
	reclaimed, _, err := d.Reclaim(ctx, now, now.Add(-5*time.Minute), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reclaimed) != 1 || reclaimed[0].ID != 1 || reclaimed[0].Status != "failed" || reclaimed[0].ErrorCode != codeOrphaned {
		t.Errorf("reclaim after the migration: %+v, want run 1 (stale heartbeat) ended ORPHANED", reclaimed)
	}
	if r, err := d.Run(ctx, 2); err != nil || r.Status != "running" || !r.LeaseUntil.IsZero() {
		t.Errorf("run 2 (fresh heartbeat, no lease) after reclaim: %+v, %v; want running", r, err)
	}
	migrateDownTo(t, d, 11)
	if n := count(t, d, `SELECT count(*) FROM pragma_table_info('runs') WHERE name IN ('lease_until', 'lease_ns')`); n != 0 {
		t.Errorf("%d lease columns after migrating down to 00011, want none", n)
	}
}
