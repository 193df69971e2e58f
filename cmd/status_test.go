package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/redact"
	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
	"github.com/nightjar-backup/nightjar/status"
)

// jobState turns a job's config and stored facts into what Evaluate
// judges: verification failures from a run or the catalog, the window of
// deep verification, and the next run of a job no pass stored yet.
func TestJobState(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	daily, err := schedule.Parse("daily 02:00", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	backup := pass.JobDef{Name: "home", Repository: "main", Schedule: daily, Verify: pass.VerifyDef{Enabled: true, DeepEvery: 7 * 24 * time.Hour}}
	stored := db.JobFacts{JobInfo: db.JobInfo{Job: pass.Job{ID: 1, Name: "home", NextRun: now.Add(time.Hour)}}}
	tests := []struct {
		name  string
		def   func(pass.JobDef) pass.JobDef
		facts func(db.JobFacts) db.JobFacts
		check func(t *testing.T, j status.Job)
	}{
		{"a stored job keeps its stored next run", nil, nil, func(t *testing.T, j status.Job) {
			if !j.NextRun.Equal(now.Add(time.Hour)) || j.Manual {
				t.Errorf("next run %s, manual %v", j.NextRun, j.Manual)
			}
		}},
		{"a job no pass stored yet runs at its schedule's next slot", nil, func(f db.JobFacts) db.JobFacts { return db.JobFacts{} },
			func(t *testing.T, j status.Job) {
				if want := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC); !j.NextRun.Equal(want) {
					t.Errorf("next run %s, want %s", j.NextRun, want)
				}
			}},
		{"a manual job", func(d pass.JobDef) pass.JobDef { d.Schedule = schedule.Schedule{}; return d }, nil, func(t *testing.T, j status.Job) {
			if !j.Manual {
				t.Error("a job without schedule is not manual")
			}
		}},
		{"a verify run failed with class integrity", nil, func(f db.JobFacts) db.JobFacts {
			f.LastVerify = &pass.Run{ID: 7, Kind: pass.KindVerify, Status: pass.StatusFailed, ErrorClass: pass.ClassIntegrity, Message: "pack 3a damaged"}
			return f
		}, func(t *testing.T, j status.Job) {
			if !j.VerifyFailed || j.VerifyFailure != "verify run 7: pack 3a damaged" {
				t.Errorf("verify failed %v: %q", j.VerifyFailed, j.VerifyFailure)
			}
		}},
		{"a verify run failed for another reason is not a verification failure", nil, func(f db.JobFacts) db.JobFacts {
			f.LastVerify = &pass.Run{ID: 7, Kind: pass.KindVerify, Status: pass.StatusFailed, ErrorClass: pass.ClassBusy}
			return f
		}, func(t *testing.T, j status.Job) {
			if j.VerifyFailed {
				t.Error("a busy repository counted as a failed verification")
			}
		}},
		{"the catalog has a snapshot as verify_failed", nil, func(f db.JobFacts) db.JobFacts {
			f.VerifyFailedSnapshots = []string{"run-3-data"}
			return f
		}, func(t *testing.T, j status.Job) {
			if !j.VerifyFailed || !strings.Contains(j.VerifyFailure, "run-3-data") {
				t.Errorf("verify failed %v: %q", j.VerifyFailed, j.VerifyFailure)
			}
		}},
		{"deep verification expected within deep_verify_every plus a day, at least 8 days", func(d pass.JobDef) pass.JobDef {
			d.Verify.DeepEvery = 30 * 24 * time.Hour
			return d
		}, nil, func(t *testing.T, j status.Job) {
			if !j.DeepVerify || j.DeepVerifyWithin != 31*24*time.Hour {
				t.Errorf("deep %v within %s", j.DeepVerify, j.DeepVerifyWithin)
			}
		}},
		{"deep_verify_every never: no deep verification expected", func(d pass.JobDef) pass.JobDef {
			d.Verify.DeepEvery = -1
			return d
		}, nil, func(t *testing.T, j status.Job) {
			if j.DeepVerify {
				t.Error("a job that never verifies deeply is expected to")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, facts := backup, stored
			if tt.def != nil {
				def = tt.def(def)
			}
			if tt.facts != nil {
				facts = tt.facts(facts)
			}
			tt.check(t, jobState(def, 0, facts, now))
		})
	}
}

// A message stored before password errors lost their paths (or a hook's
// output) is shown by status without the config's secrets.
func TestRedactWarningsTakesOutConfigSecrets(t *testing.T) {
	const file = "/etc/nightjar/offsite.pass"
	in := []status.Warning{
		{Code: status.CodeLastRunFailed, Message: "last backup run 3 failed: read password file: open " + file + ": no such file or directory"},
		{Code: status.CodeRepositoryUnavailable, Message: "post https://hooks.example/T/B/TOKEN failed"},
	}
	got := redactWarnings(redact.New(file), in)
	want := []string{
		"last backup run 3 failed: read password file: open [redacted]: no such file or directory",
		"post https://hooks.example/… failed",
	}
	for i := range want {
		if got[i].Message != want[i] {
			t.Errorf("warning %d = %q, want %q", i, got[i].Message, want[i])
		}
	}
}
