package db

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// runSelect selects runs with their job's name, in the order scanRun reads.
const runSelect = `SELECT r.id, r.job_id, j.name, r.kind, r.trigger, r.attempt, r.priority,
	r.scheduled_at, r.not_before, r.queued_at, r.started_at, r.ended_at, r.heartbeat_at,
	r.status, r.held_reason, r.error_class, r.error_code, r.message,
	r.bytes_read, r.bytes_added, r.files, r.files_skipped, r.skipped, r.counters, r.missed_slots,
	r.owner, r.runner, r.output, r.current_item, r.lease_until
	FROM runs r JOIN jobs j ON j.id = r.job_id `

func scanRun(rows interface{ Scan(...any) error }) (pass.Run, error) {
	var (
		r                                            pass.Run
		scheduled, notBefore, queued, started, ended sql.NullInt64
		heartbeat, lease                             sql.NullInt64
		held, class, code, owner, runner             sql.NullString
		skipped, counters                            string
	)
	err := rows.Scan(&r.ID, &r.JobID, &r.Job, &r.Kind, &r.Trigger, &r.Attempt, &r.Priority,
		&scheduled, &notBefore, &queued, &started, &ended, &heartbeat,
		&r.Status, &held, &class, &code, &r.Message,
		&r.Figures.BytesRead, &r.Figures.BytesAdded, &r.Figures.Files, &r.Figures.FilesSkipped, &skipped, &counters, &r.MissedSlots,
		&owner, &runner, &r.Output, &r.Current, &lease)
	if err != nil {
		return pass.Run{}, err
	}
	r.ScheduledAt, r.NotBefore, r.QueuedAt = timeOf(scheduled), timeOf(notBefore), timeOf(queued)
	r.StartedAt, r.EndedAt, r.HeartbeatAt = timeOf(started), timeOf(ended), timeOf(heartbeat)
	r.LeaseUntil = timeOf(lease)
	r.HeldReason, r.ErrorClass, r.ErrorCode = held.String, class.String, code.String
	r.Owner, r.Runner = owner.String, runner.String
	if err := json.Unmarshal([]byte(skipped), &r.Figures.Skipped); err != nil {
		return pass.Run{}, fmt.Errorf("run %d: skipped objects: %w", r.ID, err)
	}
	if len(r.Figures.Skipped) == 0 {
		r.Figures.Skipped = nil
	}
	if err := json.Unmarshal([]byte(counters), &r.Figures.Counters); err != nil {
		return pass.Run{}, fmt.Errorf("run %d: counters: %w", r.ID, err)
	}
	if len(r.Figures.Counters) == 0 {
		r.Figures.Counters = nil
	}
	return r, nil
}

