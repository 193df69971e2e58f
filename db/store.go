package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// codeOrphaned is the error code of a run ended by Reclaim.
const codeOrphaned = "ORPHANED"

// Reclaim ends the orphaned running runs (see pass.Store): those whose
// lease ran out before now (without a lease: whose heartbeat is before
// staleBefore), or whose runner dead reports gone (dead
// may be nil). Each becomes failed, class transient, code ORPHANED, and the
// run retry returns for it is queued. Two exceptions, both without a call
// to retry: a run whose cancellation was requested becomes cancelled (code
// ORPHANED), since cancellation outweighs everything; and a removed job
// gets no retry. It returns the runs it ended and the retries it queued,
// as stored.
func (d *DB) Reclaim(ctx context.Context, now, staleBefore time.Time, dead func(runner string) bool, retry func(pass.Run) *pass.Run) ([]pass.Run, []pass.Run, error) {
	var reclaimed, retries []pass.Run
	err := d.write(ctx, "reclaim orphaned runs", func(tx *sql.Tx) error {
		reclaimed, retries = nil, nil
		type orphan struct {
			run       pass.Run
			cancelled bool
			message   string
		}
		var orphans []orphan
		rows, err := tx.QueryContext(ctx, `SELECT r.id, r.heartbeat_at, r.lease_until, coalesce(r.runner, ''), r.cancel_requested
			FROM runs r WHERE r.status = 'running' ORDER BY r.id`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var o orphan
			var heartbeat, lease sql.NullInt64
			if err := rows.Scan(&o.run.ID, &heartbeat, &lease, &o.run.Runner, &o.cancelled); err != nil {
				rows.Close()
				return err
			}
			o.run.HeartbeatAt, o.run.LeaseUntil = timeOf(heartbeat), timeOf(lease)
			orphans = append(orphans, o)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, o := range orphans {
			var message string
			switch {
			case pass.LeaseExpired(o.run, now, staleBefore):
				message = fmt.Sprintf("orphaned: runner %s sent no heartbeat since %s",
					o.run.Runner, o.run.HeartbeatAt.Format(time.RFC3339))
				if !o.run.LeaseUntil.IsZero() {
					message += fmt.Sprintf(" and its lease ran out at %s", o.run.LeaseUntil.Format(time.RFC3339))
				}
			case dead != nil && o.run.Runner != "" && dead(o.run.Runner):
				message = fmt.Sprintf("orphaned: runner %s is gone", o.run.Runner)
			default:
				continue
			}
			status, class := pass.StatusFailed, pass.ClassTransient
			if o.cancelled {
				status, class = pass.StatusCancelled, pass.ClassCancelled
				message += "; its cancellation had been requested"
			}
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, ended_at = ?, error_class = ?,
				error_code = ?, message = ? WHERE id = ? AND status = 'running'`,
				status, now.UnixNano(), class, codeOrphaned, message, o.run.ID); err != nil {
				return fmt.Errorf("run %d: %w", o.run.ID, err)
			}
			run, err := getRun(ctx, tx, o.run.ID)
			if err != nil {
				return err
			}
			reclaimed = append(reclaimed, run)
			if o.cancelled || retry == nil {
				continue
			}
			if next := retry(run); next != nil {
				queued, err := insertRun(ctx, tx, run.JobID, *next, now)
				switch {
				case errors.Is(err, errJobRemoved):
				case err != nil:
					return fmt.Errorf("retry of run %d: %w", run.ID, err)
				default:
					retries = append(retries, queued)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return reclaimed, retries, nil
}

// ClaimDue claims the due jobs (see pass.Store) in one BEGIN IMMEDIATE
// transaction, oldest NextRun first: for each live, unpaused job whose
// NextRun is set and not after now and that has no queued or running run,
// it stores the next time plan returns (zero: none) and queues the run
// plan returns (nil: none). It returns the queued runs.
func (d *DB) ClaimDue(ctx context.Context, now time.Time, plan func(pass.Job) (time.Time, *pass.Run)) ([]pass.Run, error) {
	var claimed []pass.Run
	err := d.write(ctx, "claim due jobs", func(tx *sql.Tx) error {
		claimed = nil
		rows, err := tx.QueryContext(ctx, `SELECT j.id, j.name, j.spec, j.paused, j.next_run_at, j.priority
			FROM jobs j
			WHERE j.deleted_at IS NULL AND j.paused = 0 AND j.next_run_at IS NOT NULL AND j.next_run_at <= ?
			  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.job_id = j.id AND r.status IN ('queued', 'running'))
			ORDER BY j.next_run_at, j.id`, now.UnixNano())
		if err != nil {
			return err
		}
		var due []pass.Job
		for rows.Next() {
			var j pass.Job
			var next sql.NullInt64
			if err := rows.Scan(&j.ID, &j.Name, &j.Spec, &j.Paused, &next, &j.Priority); err != nil {
				rows.Close()
				return err
			}
			j.NextRun = timeOf(next)
			due = append(due, j)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		for _, j := range due {
			next, run := plan(j)
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET next_run_at = ? WHERE id = ?`, ns(next), j.ID); err != nil {
				return fmt.Errorf("job %q: %w", j.Name, err)
			}
			if run == nil {
				continue
			}
			queued, err := insertRun(ctx, tx, j.ID, *run, now)
			if err != nil {
				return fmt.Errorf("job %q: %w", j.Name, err)
			}
			claimed = append(claimed, queued)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return claimed, nil
}

// AdmitState reads the admission state (see pass.Store) in one read
// transaction: the query Admit decides from.
func (d *DB) AdmitState(ctx context.Context) (pass.AdmitState, error) {
	var state pass.AdmitState
	err := d.read(ctx, "read admission state", func(tx *sql.Tx) error {
		var err error
		state, err = admitState(ctx, tx)
		return err
	})
	return state, err
}

// admitState reads every queued run (oldest first), every running run, and
// per live job whether its latest run that started and ended fully
// succeeded. A run cancelled before it started did nothing and does not
// count.
func admitState(ctx context.Context, q querier) (pass.AdmitState, error) {
	var state pass.AdmitState
	var err error
	if state.Queued, err = queryRuns(ctx, q, false, `WHERE r.status = 'queued' ORDER BY r.queued_at, r.id`); err != nil {
		return state, err
	}
	if state.Running, err = queryRuns(ctx, q, false, `WHERE r.status = 'running' ORDER BY r.started_at, r.id`); err != nil {
		return state, err
	}
	rows, err := q.QueryContext(ctx, `SELECT j.name,
		coalesce((SELECT r.status FROM runs r
		          WHERE r.job_id = j.id AND r.kind = 'backup' AND r.started_at IS NOT NULL AND r.ended_at IS NOT NULL
		          ORDER BY r.ended_at DESC, r.id DESC LIMIT 1), '')
		FROM jobs j WHERE j.deleted_at IS NULL`)
	if err != nil {
		return state, err
	}
	defer rows.Close()
	state.LastSucceeded = map[string]bool{}
	for rows.Next() {
		var name, status string
		if err := rows.Scan(&name, &status); err != nil {
			return state, err
		}
		state.LastSucceeded[name] = status == pass.StatusSucceeded
	}
	return state, rows.Err()
}

// Admit decides the queued runs (see pass.Store) in one BEGIN IMMEDIATE
// transaction. decide sees the admission state (admitState) with the
// queued runs whose NotBefore is not after now. Each admitted run is
// started (running, Owner, Runner, StartedAt = HeartbeatAt = now, no held
// reason); every other decided run stores its HeldReason, which must not
// be empty (a held run without a reason is a bug). A decision about a run
// decide was not handed is an error, and nothing is stored. It returns the
// started runs in the order decided.
func (d *DB) Admit(ctx context.Context, now time.Time, decide func(pass.AdmitState) []pass.Admission) ([]pass.Run, error) {
	var started []pass.Run
	err := d.write(ctx, "admit queued runs", func(tx *sql.Tx) error {
		started = nil
		all, err := admitState(ctx, tx)
		if err != nil {
			return err
		}
		state := all.Eligible(now)
		queued := make(map[int64]bool, len(state.Queued))
		for _, r := range state.Queued {
			queued[r.ID] = true
		}
		decided := map[int64]bool{}
		for _, a := range decide(state) {
			if !queued[a.RunID] {
				return fmt.Errorf("run %d was decided but is not a queued run that was handed to the decision", a.RunID)
			}
			if decided[a.RunID] {
				return fmt.Errorf("run %d was decided twice", a.RunID)
			}
			decided[a.RunID] = true
			if !a.Admit {
				if a.HeldReason == "" {
					return fmt.Errorf("run %d is held without a reason", a.RunID)
				}
				if _, err := tx.ExecContext(ctx, `UPDATE runs SET held_reason = ? WHERE id = ?`, a.HeldReason, a.RunID); err != nil {
					return fmt.Errorf("hold run %d: %w", a.RunID, err)
				}
				continue
			}
			if a.Owner == "" {
				return fmt.Errorf("run %d is admitted without an owner token", a.RunID)
			}
			var lease, leaseUntil any // NULL: no lease, judged by the heartbeat
			if a.Lease > 0 {
				lease, leaseUntil = int64(a.Lease), now.Add(a.Lease).UnixNano()
			}
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'running', owner = ?, runner = ?,
				started_at = ?, heartbeat_at = ?, lease_ns = ?, lease_until = ?, held_reason = NULL WHERE id = ? AND status = 'queued'`,
				a.Owner, nullString(a.Runner), now.UnixNano(), now.UnixNano(), lease, leaseUntil, a.RunID); err != nil {
				return fmt.Errorf("start run %d: %w", a.RunID, err)
			}
			run, err := getRun(ctx, tx, a.RunID)
			if err != nil {
				return err
			}
			started = append(started, run)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return started, nil
}

// Heartbeat renews a running run's heartbeat if owner still holds it (see
// pass.Store): HeartbeatOK, or HeartbeatCancel when a cancellation was
// requested; HeartbeatLost, changing nothing, when the run is not running
// under owner (reclaimed, ended or unknown). With progress it also stores
// the run's figures so far (not the skipped list) and its current item.
func (d *DB) Heartbeat(ctx context.Context, runID int64, owner string, now time.Time, progress *pass.Progress) (pass.HeartbeatReply, error) {
	reply := pass.HeartbeatLost
	query, args := `UPDATE runs SET heartbeat_at = ?1, lease_until = ?1 + lease_ns
			WHERE id = ? AND status = 'running' AND owner = ? RETURNING cancel_requested`, []any{now.UnixNano(), runID, owner}
	if progress != nil {
		f := progress.Figures
		counters := f.Counters
		if counters == nil {
			counters = map[string]int64{}
		}
		countersJSON, err := json.Marshal(counters)
		if err != nil {
			return pass.HeartbeatLost, fmt.Errorf("heartbeat of run %d: %w", runID, err)
		}
		query = `UPDATE runs SET heartbeat_at = ?, lease_until = ? + lease_ns, bytes_read = ?, bytes_added = ?, files = ?, files_skipped = ?,
			counters = ?, current_item = ?
			WHERE id = ? AND status = 'running' AND owner = ? RETURNING cancel_requested`
		args = []any{now.UnixNano(), now.UnixNano(), f.BytesRead, f.BytesAdded, f.Files, f.FilesSkipped, string(countersJSON), progress.Current, runID, owner}
	}
	err := d.write(ctx, fmt.Sprintf("heartbeat of run %d", runID), func(tx *sql.Tx) error {
		var cancel bool
		err := tx.QueryRowContext(ctx, query, args...).Scan(&cancel)
		if errors.Is(err, sql.ErrNoRows) {
			reply = pass.HeartbeatLost
			return nil
		}
		if err != nil {
			return err
		}
		reply = pass.HeartbeatOK
		if cancel {
			reply = pass.HeartbeatCancel
		}
		return nil
	})
	if err != nil {
		return pass.HeartbeatLost, err
	}
	return reply, nil
}

var ended = map[string]bool{
	pass.StatusSucceeded: true, pass.StatusPartialFailure: true, pass.StatusFailed: true,
	pass.StatusCancelled: true, pass.StatusInterrupted: true,
}

// Finish records a run's end if owner still holds it (see pass.Store):
// Status (an end state), EndedAt (zero: now), ErrorClass, ErrorCode,
// Message, Figures (with their Counters), Output and Snapshots, clears
// the current item of its last heartbeat (an ended run works on nothing;
// a reclaim keeps it, to show where the run stopped), and queues next (nil: none) in the same
// transaction. It reports false, changing nothing, when the run is not
// running under owner. The schema refuses a succeeded run with skipped
// files and a failed run without a class. A removed job gets no next run
// (next is left as it was, its ID 0).
func (d *DB) Finish(ctx context.Context, run pass.Run, owner string, next *pass.Run) (bool, error) {
	return d.finish(ctx, run, owner, next, nil)
}

// FinishOrphan is Finish fenced, inside its transaction, by the run's
// lease (see pass.Store): it writes only while the run is still orphaned.
func (d *DB) FinishOrphan(ctx context.Context, run pass.Run, owner string, now, staleBefore time.Time, dead func(string) bool, next *pass.Run) (bool, error) {
	return d.finish(ctx, run, owner, next, func(tx *sql.Tx) (bool, error) {
		var held pass.Run
		var heartbeat, lease sql.NullInt64
		var cancelRequested bool
		err := tx.QueryRowContext(ctx, `SELECT heartbeat_at, lease_until, coalesce(runner, ''), cancel_requested FROM runs
			WHERE id = ? AND status = 'running' AND owner = ?`, run.ID, owner).Scan(&heartbeat, &lease, &held.Runner, &cancelRequested)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if cancelRequested && run.Status == pass.StatusFailed {
			return false, nil // Reclaim ends it as cancelled, without a retry
		}
		held.HeartbeatAt, held.LeaseUntil = timeOf(heartbeat), timeOf(lease)
		return pass.LeaseExpired(held, now, staleBefore) || (dead != nil && held.Runner != "" && dead(held.Runner)), nil
	})
}

// finish stores a run's end (Finish) when orphaned (nil: no check) reports
// true inside the transaction.
func (d *DB) finish(ctx context.Context, run pass.Run, owner string, next *pass.Run, orphaned func(*sql.Tx) (bool, error)) (bool, error) {
	if !ended[run.Status] {
		return false, fmt.Errorf("finish run %d: status %q is not an end state", run.ID, run.Status)
	}
	now := d.now()
	if run.EndedAt.IsZero() {
		run.EndedAt = now
	}
	skipped := run.Figures.Skipped
	if skipped == nil {
		skipped = []pass.Skipped{}
	}
	skippedJSON, err := json.Marshal(skipped)
	if err != nil {
		return false, fmt.Errorf("finish run %d: %w", run.ID, err)
	}
	counters := run.Figures.Counters
	if counters == nil {
		counters = map[string]int64{}
	}
	countersJSON, err := json.Marshal(counters)
	if err != nil {
		return false, fmt.Errorf("finish run %d: %w", run.ID, err)
	}
	err = d.write(ctx, fmt.Sprintf("finish run %d", run.ID), func(tx *sql.Tx) error {
		if orphaned != nil {
			ok, err := orphaned(tx)
			if err != nil {
				return err
			}
			if !ok {
				return errRollback
			}
		}
		var jobID int64
		err := tx.QueryRowContext(ctx, `UPDATE runs SET status = ?, ended_at = ?, error_class = ?, error_code = ?,
			message = ?, bytes_read = ?, bytes_added = ?, files = ?, files_skipped = ?, skipped = ?, counters = ?,
			output = ?, current_item = ''
			WHERE id = ? AND status = 'running' AND owner = ? RETURNING job_id`,
			run.Status, run.EndedAt.UnixNano(), nullString(run.ErrorClass), nullString(run.ErrorCode), run.Message,
			run.Figures.BytesRead, run.Figures.BytesAdded, run.Figures.Files, run.Figures.FilesSkipped,
			string(skippedJSON), string(countersJSON), run.Output, run.ID, owner).Scan(&jobID)
		if errors.Is(err, sql.ErrNoRows) {
			return errRollback
		}
		if err != nil {
			return err
		}
		if err := recordSnapshots(ctx, tx, run); err != nil {
			// The data is safe in the repository, which is the source of
			// truth: a reference the database cannot keep does not fail
			// the run. It is said in the run's message instead.
			if _, merr := tx.ExecContext(ctx, `UPDATE runs SET message = message || ? WHERE id = ?`,
				"; snapshot references not recorded: "+err.Error(), run.ID); merr != nil {
				return merr
			}
		}
		if next != nil {
			queued, err := insertRun(ctx, tx, jobID, *next, run.EndedAt)
			if err != nil && !errors.Is(err, errJobRemoved) {
				return fmt.Errorf("next run: %w", err)
			}
			if err == nil {
				*next = queued
			}
		}
		return nil
	})
	if errors.Is(err, errRollback) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// recordSnapshots stores a run's snapshot references inside a savepoint,
// so that a failure leaves the rest of the result to be written.
func recordSnapshots(ctx context.Context, tx *sql.Tx, run pass.Run) error {
	if len(run.Snapshots) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SAVEPOINT snapshots`); err != nil {
		return err
	}
	for _, s := range run.Snapshots {
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_snapshots (run_id, repository_id, snapshot_id, source)
			VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, run.ID, s.RepositoryID, s.SnapshotID, s.Source); err != nil {
			if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO snapshots`); rerr != nil {
				return rerr
			}
			return fmt.Errorf("snapshot %s: %w", s.SnapshotID, err)
		}
	}
	_, err := tx.ExecContext(ctx, `RELEASE snapshots`)
	return err
}
