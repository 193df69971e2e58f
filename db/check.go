package db

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrDamaged is a state database that SQLite finds damaged. Nothing in it
// is needed to restore: the repositories hold every snapshot, and the
// catalog is rebuilt from them.
var ErrDamaged = errors.New("state database is damaged")

// damagedProblems is how many of quick_check's lines a DamagedError keeps.
const damagedProblems = 3

// DamagedError is ErrDamaged with the first problems SQLite named.
type DamagedError struct {
	Path     string
	Problems []string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("%v: %s", ErrDamaged, strings.Join(e.Problems, "; "))
}

func (e *DamagedError) Unwrap() error { return ErrDamaged }

// QuickCheck runs SQLite's PRAGMA quick_check: a DamagedError when the file
// is damaged, nil when it is sound. It reads the whole file, so it is run
// when there is reason to doubt it (a pass after an unclean stop), not at
// every open.
func (d *DB) QuickCheck(ctx context.Context) error {
	rows, err := d.sql.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return d.damaged(err)
	}
	defer rows.Close()
	var problems []string
	total := 0
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return d.damaged(err)
		}
		if line == "ok" {
			continue
		}
		total++
		if len(problems) < damagedProblems {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return d.damaged(err)
	}
	if total > len(problems) {
		problems = append(problems, fmt.Sprintf("and %d more", total-len(problems)))
	}
	if total > 0 {
		return &DamagedError{Path: d.path, Problems: problems}
	}
	return nil
}

// damaged turns SQLite's corruption errors into a DamagedError and passes
// any other error through.
func (d *DB) damaged(err error) error {
	if isCorrupt(err) {
		return &DamagedError{Path: d.path, Problems: []string{err.Error()}}
	}
	return err
}

// isCorrupt reports SQLite's answers for a damaged file: SQLITE_CORRUPT
// and SQLITE_NOTADB (with their extended codes).
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}
