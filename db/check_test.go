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
	if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "*** in database") {
		t.Errorf("quick_check of a damaged file: %q, want one line without SQLite's heading", msg)
	}

	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, bytes.Repeat([]byte("not a database "), 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, junk, clk.Now); !errors.Is(err, ErrDamaged) {
		t.Fatalf("open of a file that is no database: %v, want ErrDamaged", err)
	}
}

// quick_check's rows are flattened to the first problem and a count: a row
// may hold several lines under a heading, which counts for nothing; the
// error that ended the rows is kept after the problems.
func TestQuickCheckProblemsAreOneLine(t *testing.T) {
	corrupt := errors.New("database disk image is malformed (11)")
	cases := []struct {
		name string
		rows []string
		err  error
		want []string
	}{
		{"sound", []string{"ok"}, nil, nil},
		{"one row of two lines", []string{"*** in database main ***\nTree 3 page 60: btreeInitPage() returns error code 11"}, nil,
			[]string{"Tree 3 page 60: btreeInitPage() returns error code 11"}},
		{"several", []string{"*** in database main ***\nPage 5: never used\nPage 6: never used", "row 2 missing from index i"}, nil,
			[]string{"Page 5: never used", "and 2 more"}},
		{"problems and an error", []string{"Page 5: never used"}, corrupt, []string{"Page 5: never used", corrupt.Error()}},
		{"an error that is no damage", nil, errors.New("interrupted"), nil},
	}
	for _, c := range cases {
		got := quickCheckProblems(c.rows, c.err)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		for _, p := range got {
			if strings.Contains(p, "\n") {
				t.Errorf("%s: problem %q spans lines", c.name, p)
			}
		}
	}
}
