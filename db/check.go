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

// DamagedError is ErrDamaged with the first problem SQLite named and how
// many more there are, on one line (Problems holds no line break).
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
	var lines []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return d.damaged(err)
		}
		lines = append(lines, line)
	}
	if problems := quickCheckProblems(lines, rows.Err()); len(problems) > 0 {
		return &DamagedError{Path: d.path, Problems: problems}
	}
	if err := rows.Err(); err != nil {
		return d.damaged(err)
	}
	return nil
}

// quickCheckProblems returns what a DamagedError says of quick_check's
// rows and the error that ended them (nil: none): the first problem and
// how many more there are ("and 3 more"), then the error. SQLite may put
// several lines, headed "*** in database main ***", in one row: each line
// counts as a problem, the heading as none. No problem and no error:
// nil; an error that does not say the file is damaged alone: nil too.
func quickCheckProblems(rows []string, err error) []string {
	var found []string
	for _, row := range rows {
		for _, line := range strings.Split(row, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line == "ok" || strings.HasPrefix(line, "*** in database") {
				continue
			}
			found = append(found, line)
		}
	}
	var problems []string
	if len(found) > 0 {
		problems = append(problems, found[0])
		if len(found) > 1 {
			problems = append(problems, fmt.Sprintf("and %d more", len(found)-1))
		}
	}
	if err != nil && (len(problems) > 0 || isCorrupt(err)) {
		problems = append(problems, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	return problems
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
