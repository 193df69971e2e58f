package db

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Sentinel errors. Job lookups fail with ErrUnknownJob, queueing a run for a
// job that already has one with ErrActive: both are the pass's own, so that
// callers of either package can test for them.
var (
	ErrNotFound     = errors.New("not found")
	ErrUnknownJob   = pass.ErrUnknownJob
	ErrActive       = pass.ErrActive
	ErrRunEnded     = errors.New("run has already ended")
	ErrPaused       = errors.New("job is paused")
	ErrSchemaTooNew = errors.New("state database was written by a newer nightjar; upgrade nightjar")
)

// BusyTimeout is how long a statement waits for another connection's write
// lock before it fails with "database is locked".
const BusyTimeout = 5 * time.Second

// migrationLockTimeout bounds the wait for another process's migration.
const migrationLockTimeout = time.Minute

// Actor is who did something, for the audit trail.
type Actor struct {
	User string
	Host string
}

func (a Actor) String() string {
	if a.Host == "" {
		return a.User
	}
	return a.User + "@" + a.Host
}

func (a Actor) check() error {
	if strings.TrimSpace(a.User) == "" {
		return errors.New("actor has no user")
	}
	return nil
}

// DB is the state database. It is safe for concurrent use, and several
// processes may open the same file at once.
type DB struct {
	sql  *sql.DB
	path string
	now  func() time.Time

	// ConfigActor is recorded in the audit rows SyncJobs writes (jobs
	// created, changed or deleted by the configuration). Open sets it to
	// user "config" on this host.
	ConfigActor Actor

	// afterMetricsStatus, when a test sets it, is called by MetricsState
	// between its two reads, to write in between.
	afterMetricsStatus func()
}

var _ pass.Store = (*DB)(nil)

// Open opens the state database at path, creating its folder (mode 0700)
// and file (mode 0600) when missing, and applies the pending migrations.
// The connection uses WAL mode, foreign keys and a busy timeout of
// BusyTimeout. now is the clock for the times the caller does not pass.
func Open(ctx context.Context, path string, now func() time.Time) (*DB, error) {
	d, err := open(ctx, path, now)
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	return d, nil
}

func open(ctx context.Context, path string, now func() time.Time) (*DB, error) {
	if path == "" {
		return nil, errors.New("no path given")
	}
	if now == nil {
		return nil, errors.New("no clock given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("create folder: %w", err)
	}
	// Create the file ourselves so that it is 0600 whatever the umask;
	// SQLite gives its -wal and -shm files the same mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}

	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_busy_timeout", fmt.Sprint(BusyTimeout.Milliseconds()))
	q.Set("_foreign_keys", "1")
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	sdb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	d := &DB{sql: sdb, path: abs, now: now, ConfigActor: Actor{User: "config", Host: host}}
	if err := d.init(ctx); err != nil {
		sdb.Close()
		return nil, d.damaged(err)
	}
	return d, nil
}

func (d *DB) init(ctx context.Context) (err error) {
	// One process sets up the file at a time: switching a new file to WAL
	// needs it alone (SQLite answers SQLITE_BUSY at once, without waiting,
	// when another connection is there), and goose's own check-then-create
	// of its version table races when several processes open a new
	// database at once.
	lock := &fileLock{path: d.path + ".lock", timeout: migrationLockTimeout}
	if err := lock.Lock(ctx, d.sql); err != nil {
		return err
	}
	defer func() {
		if uerr := lock.Unlock(context.WithoutCancel(ctx), d.sql); err == nil && uerr != nil {
			err = fmt.Errorf("migration lock: %w", uerr)
		}
	}()
	if err := d.walMode(ctx); err != nil {
		return err
	}
	return d.migrate(ctx)
}

// walMode switches the file to write-ahead logging (a lasting setting of
// the file), waiting out readers of other processes that are still there.
func (d *DB) walMode(ctx context.Context) error {
	deadline := time.Now().Add(BusyTimeout)
	for {
		var mode string
		err := d.sql.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		switch {
		case err == nil && strings.EqualFold(mode, "wal"):
			return nil
		case err == nil:
			return fmt.Errorf("journal mode is %s, not wal (is the file on a network file system?)", mode)
		case !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline):
			return fmt.Errorf("set journal mode: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *DB) migrate(ctx context.Context) (err error) {
	files, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, d.sql, files, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if current > target {
		return fmt.Errorf("schema version %d, this nightjar knows up to %d: %w", current, target, ErrSchemaTooNew)
	}
	if current == target {
		return nil
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Close closes the database.
func (d *DB) Close() error {
	if err := d.sql.Close(); err != nil {
		return fmt.Errorf("close state database %s: %w", d.path, err)
	}
	return nil
}

// Path is the absolute path of the database file.
func (d *DB) Path() string { return d.path }

// errRollback ends a write transaction without an error for the caller.
var errRollback = errors.New("rollback")

// write runs fn in one write transaction, begun with BEGIN IMMEDIATE (see
// the DSN), and commits it unless fn fails. op names the operation in
// errors.
func (d *DB) write(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", op, d.damaged(markBusy(err)))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		if errors.Is(err, errRollback) {
			return err
		}
		return fmt.Errorf("%s: %w", op, d.damaged(markBusy(err)))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", op, d.damaged(markBusy(err)))
	}
	return nil
}

// busyError is an SQLITE_BUSY error that also matches pass.ErrStoreBusy, so
// that the pass can tell a write that only met another connection's lock
// for longer than BusyTimeout, and wrote nothing, from one that failed.
type busyError struct{ err error }

func (e busyError) Error() string   { return e.err.Error() }
func (e busyError) Unwrap() []error { return []error{e.err, pass.ErrStoreBusy} }

// markBusy marks err as a busyError when SQLite gave up waiting for a lock
// (any SQLITE_BUSY extended code); it returns any other error as it is.
func markBusy(err error) error {
	var e *sqlite.Error
	if errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY {
		return busyError{err}
	}
	return err
}

// read runs fn in one read-only (deferred) transaction, for a consistent
// view across several queries.
func (d *DB) read(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := d.sql.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("%s: begin: %w", op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// querier is what *sql.Tx and *sql.DB share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ns is t as stored: nanoseconds since the epoch, or NULL for the zero time.
func ns(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// timeOf reads a stored time back, in UTC.
func timeOf(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// nullString is s, or NULL when it is empty.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// isUnique reports whether err is a violated UNIQUE constraint or index.
func isUnique(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// placeholders is "?, ?, ?" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
