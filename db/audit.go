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
	Detail string
}

// audit writes one audit row inside tx.
func audit(ctx context.Context, tx *sql.Tx, at time.Time, actor Actor, action, target, detail string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO audit (at, user_name, host, action, target, detail)
		VALUES (?, ?, ?, ?, ?, ?)`, at.UnixNano(), actor.User, actor.Host, action, target, detail)
	if err != nil {
		return fmt.Errorf("audit %s %s: %w", action, target, err)
	}
	return nil
}

// RecordAudit writes e to the audit trail; a zero At is now. The methods
// that change jobs and runs write their own rows: this is for other
// actions worth recording.
func (d *DB) RecordAudit(ctx context.Context, e AuditEntry) error {
	if err := e.Actor.check(); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	if e.At.IsZero() {
		e.At = d.now()
	}
	return d.write(ctx, "record audit", func(tx *sql.Tx) error {
		return audit(ctx, tx, e.At, e.Actor, e.Action, e.Target, e.Detail)
	})
}

// Audit lists the audit trail, newest (last written) first; limit 0 or
// less: all of it.
func (d *DB) Audit(ctx context.Context, limit int) ([]AuditEntry, error) {
	query := `SELECT id, at, user_name, host, action, target, detail FROM audit ORDER BY id DESC`
	args := []any{}
	if limit > 0 {
		query += " LIMIT ?"
		args = append(args, limit)
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
		if err := rows.Scan(&e.ID, &at, &e.Actor.User, &e.Actor.Host, &e.Action, &e.Target, &e.Detail); err != nil {
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
