package db

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// TestSchemaRules proves every rule the schema holds against the real
// database: each case runs its statements in a transaction that is rolled
// back, and the last statement must fail (or succeed, for the controls)
// with a constraint error.
func TestSchemaRules(t *testing.T) {
	d, _ := newDB(t)
	const jobs = `INSERT INTO jobs (id, name, spec, repository, next_run_at, created_at, updated_at)
		VALUES (1, 'a', 'hourly', 'local', 0, 0, 0), (2, 'b', 'hourly', 'local', 0, 0, 0)`
	const queued = `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at) VALUES (1, 'schedule', 0, 0)`
	const running = `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, status, started_at, heartbeat_at, owner)
		VALUES (1, 'schedule', 0, 0, 'running', 1, 1, 'tok')`
	ended := func(status, extra, values string) string {
		return `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, started_at, ended_at, status` + extra + `)
			VALUES (1, 'schedule', 0, 0, 1, 2, '` + status + `'` + values + `)`
	}
	type schemaCase struct {
		name string
		sql  []string
		ok   bool
	}
	cases := []schemaCase{
		{"a queued run", []string{jobs, queued}, true},
		{"a second queued run for a job", []string{jobs, queued, queued}, false},
		{"a queued run beside a running one", []string{jobs, running, queued}, false},
		{"a running run beside a queued one", []string{jobs, queued, running}, false},
		{"queued runs of two jobs", []string{jobs, queued, strings.Replace(queued, "(1,", "(2,", 1)}, true},
		{"a new run once the last ended", []string{jobs, ended("failed", ", error_class", ", 'network'"), queued}, true},
		{"an active run made active again beside another", []string{jobs, ended("failed", ", error_class", ", 'network'"), queued,
			`UPDATE runs SET status = 'queued', started_at = NULL, ended_at = NULL, error_class = NULL WHERE status = 'failed'`}, false},

		{"a succeeded run", []string{jobs, ended("succeeded", "", "")}, true},
		{"a succeeded run with skipped files", []string{jobs, ended("succeeded", ", files_skipped", ", 3")}, false},
		{"a succeeded run with listed skipped objects", []string{jobs,
			ended("succeeded", ", skipped", `, '[{"object":"/x","reason":"permission denied"}]'`)}, false},
		{"a partial failure with skipped files", []string{jobs, ended("partial_failure", ", files_skipped", ", 3")}, true},
		{"a run turned succeeded after skipping files", []string{jobs, ended("partial_failure", ", files_skipped", ", 3"),
			`UPDATE runs SET status = 'succeeded'`}, false},
		{"a succeeded run with an error class", []string{jobs, ended("succeeded", ", error_class", ", 'network'")}, false},
		{"a failed run without an error class", []string{jobs, ended("failed", "", "")}, false},
		{"skipped objects that are not a JSON list", []string{jobs, ended("partial_failure", ", skipped", `, '{"a":1}'`)}, false},
		{"negative figures", []string{jobs, ended("failed", ", error_class, bytes_read", ", 'network', -1")}, false},

		{"an unknown status", []string{jobs, ended("done", "", "")}, false},
		{"an unknown trigger", []string{jobs, strings.Replace(queued, "'schedule'", "'cron'", 1)}, false},
		{"an unknown error class", []string{jobs, ended("failed", ", error_class", ", 'oops'")}, false},
		{"an unknown run priority", []string{jobs, `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, priority)
			VALUES (1, 'manual', 0, 0, 'urgent')`}, false},
		{"a run of a kind to come", []string{jobs, `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, kind)
			VALUES (1, 'manual', 0, 0, 'verify')`}, true},
		{"a run without a kind", []string{jobs, `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, kind)
			VALUES (1, 'manual', 0, 0, '')`}, false},
		{"counters that are not a JSON object", []string{jobs, ended("succeeded", ", counters", `, '[1]'`)}, false},
		{"named counters", []string{jobs, ended("succeeded", ", counters", `, '{"blobs_checked":3}'`)}, true},
		{"an attempt of zero", []string{jobs, `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, attempt)
			VALUES (1, 'retry', 0, 0, 0)`}, false},

		{"a held queued run", []string{jobs, `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, held_reason)
			VALUES (1, 'manual', 0, 0, 'waiting: repository local at its limit of 1')`}, true},
		{"a held reason that says nothing", []string{jobs, `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, held_reason)
			VALUES (1, 'manual', 0, 0, '')`}, false},
		{"a held reason on a running run", []string{jobs, running, `UPDATE runs SET held_reason = 'waiting'`}, false},
		{"a queued run that has started", []string{jobs, `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, started_at)
			VALUES (1, 'manual', 0, 0, 1)`}, false},
		{"a queued run with an owner", []string{jobs, `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, owner)
			VALUES (1, 'manual', 0, 0, 'tok')`}, false},
		{"a running run without an owner", []string{jobs, running, `UPDATE runs SET owner = NULL`}, false},
		{"a running run without a heartbeat", []string{jobs, running, `UPDATE runs SET heartbeat_at = NULL`}, false},
		{"an ended run without an end", []string{jobs, ended("interrupted", ", error_class", ", 'cancelled'"),
			`UPDATE runs SET ended_at = NULL`}, false},
		{"a failed run that never started", []string{jobs, queued,
			`UPDATE runs SET status = 'failed', error_class = 'transient', ended_at = 5`}, false},
		{"a queued run cancelled before it started", []string{jobs, queued,
			`UPDATE runs SET status = 'cancelled', error_class = 'cancelled', ended_at = 5`}, true},
		{"a run of a job that does not exist", []string{`INSERT INTO runs (job_id, trigger, scheduled_at, queued_at)
			VALUES (99, 'manual', 0, 0)`}, false},

		{"a dependency", []string{jobs, `INSERT INTO job_dependencies VALUES (1, 2)`}, true},
		{"a self-dependency", []string{jobs, `INSERT INTO job_dependencies VALUES (1, 1)`}, false},
		{"a dependency on a job that does not exist", []string{jobs, `INSERT INTO job_dependencies VALUES (1, 99)`}, false},

		{"a bandwidth limit", []string{jobs, `UPDATE jobs SET bandwidth = 1000 WHERE id = 1`}, true},
		{"a zero bandwidth", []string{jobs, `UPDATE jobs SET bandwidth = 0 WHERE id = 1`}, false},
		{"a negative bandwidth", []string{jobs, `UPDATE jobs SET bandwidth = -5 WHERE id = 1`}, false},
		{"an unknown job priority", []string{jobs, `UPDATE jobs SET priority = 'urgent' WHERE id = 1`}, false},
		{"two live jobs of one name", []string{jobs, `UPDATE jobs SET name = 'a' WHERE id = 2`}, false},
		{"a live job named as a deleted one", []string{jobs, `UPDATE jobs SET deleted_at = 5 WHERE id = 1`,
			`UPDATE jobs SET name = 'a' WHERE id = 2`}, true},

		{"an audit row", []string{`INSERT INTO audit (at, user_name, host, action, target) VALUES (0, 'alice', 'h', 'pause', 'a')`}, true},
		{"an unknown audit action", []string{`INSERT INTO audit (at, user_name, host, action, target) VALUES (0, 'alice', 'h', 'explode', 'a')`}, false},
		{"an audit row without a user", []string{`INSERT INTO audit (at, user_name, host, action, target) VALUES (0, '', 'h', 'pause', 'a')`}, false},
		{"an empty snapshot ID", []string{jobs, ended("succeeded", "", ""),
			`INSERT INTO run_snapshots (run_id, repository_id, snapshot_id, source) VALUES (1, 'repo', '', '/src')`}, false},
	}
	// The schema's CHECKs list the priority levels again: they must be
	// exactly schedule.PriorityLevels.
	for _, level := range schedule.PriorityLevels {
		cases = append(cases,
			schemaCase{"job priority " + level, []string{jobs, `UPDATE jobs SET priority = '` + level + `' WHERE id = 1`}, true},
			schemaCase{"run priority " + level, []string{jobs, `INSERT INTO runs (job_id, trigger, scheduled_at, queued_at, priority)
			VALUES (1, 'manual', 0, 0, '` + level + `')`}, true})
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tx, err := d.sql.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			last := len(c.sql) - 1
			for _, stmt := range c.sql[:last] {
				if _, err := tx.ExecContext(ctx, stmt); err != nil {
					t.Fatalf("setup %q: %v", stmt, err)
				}
			}
			_, err = tx.ExecContext(ctx, c.sql[last])
			switch {
			case c.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !c.ok && err == nil:
				t.Fatalf("accepted: %s", c.sql[last])
			case !c.ok && !strings.Contains(err.Error(), "constraint failed"):
				t.Fatalf("refused, but not by a constraint: %v", err)
			}
		})
	}
}

// TestDelaySeconds: delay_seconds is started minus scheduled, kept by the
// database itself.
func TestDelaySeconds(t *testing.T) {
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"))
	r, err := d.QueueRun(context.Background(), "a", pass.Run{ScheduledAt: clk.Now().Add(-90 * time.Second)}, admin)
	if err != nil {
		t.Fatal(err)
	}
	start(t, d, clk.Now(), "tok")
	var delay int64
	if err := d.sql.QueryRow(`SELECT delay_seconds FROM runs WHERE id = ?`, r.ID).Scan(&delay); err != nil {
		t.Fatal(err)
	}
	if delay != 90 {
		t.Fatalf("delay_seconds = %d, want 90", delay)
	}
}
