package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Runner is a live `serve` loop (or another long-lived runner), so that
// others can tell it is there and, on its host, whether its process is.
type Runner struct {
	ID          string // host:pid, as in pass.Run.Runner
	Host        string
	PID         int
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// RegisterRunner records r, replacing a runner of the same ID. Zero
// StartedAt and HeartbeatAt are now.
func (d *DB) RegisterRunner(ctx context.Context, r Runner) error {
	now := d.now()
	if r.StartedAt.IsZero() {
		r.StartedAt = now
	}
	if r.HeartbeatAt.IsZero() {
		r.HeartbeatAt = now
	}
	return d.write(ctx, "register runner "+r.ID, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runners (id, host, pid, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
				started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`,
			r.ID, r.Host, r.PID, r.StartedAt.UnixNano(), r.HeartbeatAt.UnixNano())
		return err
	})
}

// RunnerHeartbeat renews the heartbeat of runner id; ErrNotFound when it
// is not registered (it was removed, and should register again).
func (d *DB) RunnerHeartbeat(ctx context.Context, id string) error {
	now := d.now()
	return d.write(ctx, "heartbeat of runner "+id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runners SET heartbeat_at = ? WHERE id = ?`, now.UnixNano(), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// RemoveRunner forgets runner id; a runner that is not registered is no
// error.
func (d *DB) RemoveRunner(ctx context.Context, id string) error {
	return d.write(ctx, "remove runner "+id, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM runners WHERE id = ?`, id)
		return err
	})
}

// Runners lists the registered runners by ID.
func (d *DB) Runners(ctx context.Context) ([]Runner, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT id, host, pid, started_at, heartbeat_at FROM runners ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	defer rows.Close()
	var runners []Runner
	for rows.Next() {
		var r Runner
		var started, heartbeat sql.NullInt64
		if err := rows.Scan(&r.ID, &r.Host, &r.PID, &started, &heartbeat); err != nil {
			return nil, fmt.Errorf("list runners: %w", err)
		}
		r.StartedAt, r.HeartbeatAt = timeOf(started), timeOf(heartbeat)
		runners = append(runners, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	return runners, nil
}
