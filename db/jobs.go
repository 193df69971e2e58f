package db

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// JobInfo is a live job with what the commands show about it.
type JobInfo struct {
	pass.Job
	Repository string
	Bandwidth  int64    // bytes per second; 0: unlimited
	DependsOn  []string // job names, sorted
	CreatedAt  time.Time
	UpdatedAt  time.Time
	Active     *pass.Run // its queued or running run; nil: none
	LastRun    *pass.Run // its latest ended run; nil: none
}

func priorityOf(p string) string { return cmp.Or(p, schedule.DefaultPriority) }

// liveJobID is the ID of the live job name, or ErrUnknownJob.
func liveJobID(ctx context.Context, q querier, name string) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM jobs WHERE name = ? AND deleted_at IS NULL`, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("job %q: %w", name, ErrUnknownJob)
	}
	return id, err
}

type storedJob struct {
	id         int64
	spec       string
	priority   string
	repository string
	bandwidth  int64
}

// SyncJobs makes the live jobs match defs (see pass.Store). A new job, and
// a job whose spec changed, gets NextRun = next(def) (a zero time stores
// none); an unchanged spec keeps its NextRun. A job missing from defs is
// soft-deleted: it keeps its runs, its queued run is cancelled, and it
// gets no new run. Priority, repository, bandwidth and dependencies follow
// defs. Creations, changes and deletions are audited as ConfigActor.
func (d *DB) SyncJobs(ctx context.Context, defs []pass.JobDef, spec func(pass.JobDef) string, next func(pass.JobDef) time.Time) error {
	now := d.now()
	actor := d.ConfigActor
	return d.write(ctx, "sync jobs", func(tx *sql.Tx) error {
		live := map[string]storedJob{}
		rows, err := tx.QueryContext(ctx, `SELECT id, name, spec, priority, repository, coalesce(bandwidth, 0)
			FROM jobs WHERE deleted_at IS NULL`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var j storedJob
			var name string
			if err := rows.Scan(&j.id, &name, &j.spec, &j.priority, &j.repository, &j.bandwidth); err != nil {
				rows.Close()
				return err
			}
			live[name] = j
		}
		if err := rows.Close(); err != nil {
			return err
		}

		ids := map[string]int64{}
		for _, def := range defs {
			if def.Name == "" {
				return errors.New("a job has no name")
			}
			if _, dup := ids[def.Name]; dup {
				return fmt.Errorf("job %q is declared twice", def.Name)
			}
			want := storedJob{spec: spec(def), priority: priorityOf(def.Priority),
				repository: def.Repository, bandwidth: def.Backup.Bandwidth}
			old, exists := live[def.Name]
			if !exists {
				res, err := tx.ExecContext(ctx, `INSERT INTO jobs
					(name, spec, priority, repository, bandwidth, next_run_at, created_at, updated_at)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
					def.Name, want.spec, want.priority, want.repository, nullBandwidth(want.bandwidth),
					ns(next(def)), now.UnixNano(), now.UnixNano())
				if err != nil {
					return fmt.Errorf("create job %q: %w", def.Name, err)
				}
				if ids[def.Name], err = res.LastInsertId(); err != nil {
					return err
				}
				if err := audit(ctx, tx, now, actor, AuditCreate, def.Name, def.Name, "schedule "+want.spec); err != nil {
					return err
				}
				continue
			}
			ids[def.Name] = old.id
			delete(live, def.Name)
			changes := diffJob(old, want)
			if len(changes) == 0 {
				continue
			}
			if old.spec != want.spec {
				_, err = tx.ExecContext(ctx, `UPDATE jobs SET spec = ?, next_run_at = ? WHERE id = ?`,
					want.spec, ns(next(def)), old.id)
				if err != nil {
					return fmt.Errorf("update job %q: %w", def.Name, err)
				}
			}
			_, err = tx.ExecContext(ctx, `UPDATE jobs SET priority = ?, repository = ?, bandwidth = ?, updated_at = ?
				WHERE id = ?`, want.priority, want.repository, nullBandwidth(want.bandwidth), now.UnixNano(), old.id)
			if err != nil {
				return fmt.Errorf("update job %q: %w", def.Name, err)
			}
			if err := audit(ctx, tx, now, actor, AuditChange, def.Name, def.Name, strings.Join(changes, "; ")); err != nil {
				return err
			}
		}

		// What is left in live is no longer in the configuration.
		removed := make([]string, 0, len(live))
		for name := range live {
			removed = append(removed, name)
		}
		sort.Strings(removed)
		for _, name := range removed {
			id := live[name].id
			if _, err := tx.ExecContext(ctx, `UPDATE jobs SET deleted_at = ?, updated_at = ?, next_run_at = NULL
				WHERE id = ?`, now.UnixNano(), now.UnixNano(), id); err != nil {
				return fmt.Errorf("delete job %q: %w", name, err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'cancelled', ended_at = ?, held_reason = NULL,
				error_class = 'cancelled', message = 'job removed from the configuration before the run started'
				WHERE job_id = ? AND status = 'queued'`, now.UnixNano(), id); err != nil {
				return fmt.Errorf("delete job %q: %w", name, err)
			}
			if err := audit(ctx, tx, now, actor, AuditDelete, name, name, "removed from the configuration; its runs are kept"); err != nil {
				return err
			}
		}

		// Dependencies follow the configuration as a whole.
		if _, err := tx.ExecContext(ctx, `DELETE FROM job_dependencies`); err != nil {
			return err
		}
		for _, def := range defs {
			for _, dep := range def.DependsOn {
				depID, ok := ids[dep]
				if !ok {
					return fmt.Errorf("job %q depends on %q: %w", def.Name, dep, ErrUnknownJob)
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO job_dependencies (job_id, depends_on_id) VALUES (?, ?)
					ON CONFLICT DO NOTHING`, ids[def.Name], depID); err != nil {
					return fmt.Errorf("job %q depends on %q: %w", def.Name, dep, err)
				}
			}
		}
		return nil
	})
}

