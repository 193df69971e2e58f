package db

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A real SQLite file with a damaged page opens (the pages an open reads are
// sound) and quick_check names the damage; a sound file passes; a file
// that is no database at all is ErrDamaged at open.
func TestQuickCheckFindsARealDamagedFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	clk := newClock()
	d, err := Open(ctx, path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	detail := strings.Repeat("x", 500)
	for range 400 { // some 50 pages of audit rows
		if err := d.RecordAudit(ctx, AuditEntry{Actor: admin, Action: AuditTrigger, Target: "a", Detail: detail}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.QuickCheck(ctx); err != nil {
		t.Fatalf("quick_check of a sound file: %v", err)
	}
	var pageSize int64
	if err := d.sql.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil { // checkpoints the WAL into the file
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the WAL is still there after the last close: the damage would not reach the pages read")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	// The last page holds audit rows: overwrite it whole.
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, int(pageSize)), fi.Size()-pageSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	d, err = Open(ctx, path, clk.Now)
	if err != nil {
		t.Fatalf("open of a file damaged in its audit rows: %v", err)
	}
	defer d.Close()
	err = d.QuickCheck(ctx)
	var damaged *DamagedError
	if !errors.Is(err, ErrDamaged) || !errors.As(err, &damaged) || len(damaged.Problems) == 0 || damaged.Path != path {
		t.Fatalf("quick_check of a damaged file: %v, want a DamagedError naming the problems and %s", err, path)
	}
	if len(damaged.Problems) > damagedProblems+1 {
		t.Errorf("%d problems kept, want at most %d and a count of the rest", len(damaged.Problems), damagedProblems+1)
	}

	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, junk, clk.Now); !errors.Is(err, ErrDamaged) {
		t.Fatalf("open of a file that is no database: %v, want ErrDamaged", err)
	}
}
