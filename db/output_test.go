package db

import (
	"context"
	"path/filepath"
	"testing"
)

// Runs recorded before runs kept their hooks' output have none, and the
// down migration takes the column away again.
func TestMigrationGivesOldRunsNoOutput(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	path := filepath.Join(t.TempDir(), "state.db")
	d := openAt(t, path, clk)
	migrateDownTo(t, d, 4)
	for _, stmt := range []string{
		`INSERT INTO jobs (id, name, spec, repository, created_at, updated_at) VALUES (1, 'a', 'manual', 'local', 0, 0)`,
		`INSERT INTO runs (id, job_id, trigger, scheduled_at, queued_at, started_at, ended_at, status)
			VALUES (1, 1, 'manual', 0, 0, 1, 2, 'succeeded')`,
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
	if r.Output != "" || r.Status != "succeeded" {
		t.Errorf("old run after the migration: %+v", r)
	}
	migrateDownTo(t, d, 4)
	const column = `SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'output'`
	if n := count(t, d, column); n != 0 {
		t.Errorf("runs.output still there after the down migration")
	}
}