func nullBandwidth(b int64) any {
	if b == 0 {
		return nil
	}
	return b
}

func diffJob(old, want storedJob) []string {
	var changes []string
	if old.spec != want.spec {
		changes = append(changes, fmt.Sprintf("schedule %s -> %s", old.spec, want.spec))
	}
	if old.priority != want.priority {
		changes = append(changes, fmt.Sprintf("priority %s -> %s", old.priority, want.priority))
	}
	if old.repository != want.repository {
		changes = append(changes, fmt.Sprintf("repository %s -> %s", old.repository, want.repository))
	}
	if old.bandwidth != want.bandwidth {
		changes = append(changes, fmt.Sprintf("bandwidth %d -> %d bytes/s", old.bandwidth, want.bandwidth))
	}
	return changes
}

const jobSelect = `SELECT id, name, spec, paused, next_run_at, priority, repository, coalesce(bandwidth, 0),
	created_at, updated_at FROM jobs WHERE deleted_at IS NULL `

// Jobs lists the live jobs by name, each with its active and last run.
func (d *DB) Jobs(ctx context.Context) ([]JobInfo, error) {
	return d.ListJobs(ctx, JobFilter{})
}

// Job states a JobFilter matches besides the run statuses.
const (
	JobStatePaused = "paused" // the job is paused
	JobStateNever  = "never"  // no run of the job has ended yet
)

// JobFilter selects live jobs for ListJobs. Its fields narrow the list
// together.
type JobFilter struct {
	// States matches a job when any of them holds: a run status matches
	// the status of its active run (queued, running) or of its last ended
	// run (succeeded, failed, ...); JobStatePaused a paused job;
	// JobStateNever a job none of whose runs has ended. Empty: all.
	States     []string
	Repository string // the job's repository (its config name); "": all
	After      string // only jobs whose name sorts after it (the next page); "": from the first
	Limit      int    // most jobs returned, by name; 0 or less: all
}

// JobNames returns, sorted, the name of every job the state database
// stored, live or removed from the config (a removed job keeps its runs
// and audit rows).
func (d *DB) JobNames(ctx context.Context) ([]string, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT DISTINCT name FROM jobs ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list job names: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("list job names: %w", err)
		}
		names = append(names, name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list job names: %w", err)
	}
	return names, nil
}

// ListJobs lists the live jobs f selects, by name, each with its active
// and last run.
func (d *DB) ListJobs(ctx context.Context, f JobFilter) ([]JobInfo, error) {
	tail, args := "", []any{}
	if len(f.States) > 0 {
		const last = `(SELECT r.status FROM runs r WHERE r.job_id = jobs.id AND r.ended_at IS NOT NULL
			ORDER BY r.ended_at DESC, r.id DESC LIMIT 1)`
		const active = `(SELECT r.status FROM runs r WHERE r.job_id = jobs.id AND r.status IN ('queued', 'running'))`
		in := "(" + placeholders(len(f.States)) + ")"
		tail = "AND (" + last + " IN " + in + " OR " + active + " IN " + in +
			" OR (paused = 1 AND ? IN " + in + ") OR (" + last + " IS NULL AND ? IN " + in + ")) "
		states := make([]any, 0, len(f.States))
		for _, s := range f.States {
			states = append(states, s)
		}
		args = append(args, states...)
		args = append(args, states...)
		args = append(append(args, JobStatePaused), states...)
		args = append(append(args, JobStateNever), states...)
	}
	if f.Repository != "" {
		tail, args = tail+"AND repository = ? ", append(args, f.Repository)
	}
	if f.After != "" {
		tail, args = tail+"AND name > ? ", append(args, f.After)
	}
	tail += "ORDER BY name"
	if f.Limit > 0 {
		tail, args = tail+" LIMIT ?", append(args, f.Limit)
	}
	var jobs []JobInfo
	err := d.read(ctx, "list jobs", func(tx *sql.Tx) error {
		var err error
		jobs, err = queryJobs(ctx, tx, tail, args...)
		return err
	})
	return jobs, err
}

