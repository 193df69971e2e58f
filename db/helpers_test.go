package db

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clock is a fake clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

var admin = Actor{User: "alice", Host: "backup1"}

// newDB opens a fresh database in a temporary folder.
func newDB(t *testing.T) (*DB, *clock) {
	t.Helper()
	clk := newClock()
	return openAt(t, filepath.Join(t.TempDir(), "state", "state.db"), clk), clk
}

func openAt(t *testing.T, path string, clk *clock) *DB {
	t.Helper()
	d, err := Open(context.Background(), path, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// def is a job definition with a parsed schedule, in UTC.
func def(t *testing.T, name, spec string, dependsOn ...string) pass.JobDef {
	t.Helper()
	s, err := schedule.Parse(spec, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return pass.JobDef{Name: name, Schedule: s, Priority: "normal", Repository: "local", DependsOn: dependsOn}
}

func specOf(d pass.JobDef) string {
	return d.Schedule.String() + " (" + d.Schedule.Location().String() + ")"
}

// nextAfter is a next-run function from the clock.
func nextAfter(clk *clock) func(pass.JobDef) time.Time {
	return func(d pass.JobDef) time.Time {
		at, _ := d.Schedule.Next(clk.Now())
		return at
	}
}

func syncJobs(t *testing.T, d *DB, clk *clock, defs ...pass.JobDef) {
	t.Helper()
	if err := d.SyncJobs(context.Background(), defs, specOf, nextAfter(clk)); err != nil {
		t.Fatal(err)
	}
}

// scheduledPlan claims a job: its next slot an hour on, and a scheduled run
// for the slot it was due at.
func scheduledPlan(j pass.Job) (time.Time, *pass.Run) {
	return j.NextRun.Add(time.Hour), &pass.Run{Trigger: pass.TriggerSchedule, ScheduledAt: j.NextRun, Priority: j.Priority}
}

// mustJob reads a live job.
func mustJob(t *testing.T, d *DB, name string) JobInfo {
	t.Helper()
	j, err := d.JobByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func mustRun(t *testing.T, d *DB, id int64) pass.Run {
	t.Helper()
	r, err := d.Run(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// queue queues a manual run for job.
func queue(t *testing.T, d *DB, job string) pass.Run {
	t.Helper()
	r, err := d.QueueRun(context.Background(), job, pass.Run{}, admin)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// start admits every queued run with owner token owner.
func start(t *testing.T, d *DB, now time.Time, owner string) []pass.Run {
	t.Helper()
	started, err := d.Admit(context.Background(), now, func(s pass.AdmitState) []pass.Admission {
		var a []pass.Admission
		for _, r := range s.Queued {
			a = append(a, pass.Admission{RunID: r.ID, Admit: true, Owner: owner, Runner: "host:1"})
		}
		return a
	})
	if err != nil {
		t.Fatal(err)
	}
	return started
}

// count is a COUNT(*) query's answer.
func count(t *testing.T, d *DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := d.sql.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// audits lists the audit rows oldest first.
func audits(t *testing.T, d *DB) []AuditEntry {
	t.Helper()
	entries, err := d.Audit(context.Background(), AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	return entries
}
