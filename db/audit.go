package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Audit actions. The schema accepts these only.
const (
	AuditCreate  = "create"  // a job appeared in the configuration
	AuditChange  = "change"  // a job's schedule, priority, repository or bandwidth changed
	AuditDelete  = "delete"  // a job was removed from the configuration (soft-deleted)
	AuditPause   = "pause"   // a job was paused
	AuditResume  = "resume"  // a job was resumed
	AuditTrigger = "trigger" // a run was queued by hand
	AuditCancel  = "cancel"  // a run was cancelled, or its cancellation requested
)

// AuditEntry is one row of the audit trail: who did what to which job or
// run, and when.
type AuditEntry struct {
	ID     int64
	At     time.Time
	Actor  Actor
	Action string // one of the Audit* constants
	Target string // a job name, or "run N"
	Job    string // the job the row is about (the run's, for "run N"); "": none known
	Detail string
}

// audit writes one audit row inside tx; job is the job it is about.
func audit(ctx context.Context, tx *sql.Tx, at time.Time, actor Actor, action, target, job, detail string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO audit (at, user_name, host, action, target, job, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, at.UnixNano(), actor.User, actor.Host, action, target, nullString(job), detail)
	if err != nil {
		return fmt.Errorf("audit %s %s: %w", action, target, err)
	}
	return nil
}

// RecordAudit writes e to the audit trail; a zero At is now, an empty Job
// is the Target. The methods that change jobs and runs write their own
// rows: this is for other actions worth recording.
func (d *DB) RecordAudit(ctx context.Context, e AuditEntry) error {
	if err := e.Actor.check(); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	if e.At.IsZero() {
		e.At = d.now()
	}
	if e.Job == "" {
		e.Job = e.Target
	}
	return d.write(ctx, "record audit", func(tx *sql.Tx) error {
		return audit(ctx, tx, e.At, e.Actor, e.Action, e.Target, e.Job, e.Detail)
	})
}

// AuditFilter selects audit rows for Audit.
type AuditFilter struct {
	Jobs   []string // rows about any of these jobs (their runs' rows included); empty: all
	Before int64    // only rows with a lower ID; 0: no bound
	Limit  int      // most rows returned, newest first; 0 or less: all
}

// Audit lists the audit trail, newest (last written) first.
func (d *DB) Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	query := `SELECT id, at, user_name, host, action, target, coalesce(job, ''), detail FROM audit WHERE 1 = 1`
	args := []any{}
	if len(f.Jobs) > 0 {
		query += ` AND job IN (` + placeholders(len(f.Jobs)) + `)`
		for _, j := range f.Jobs {
			args = append(args, j)
		}
	}
	if f.Before > 0 {
		query, args = query+` AND id < ?`, append(args, f.Before)
	}
	query += ` ORDER BY id DESC`
	if f.Limit > 0 {
		query, args = query+` LIMIT ?`, append(args, f.Limit)
	}
	rows, err := d.sql.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	defer rows.Close()
	var entries []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at sql.NullInt64
		if err := rows.Scan(&e.ID, &at, &e.Actor.User, &e.Actor.Host, &e.Action, &e.Target, &e.Job, &e.Detail); err != nil {
			return nil, fmt.Errorf("read audit: %w", err)
		}
		e.At = timeOf(at)
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	return entries, nil
}
