package db

import (
	"context"
	"database/sql"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// MetricsJob is a live job with the runs its metrics are made from.
type MetricsJob struct {
	Name string
	// LastRuns holds, per kind, the job's run of that kind that ended last
	// among those that started (a run cancelled before it started did
	// nothing and hides nothing); without its snapshot references.
	LastRuns map[string]pass.Run
	// LastSuccess is the end of the job's newest backup run that fully
	// succeeded; zero: none.
	LastSuccess time.Time
}

// MetricsState is what the metrics read from the state database, in one
// consistent view: the facts of nightjar status (from which the warnings
// and most gauges come) and the figures of each live job's last runs.
type MetricsState struct {
	Status StatusFacts
	Jobs   []MetricsJob // live jobs, by name
}

// MetricsState reads the facts of nightjar status and the live jobs with
// their last runs in one read transaction, so that both see the same
// moment: a run that ends while they are read is in both or in neither,
// and a job's nightjar_backup_last_run_status never disagrees with its
// last_run_failed warning.
func (d *DB) MetricsState(ctx context.Context) (MetricsState, error) {
	var st MetricsState
	err := d.read(ctx, "read metrics", func(tx *sql.Tx) error {
		var err error
		if st.Status, err = statusFacts(ctx, tx); err != nil {
			return err
		}
		if d.afterMetricsStatus != nil {
			d.afterMetricsStatus()
		}
		rows, err := tx.QueryContext(ctx, `SELECT name FROM jobs
			WHERE deleted_at IS NULL ORDER BY name`)
		if err != nil {
			return err
		}
		index := map[string]int{}
		for rows.Next() {
			var j MetricsJob
			if err := rows.Scan(&j.Name); err != nil {
				rows.Close()
				return err
			}
			j.LastRuns = map[string]pass.Run{}
			index[j.Name] = len(st.Jobs)
			st.Jobs = append(st.Jobs, j)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		last, err := queryRuns(ctx, tx, false, `WHERE j.deleted_at IS NULL AND r.id IN (
			SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY job_id, kind ORDER BY ended_at DESC, id DESC) AS n
				FROM runs WHERE started_at IS NOT NULL AND ended_at IS NOT NULL) WHERE n = 1)`)
		if err != nil {
			return err
		}
		for _, r := range last {
			if i, ok := index[r.Job]; ok {
				st.Jobs[i].LastRuns[r.Kind] = r
			}
		}
		return lastSuccess(ctx, tx, index, st.Jobs)
	})
	return st, err
}

// lastSuccess sets each live job's LastSuccess.
func lastSuccess(ctx context.Context, tx *sql.Tx, index map[string]int, jobs []MetricsJob) error {
	rows, err := tx.QueryContext(ctx, `SELECT j.name, max(r.ended_at) FROM runs r JOIN jobs j ON j.id = r.job_id
		WHERE j.deleted_at IS NULL AND r.kind = 'backup' AND r.status = 'succeeded' GROUP BY j.name`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var at sql.NullInt64
		if err := rows.Scan(&name, &at); err != nil {
			return err
		}
		if i, ok := index[name]; ok {
			jobs[i].LastSuccess = timeOf(at)
		}
	}
	return rows.Err()
}