// queryRuns runs a runSelect query (tail is what follows FROM ... JOIN) and,
// with snapshots, loads each run's snapshot references.
func queryRuns(ctx context.Context, q querier, snapshots bool, tail string, args ...any) ([]pass.Run, error) {
	rows, err := q.QueryContext(ctx, runSelect+tail, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var runs []pass.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if snapshots && len(runs) > 0 {
		if err := loadSnapshots(ctx, q, runs); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// getRun reads one run with its snapshots; ErrNotFound when there is none.
func getRun(ctx context.Context, q querier, id int64) (pass.Run, error) {
	runs, err := queryRuns(ctx, q, true, "WHERE r.id = ?", id)
	if err != nil {
		return pass.Run{}, err
	}
	if len(runs) == 0 {
		return pass.Run{}, fmt.Errorf("run %d: %w", id, ErrNotFound)
	}
	return runs[0], nil
}

func loadSnapshots(ctx context.Context, q querier, runs []pass.Run) error {
	index := make(map[int64]int, len(runs))
	// Bounded batches: SQLite limits the number of parameters.
	const batch = 500
	for start := 0; start < len(runs); start += batch {
		end := min(start+batch, len(runs))
		ids := make([]any, 0, end-start)
		for i := start; i < end; i++ {
			index[runs[i].ID] = i
			ids = append(ids, runs[i].ID)
		}
		rows, err := q.QueryContext(ctx, `SELECT run_id, repository_id, snapshot_id, source
			FROM run_snapshots WHERE run_id IN (`+placeholders(len(ids))+`)
			ORDER BY run_id, source, repository_id, snapshot_id`, ids...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var s pass.SnapshotRef
			if err := rows.Scan(&id, &s.RepositoryID, &s.SnapshotID, &s.Source); err != nil {
				rows.Close()
				return err
			}
			i := index[id]
			runs[i].Snapshots = append(runs[i].Snapshots, s)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// errJobRemoved: a job removed from the configuration gets no new runs.
var errJobRemoved = errors.New("job was removed from the configuration")

// insertRun queues r for the job jobID and returns it as stored. Empty
// fields default: Kind backup, Attempt 1, Priority the job's, ScheduledAt
// and QueuedAt now. A second active run for the job is ErrActive; a removed job is
// errJobRemoved.
func insertRun(ctx context.Context, tx *sql.Tx, jobID int64, r pass.Run, now time.Time) (pass.Run, error) {
	if r.Status != "" && r.Status != pass.StatusQueued {
		return pass.Run{}, fmt.Errorf("queue run: status %q: a new run is queued", r.Status)
	}
	var jobPriority string
	var deleted sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT priority, deleted_at FROM jobs WHERE id = ?`, jobID).Scan(&jobPriority, &deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return pass.Run{}, fmt.Errorf("queue run: job id %d: %w", jobID, ErrUnknownJob)
	}
	if err != nil {
		return pass.Run{}, fmt.Errorf("queue run: %w", err)
	}
	if deleted.Valid {
		return pass.Run{}, errJobRemoved
	}
	r.Kind = cmp.Or(r.Kind, pass.KindBackup)
	if r.Attempt == 0 {
		r.Attempt = 1
	}
	if r.Priority == "" {
		r.Priority = jobPriority
	}
	if r.ScheduledAt.IsZero() {
		r.ScheduledAt = now
	}
	if r.QueuedAt.IsZero() {
		r.QueuedAt = now
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO runs
		(job_id, kind, trigger, attempt, priority, scheduled_at, not_before, queued_at, held_reason, message, missed_slots)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		jobID, r.Kind, r.Trigger, r.Attempt, r.Priority, ns(r.ScheduledAt), ns(r.NotBefore), ns(r.QueuedAt),
		nullString(r.HeldReason), r.Message, r.MissedSlots)
	if isUnique(err) {
		return pass.Run{}, activeRun(ctx, tx, jobID)
	}
	if err != nil {
		return pass.Run{}, fmt.Errorf("queue run: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return pass.Run{}, fmt.Errorf("queue run: %w", err)
	}
	return getRun(ctx, tx, id)
}

// ActiveRunError is ErrActive naming the run in the way: a job has one
// queued or running run at most.
type ActiveRunError struct {
	Job    string
	RunID  int64
	Status string // queued or running
}

func (e *ActiveRunError) Error() string {
	return fmt.Sprintf("job %s already has an active run: run %d, %s; wait for it to end, or cancel it (nightjar runs cancel %d)",
		e.Job, e.RunID, e.Status, e.RunID)
}

// Is makes an ActiveRunError match ErrActive.
func (e *ActiveRunError) Is(target error) bool { return target == ErrActive }

// activeRun returns the ActiveRunError of the job jobID, whose queued or
// running run kept a new one from being queued.
func activeRun(ctx context.Context, tx *sql.Tx, jobID int64) error {
	e := &ActiveRunError{}
	err := tx.QueryRowContext(ctx, `SELECT j.name, r.id, r.status FROM runs r JOIN jobs j ON j.id = r.job_id
		WHERE r.job_id = ? AND r.status IN ('queued', 'running')`, jobID).Scan(&e.Job, &e.RunID, &e.Status)
	if err != nil {
		return fmt.Errorf("queue run: %w (and the run in the way could not be read: %v)", ErrActive, err)
	}
	return e
}

// RunFilter selects runs for Runs. Its fields narrow the list together.
type RunFilter struct {
	Job        string   // job name, including removed jobs of that name; "": all jobs
	Statuses   []string // any of these statuses; empty: all
	Repository string   // the job's repository (its config name); "": all
	Kind       string   // the run's kind; "": all
	Before     int64    // only runs with a lower ID (the next page); 0: no bound
	Limit      int      // most runs returned, newest first; 0 or less: all
}

// Runs lists runs, newest (highest ID) first, with their snapshots. A Job
// that no job ever had is ErrUnknownJob.
func (d *DB) Runs(ctx context.Context, f RunFilter) ([]pass.Run, error) {
	var runs []pass.Run
	err := d.read(ctx, "list runs", func(tx *sql.Tx) error {
		tail, args := "WHERE 1 = 1", []any{}
		if f.Job != "" {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE name = ?`, f.Job).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("job %q: %w", f.Job, ErrUnknownJob)
			}
			tail, args = tail+" AND j.name = ?", append(args, f.Job)
		}
		if len(f.Statuses) > 0 {
			tail += " AND r.status IN (" + placeholders(len(f.Statuses)) + ")"
			for _, s := range f.Statuses {
				args = append(args, s)
			}
		}
		if f.Repository != "" {
			tail, args = tail+" AND j.repository = ?", append(args, f.Repository)
		}
		if f.Kind != "" {
			tail, args = tail+" AND r.kind = ?", append(args, f.Kind)
		}
		if f.Before > 0 {
			tail, args = tail+" AND r.id < ?", append(args, f.Before)
		}
		tail += " ORDER BY r.id DESC"
		if f.Limit > 0 {
			tail, args = tail+" LIMIT ?", append(args, f.Limit)
		}
		var err error
		runs, err = queryRuns(ctx, tx, true, tail, args...)
		return err
	})
	return runs, err
}

// Run reads one run with its snapshots; ErrNotFound when there is none.
func (d *DB) Run(ctx context.Context, id int64) (pass.Run, error) {
	var r pass.Run
	err := d.read(ctx, "read run", func(tx *sql.Tx) error {
		var err error
		r, err = getRun(ctx, tx, id)
		return err
	})
	return r, err
}

// QueueRun queues run for the live job jobName on behalf of actor and
// records a "trigger" audit row with it. Empty fields default: Trigger
// manual, Kind backup, Attempt 1, Priority the job's, ScheduledAt and QueuedAt now. It
// fails with ErrUnknownJob for a job that does not exist (or was removed)
// and with ErrActive when the job already has a queued or running run. A
// paused job stays paused.
func (d *DB) QueueRun(ctx context.Context, jobName string, run pass.Run, actor Actor) (pass.Run, error) {
	return d.queueRun(ctx, jobName, run, actor, pausedAllowed)
}

// How queueRun treats a paused job.
const (
	pausedAllowed = iota // queue as for any job (drills, follow-ups)
	pausedRefused        // ErrPaused
	pausedForced         // queue, and say in the audit that the pause was overridden
)

// QueueJobRun queues a run of job jobName by hand, as QueueRun does, but
// refuses a paused job with ErrPaused unless force is set; a forced run's
// audit row says that it overrode the pause. The check and the insert are
// one transaction, so that a pause in between cannot be missed.
func (d *DB) QueueJobRun(ctx context.Context, jobName string, run pass.Run, actor Actor, force bool) (pass.Run, error) {
	mode := pausedRefused
	if force {
		mode = pausedForced
	}
	return d.queueRun(ctx, jobName, run, actor, mode)
}

func (d *DB) queueRun(ctx context.Context, jobName string, run pass.Run, actor Actor, paused int) (pass.Run, error) {
	if err := actor.check(); err != nil {
		return pass.Run{}, fmt.Errorf("queue run for job %s: %w", jobName, err)
	}
	now := d.now()
	if run.Trigger == "" {
		run.Trigger = pass.TriggerManual
	}
	var queued pass.Run
	err := d.write(ctx, "queue run for job "+jobName, func(tx *sql.Tx) error {
		id, err := liveJobID(ctx, tx, jobName)
		if err != nil {
			return err
		}
		var isPaused bool
		if err := tx.QueryRowContext(ctx, `SELECT paused FROM jobs WHERE id = ?`, id).Scan(&isPaused); err != nil {
			return err
		}
		if isPaused && paused == pausedRefused {
			return ErrPaused
		}
		queued, err = insertRun(ctx, tx, id, run, now)
		if err != nil {
			return err
		}
		detail := fmt.Sprintf("%s run %d queued (trigger %s)", queued.Kind, queued.ID, queued.Trigger)
		if isPaused && paused == pausedForced {
			detail += ", forced although the job is paused"
		}
		return audit(ctx, tx, now, actor, AuditTrigger, jobName, jobName, detail)
	})
	return queued, err
}

// CancelRun cancels a run on behalf of actor and records a "cancel" audit
// row. A queued run is cancelled at once (status cancelled, class
// cancelled); a running run gets its cancellation requested, which its
// runner sees at its next heartbeat and records. Asking again for a run
// whose cancellation is already requested changes nothing. An ended run is
// ErrRunEnded, a missing one ErrNotFound. It returns the run as it is now.
func (d *DB) CancelRun(ctx context.Context, id int64, actor Actor) (pass.Run, error) {
	if err := actor.check(); err != nil {
		return pass.Run{}, fmt.Errorf("cancel run %d: %w", id, err)
	}
	now := d.now()
	var r pass.Run
	err := d.write(ctx, fmt.Sprintf("cancel run %d", id), func(tx *sql.Tx) error {
		var status string
		var requested bool
		err := tx.QueryRowContext(ctx, `SELECT status, cancel_requested FROM runs WHERE id = ?`, id).Scan(&status, &requested)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		var detail string
		switch {
		case status == pass.StatusQueued:
			_, err = tx.ExecContext(ctx, `UPDATE runs SET status = 'cancelled', ended_at = ?, held_reason = NULL,
				error_class = 'cancelled', message = ? WHERE id = ?`,
				now.UnixNano(), "cancelled by "+actor.String()+" before it started", id)
			detail = "queued run cancelled"
		case status == pass.StatusRunning && requested:
			r, err = getRun(ctx, tx, id)
			return err
		case status == pass.StatusRunning:
			_, err = tx.ExecContext(ctx, `UPDATE runs SET cancel_requested = 1 WHERE id = ?`, id)
			detail = "cancellation of running run requested"
		default:
			return fmt.Errorf("%w (%s)", ErrRunEnded, status)
		}
		if err != nil {
			return err
		}
		if r, err = getRun(ctx, tx, id); err != nil {
			return err
		}
		return audit(ctx, tx, now, actor, AuditCancel, fmt.Sprintf("run %d", id), r.Job, "job "+r.Job+": "+detail)
	})
	return r, err
}
