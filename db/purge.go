package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// purgeable selects the IDs of the ended runs that ended before ? and may
// be purged, oldest first, at most ? of them. A run is kept, whatever its
// age, while it is the newest (by ended_at, then ID) of its job, kind and
// status among the runs that started (or among those that never started):
// so the last run of every job and kind, its last succeeded run (the age
// of the newest good backup), and the last run that started and ended
// (what AdmitState's LastSucceeded and dependencies read) all stay. The
// run with the highest ID stays too, so that SQLite never hands out its
// ID again (snapshot IDs carry run IDs).
const purgeable = `SELECT r.id FROM runs r
	WHERE r.ended_at IS NOT NULL AND r.ended_at < ? AND r.status NOT IN ('queued', 'running')
	  AND r.id < (SELECT max(id) FROM runs)
	  AND EXISTS (SELECT 1 FROM runs n
	              WHERE n.job_id = r.job_id AND n.kind = r.kind AND n.status = r.status
	                AND (n.started_at IS NULL) = (r.started_at IS NULL)
	                AND n.ended_at IS NOT NULL
	                AND (n.ended_at > r.ended_at OR (n.ended_at = r.ended_at AND n.id > r.id)))
	ORDER BY r.ended_at, r.id
	LIMIT ?`

// PurgeRuns deletes at most limit runs that ended before before, oldest
// first, with their snapshot references, and returns how many it deleted.
// It never deletes a queued or running run, nor the newest run of a job,
// kind and status (see purgeable). A pass calls it with a bounded limit,
// so that a large backlog is worked off over several passes instead of
// holding the database's write lock for long.
func (d *DB) PurgeRuns(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("purge runs: limit %d: want 1 or more", limit)
	}
	purged := 0
	err := d.write(ctx, "purge runs", func(tx *sql.Tx) error {
		purged = 0
		rows, err := tx.QueryContext(ctx, purgeable, before.UnixNano(), limit)
		if err != nil {
			return err
		}
		var ids []any
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		// Bounded batches: SQLite limits the number of parameters.
		const batch = 500
		for start := 0; start < len(ids); start += batch {
			part := ids[start:min(start+batch, len(ids))]
			in := "(" + placeholders(len(part)) + ")"
			if _, err := tx.ExecContext(ctx, `DELETE FROM run_snapshots WHERE run_id IN `+in, part...); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id IN `+in, part...)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			purged += int(n)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return purged, nil
}

// PurgeAudit deletes at most limit audit rows written before before,
// oldest first, and returns how many it deleted.
func (d *DB) PurgeAudit(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("purge audit: limit %d: want 1 or more", limit)
	}
	var purged int64
	err := d.write(ctx, "purge audit", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM audit WHERE id IN
			(SELECT id FROM audit WHERE at < ? ORDER BY at, id LIMIT ?)`, before.UnixNano(), limit)
		if err != nil {
			return err
		}
		purged, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	return int(purged), nil
}

// PurgePasses deletes the heartbeats of passes (one row per host and
// mode) that began before before, and returns how many it deleted: hosts
// that no longer run nightjar (renamed machines, replaced containers)
// leave rows nobody renews. The newest pass of each mode stays whatever
// its age, so that nightjar status still says when the scheduler last
// ran. The table holds a row per host and mode, so one statement does.
func (d *DB) PurgePasses(ctx context.Context, before time.Time) (int, error) {
	var purged int64
	err := d.write(ctx, "purge passes", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM scheduler_passes AS p WHERE p.at < ?
			AND EXISTS (SELECT 1 FROM scheduler_passes n WHERE n.mode = p.mode
			            AND (n.at > p.at OR (n.at = p.at AND n.host > p.host)))`, before.UnixNano())
		if err != nil {
			return err
		}
		purged, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	return int(purged), nil
}
