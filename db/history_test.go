package db

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

func TestRunFilters(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	other := def(t, "c", "manual")
	other.Repository = "offsite"
	syncJobs(t, d, clk, def(t, "a", "manual"), def(t, "b", "manual"), other)
	h := history{t, d, clk}
	a1 := h.run("a", pass.KindBackup, pass.StatusSucceeded)
	a2 := h.run("a", pass.KindBackup, pass.StatusFailed)
	a3 := h.run("a", pass.KindVerify, pass.StatusSucceeded)
	b1 := h.run("b", pass.KindBackup, pass.StatusPartialFailure)
	c1 := h.run("c", pass.KindBackup, pass.StatusFailed)
	b2 := h.cancelQueued("b")
	a4 := queue(t, d, "a").ID

	for _, tc := range []struct {
		name string
		f    RunFilter
		want []int64 // newest first
	}{
		{"all", RunFilter{}, []int64{a4, b2, c1, b1, a3, a2, a1}},
		{"one status", RunFilter{Statuses: []string{pass.StatusFailed}}, []int64{c1, a2}},
		{"several statuses", RunFilter{Statuses: []string{pass.StatusFailed, pass.StatusPartialFailure, pass.StatusQueued}}, []int64{a4, c1, b1, a2}},
		{"job", RunFilter{Job: "a"}, []int64{a4, a3, a2, a1}},
		{"repository", RunFilter{Repository: "offsite"}, []int64{c1}},
		{"kind", RunFilter{Kind: pass.KindVerify}, []int64{a3}},
		{"job and status", RunFilter{Job: "a", Statuses: []string{pass.StatusSucceeded}}, []int64{a3, a1}},
		{"limit", RunFilter{Limit: 2}, []int64{a4, b2}},
		{"next page", RunFilter{Before: b2, Limit: 2}, []int64{c1, b1}},
		{"last page", RunFilter{Before: a2, Limit: 2}, []int64{a1}},
		{"nothing matches", RunFilter{Repository: "nowhere"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := d.Runs(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range runs {
				got = append(got, r.ID)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("runs %v, want %v", got, tc.want)
			}
		})
	}
}

func TestJobFilters(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	offsite := def(t, "e", "manual")
	offsite.Repository = "offsite"
	syncJobs(t, d, clk, def(t, "a", "manual"), def(t, "b", "manual"), def(t, "c", "manual"), def(t, "d", "manual"), offsite)
	h := history{t, d, clk}
	h.run("a", pass.KindBackup, pass.StatusFailed)
	h.run("b", pass.KindBackup, pass.StatusFailed)
	h.run("b", pass.KindBackup, pass.StatusSucceeded) // b's last run succeeded
	h.run("c", pass.KindBackup, pass.StatusSucceeded)
	if _, err := d.PauseJob(ctx, "d", admin); err != nil {
		t.Fatal(err)
	}
	h.run("e", pass.KindBackup, pass.StatusPartialFailure)
	queue(t, d, "c") // c has a queued run

	for _, tc := range []struct {
		name string
		f    JobFilter
		want []string
	}{
		{"all", JobFilter{}, []string{"a", "b", "c", "d", "e"}},
		{"last run failed", JobFilter{States: []string{pass.StatusFailed}}, []string{"a"}},
		{"last run did not fully succeed", JobFilter{States: []string{pass.StatusFailed, pass.StatusPartialFailure}}, []string{"a", "e"}},
		{"queued", JobFilter{States: []string{pass.StatusQueued}}, []string{"c"}},
		{"paused", JobFilter{States: []string{JobStatePaused}}, []string{"d"}},
		{"never ran", JobFilter{States: []string{JobStateNever}}, []string{"d"}},
		{"repository", JobFilter{Repository: "offsite"}, []string{"e"}},
		{"first page", JobFilter{Limit: 2}, []string{"a", "b"}},
		{"next page", JobFilter{After: "b", Limit: 2}, []string{"c", "d"}},
		{"status and repository", JobFilter{States: []string{pass.StatusSucceeded}, Repository: "local"}, []string{"b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, err := d.ListJobs(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range jobs {
				got = append(got, j.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("jobs %v, want %v", got, tc.want)
			}
		})
	}
}

// audit --job finds the rows about a job and about its runs, also after
// the runs were purged.
func TestAuditByJob(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	syncJobs(t, d, clk, def(t, "a", "manual"), def(t, "b", "manual"))
	if _, err := d.PauseJob(ctx, "a", admin); err != nil {
		t.Fatal(err)
	}
	r := queue(t, d, "a")
	if _, err := d.CancelRun(ctx, r.ID, admin); err != nil {
		t.Fatal(err)
	}
	queue(t, d, "b")
	h := history{t, d, clk}
	later := h.cancelQueued("a") // r is no longer the newest run of its kind
	h.run("a", pass.KindBackup, pass.StatusSucceeded)
	if _, err := d.PurgeRuns(ctx, clk.Now(), 500); err != nil {
		t.Fatal(err)
	}
	if c := count(t, d, `SELECT count(*) FROM runs WHERE id = ?`, r.ID); c != 0 {
		t.Fatalf("the cancelled run was not purged: the test needs it gone")
	}

	entries, err := d.Audit(ctx, AuditFilter{Jobs: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Action+" "+e.Target)
	}
	want := []string{"trigger a", "cancel run " + itoa(later), "trigger a", "cancel run " + itoa(r.ID), "trigger a", "pause a", "create a"}
	if !slices.Equal(got, want) {
		t.Errorf("audit of job a: %q, want %q", got, want)
	}
	page, err := d.Audit(ctx, AuditFilter{Jobs: []string{"a"}, Before: entries[1].ID, Limit: 2})
	if err != nil || len(page) != 2 || page[0].ID != entries[2].ID || page[1].ID != entries[3].ID {
		t.Errorf("second page of job a's audit: %+v, %v", page, err)
	}
}

// Rows written before migration 00007 get their job: a job's own, or the
// job of the run they name.
func TestMigrationGivesAuditRowsTheirJob(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	path := filepath.Join(t.TempDir(), "state.db")
	d := openAt(t, path, clk)
	migrateDownTo(t, d, 6)
	for _, stmt := range []string{
		`INSERT INTO jobs (id, name, spec, repository, created_at, updated_at) VALUES (1, 'a', 'manual', 'local', 0, 0)`,
		`INSERT INTO runs (id, job_id, trigger, scheduled_at, queued_at, ended_at, status, error_class)
			VALUES (7, 1, 'manual', 0, 0, 2, 'cancelled', 'cancelled')`,
		`INSERT INTO audit (at, user_name, host, action, target, detail) VALUES (1, 'alice', 'h', 'pause', 'a', '')`,
		`INSERT INTO audit (at, user_name, host, action, target, detail) VALUES (2, 'alice', 'h', 'cancel', 'run 7', '')`,
		`INSERT INTO audit (at, user_name, host, action, target, detail) VALUES (3, 'alice', 'h', 'cancel', 'run 8', '')`,
	} {
		if _, err := d.sql.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	d.Close()

	d = openAt(t, path, clk)
	entries, err := d.Audit(ctx, AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Target+"="+e.Job)
	}
	if want := []string{"run 8=", "run 7=a", "a=a"}; !slices.Equal(got, want) {
		t.Errorf("audit rows after the migration: %q, want %q", got, want)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// JobNames lists every job the database stored, removed ones too (their
// runs and audit rows stay), once each, sorted.
func TestJobNames(t *testing.T) {
	ctx := context.Background()
	d, clk := newDB(t)
	if names, err := d.JobNames(ctx); err != nil || len(names) != 0 {
		t.Fatalf("an empty database: %v, %v", names, err)
	}
	syncJobs(t, d, clk, def(t, "b", "manual"), def(t, "a", "manual"), def(t, "gone", "manual"))
	syncJobs(t, d, clk, def(t, "b", "manual"), def(t, "a", "manual"))
	syncJobs(t, d, clk, def(t, "b", "manual"), def(t, "a", "manual"), def(t, "gone", "manual"))
	syncJobs(t, d, clk, def(t, "b", "manual"), def(t, "a", "manual"))
	names, err := d.JobNames(ctx)
	if want := []string{"a", "b", "gone"}; err != nil || !slices.Equal(names, want) {
		t.Errorf("job names %v, %v; want %v", names, err, want)
	}
}