// JobByName reads the live job name with its active and last run;
// ErrUnknownJob when there is none.
func (d *DB) JobByName(ctx context.Context, name string) (JobInfo, error) {
	var job JobInfo
	err := d.read(ctx, "read job "+name, func(tx *sql.Tx) error {
		jobs, err := queryJobs(ctx, tx, "AND name = ?", name)
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return ErrUnknownJob
		}
		job = jobs[0]
		return nil
	})
	return job, err
}

func queryJobs(ctx context.Context, q querier, tail string, args ...any) ([]JobInfo, error) {
	rows, err := q.QueryContext(ctx, jobSelect+tail, args...)
	if err != nil {
		return nil, err
	}
	var jobs []JobInfo
	for rows.Next() {
		var j JobInfo
		var next, created, updated sql.NullInt64
		if err := rows.Scan(&j.ID, &j.Name, &j.Spec, &j.Paused, &next, &j.Priority, &j.Repository, &j.Bandwidth,
			&created, &updated); err != nil {
			rows.Close()
			return nil, err
		}
		j.NextRun, j.CreatedAt, j.UpdatedAt = timeOf(next), timeOf(created), timeOf(updated)
		jobs = append(jobs, j)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range jobs {
		j := &jobs[i]
		deps, err := q.QueryContext(ctx, `SELECT d.name FROM job_dependencies x JOIN jobs d ON d.id = x.depends_on_id
			WHERE x.job_id = ? ORDER BY d.name`, j.ID)
		if err != nil {
			return nil, err
		}
		for deps.Next() {
			var name string
			if err := deps.Scan(&name); err != nil {
				deps.Close()
				return nil, err
			}
			j.DependsOn = append(j.DependsOn, name)
		}
		if err := deps.Close(); err != nil {
			return nil, err
		}
		active, err := queryRuns(ctx, q, false, `WHERE r.job_id = ? AND r.status IN ('queued', 'running')`, j.ID)
		if err != nil {
			return nil, err
		}
		if len(active) > 0 {
			j.Active = &active[0]
		}
		last, err := queryRuns(ctx, q, true, `WHERE r.job_id = ? AND r.ended_at IS NOT NULL
			ORDER BY r.ended_at DESC, r.id DESC LIMIT 1`, j.ID)
		if err != nil {
			return nil, err
		}
		if len(last) > 0 {
			j.LastRun = &last[0]
		}
	}
	return jobs, nil
}

// PauseJob pauses the live job name on behalf of actor and records a
// "pause" audit row. A paused job is not claimed when due; its queued or
// running run is left alone. It reports false, changing nothing, when the
// job was already paused; ErrUnknownJob when there is no such job.
func (d *DB) PauseJob(ctx context.Context, name string, actor Actor) (bool, error) {
	return d.setPaused(ctx, name, true, time.Time{}, actor)
}

// ResumeJob resumes the paused live job name on behalf of actor, stores
// nextRun (recomputed by the caller from now, so that a job paused for a
// week neither fires at once nor at the wrong time; zero: none) and
// records a "resume" audit row. It reports false, changing nothing, when
// the job was not paused; ErrUnknownJob when there is no such job.
func (d *DB) ResumeJob(ctx context.Context, name string, nextRun time.Time, actor Actor) (bool, error) {
	return d.setPaused(ctx, name, false, nextRun, actor)
}

func (d *DB) setPaused(ctx context.Context, name string, pause bool, nextRun time.Time, actor Actor) (bool, error) {
	op := "resume job " + name
	if pause {
		op = "pause job " + name
	}
	if err := actor.check(); err != nil {
		return false, fmt.Errorf("%s: %w", op, err)
	}
	now := d.now()
	changed := false
	err := d.write(ctx, op, func(tx *sql.Tx) error {
		var id int64
		var paused bool
		err := tx.QueryRowContext(ctx, `SELECT id, paused FROM jobs WHERE name = ? AND deleted_at IS NULL`, name).Scan(&id, &paused)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrUnknownJob
		}
		if err != nil {
			return err
		}
		if paused == pause {
			return nil
		}
		changed = true
		if pause {
			_, err = tx.ExecContext(ctx, `UPDATE jobs SET paused = 1, updated_at = ? WHERE id = ?`, now.UnixNano(), id)
			if err != nil {
				return err
			}
			return audit(ctx, tx, now, actor, AuditPause, name, name, "")
		}
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET paused = 0, next_run_at = ?, updated_at = ? WHERE id = ?`,
			ns(nextRun), now.UnixNano(), id)
		if err != nil {
			return err
		}
		detail := "no next run"
		if !nextRun.IsZero() {
			detail = "next run " + nextRun.UTC().Format(time.RFC3339)
		}
		return audit(ctx, tx, now, actor, AuditResume, name, name, detail)
	})
	return changed, err
}
