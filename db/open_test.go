package db

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenCreatesPrivateFolderAndFile(t *testing.T) {
	clk := newClock()
	dir := filepath.Join(t.TempDir(), "deep", "state")
	path := filepath.Join(dir, "state.db")
	d := openAt(t, path, clk)

	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", p, got, want)
		}
	}
	for pragma, want := range map[string]string{"journal_mode": "wal", "foreign_keys": "1", "busy_timeout": "5000"} {
		var got string
		if err := d.sql.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
	if d.Path() != path {
		t.Errorf("Path() = %s, want %s", d.Path(), path)
	}
}

func TestOpenAgainKeepsData(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "state.db")
	d := openAt(t, path, clk)
	syncJobs(t, d, clk, def(t, "a", "hourly"))
	d.Close()

	d = openAt(t, path, clk)
	if _, err := d.JobByName(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, d, `SELECT count(*) FROM goose_db_version WHERE version_id = 1`); n != 1 {
		t.Fatalf("migration 1 recorded %d times", n)
	}
}

func TestOpenErrors(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	_, err := Open(context.Background(), dir, clk.Now) // a folder, not a file
	if err == nil || !strings.HasPrefix(err.Error(), "open state database "+dir+": ") {
		t.Fatalf("err = %v, want one naming the path", err)
	}
	if _, err := Open(context.Background(), filepath.Join(dir, "x.db"), nil); err == nil {
		t.Fatal("opened without a clock")
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "state.db")
	d := openAt(t, path, clk)
	if _, err := d.sql.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)`); err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, err := Open(context.Background(), path, clk.Now)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("err = %v, want ErrSchemaTooNew", err)
	}
}

// TestOpenConcurrently: several processes' worth of Opens of one new file
// at once all succeed and migrate it once.
func TestOpenConcurrently(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "state.db")
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			d, err := Open(context.Background(), path, clk.Now)
			if err == nil {
				err = d.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	d := openAt(t, path, clk)
	if n := count(t, d, `SELECT count(*) FROM goose_db_version WHERE version_id = 1`); n != 1 {
		t.Fatalf("migration 1 recorded %d times", n)
	}
}
