package status

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var now = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// healthy returns a state with nothing to say: a pass a minute ago, one
// scheduled job backed up an hour ago and deep-verified yesterday, and
// its repository probed reachable, encrypted and mostly empty.
func healthy() State {
	return State{
		Now:    now,
		Passes: []Pass{{At: now.Add(-time.Minute), Host: "db1", PID: 42, Version: "1.0", Mode: "tick"}},
		Jobs: []Job{{
			Name: "home", Kind: "backup", Repository: "disk", NextRun: now.Add(time.Hour), Created: now.Add(-30 * 24 * time.Hour),
			LastRuns:         []Run{{ID: 7, Kind: "backup", Status: statusSucceeded, Ended: now.Add(-time.Hour)}},
			LastGoodSnapshot: now.Add(-time.Hour),
			Verify:           true, DeepVerify: true, LastDeepVerify: now.Add(-24 * time.Hour),
		}},
		Repositories: []Repository{{
			Name: "disk", Location: "/srv/backup",
			Probe:           &Probe{At: now.Add(-5 * time.Minute), Reachable: true, Encrypted: true, SpaceKnown: true, FreeBytes: 800 << 30, TotalBytes: 1000 << 30},
			LastBackupAdded: 1 << 30,
		}},
	}
}

// want is one expected warning: its code, job, repository and a piece of
// its message.
type want struct {
	code       Code
	job, repo  string
	msgContain string
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*State)
		want   []want
	}{
		{"healthy says nothing", func(*State) {}, nil},
		{"scheduler_offline: no pass ever", func(s *State) { s.Passes = nil },
			[]want{{CodeSchedulerOffline, "", "", "no pass of tick or serve was ever recorded"}}},
		{"scheduler_offline: newest pass older than the default 3m", func(s *State) {
			s.Passes = append(s.Passes, Pass{At: now.Add(-4 * time.Minute), Host: "db2", Mode: "serve"})
			s.Passes[0].At = now.Add(-3*time.Minute - time.Second)
		}, []want{{CodeSchedulerOffline, "", "", "no pass for 3m1s (the newest: tick on db1"}}},
		{"scheduler online when the newest of several passes is recent", func(s *State) {
			s.Passes = append(s.Passes, Pass{At: now.Add(-time.Hour), Host: "db2", Mode: "serve"})
		}, nil},
		{"scheduler_offline after the configured offline_after", func(s *State) {
			s.OfflineAfter = 30 * time.Second
		}, []want{{CodeSchedulerOffline, "", "", "allowed: 30s"}}},
		{"job_paused is info, and a paused job still goes stale", func(s *State) {
			s.Jobs[0].Paused = true
			s.Jobs[0].LastGoodSnapshot = now.Add(-27 * time.Hour)
		}, []want{{CodeBackupStale, "home", "disk", "next run: none while paused"}, {CodeJobPaused, "home", "disk", "nightjar job resume home"}}},
		{"schedule_disabled: a manual job is neither stale nor missing a backup", func(s *State) {
			s.Jobs[0].Manual = true
			s.Jobs[0].NextRun = time.Time{}
			s.Jobs[0].LastGoodSnapshot = now.Add(-100 * 24 * time.Hour)
		}, []want{{CodeScheduleDisabled, "home", "disk", "runs only when asked"}}},
		{"no_backup_yet for a new scheduled job", func(s *State) {
			s.Jobs[0].Created = now.Add(-time.Hour)
			s.Jobs[0].LastGoodSnapshot = time.Time{}
			s.Jobs[0].LastRuns = nil
		}, []want{{CodeNoBackupYet, "home", "disk", "no good snapshot yet; next run: 2026-12-01T04:00:00Z"}}},
		{"backup_stale for a job without a snapshot older than its rpo", func(s *State) {
			s.Jobs[0].Created = now.Add(-27 * time.Hour)
			s.Jobs[0].LastGoodSnapshot = time.Time{}
		}, []want{{CodeBackupStale, "home", "disk", "no good snapshot since the job was created 27h0m0s ago"}}},
		{"backup_stale past the default rpo of 26h", func(s *State) {
			s.Jobs[0].LastGoodSnapshot = now.Add(-26*time.Hour - time.Minute)
		}, []want{{CodeBackupStale, "home", "disk", "newest good snapshot is 26h1m0s old"}}},
		{"not stale at the default rpo exactly", func(s *State) {
			s.Jobs[0].LastGoodSnapshot = now.Add(-26 * time.Hour)
		}, nil},
		{"backup_stale past the job's own rpo", func(s *State) {
			s.Jobs[0].RPO = 30 * time.Minute
		}, []want{{CodeBackupStale, "home", "disk", "allowed: rpo 30m0s"}}},
		{"prune and drill jobs have no snapshots to go stale", func(s *State) {
			s.Jobs = append(s.Jobs, Job{Name: "maint", Kind: "prune", Repository: "disk"}, Job{Name: "drill", Kind: "drill", Repository: "disk"})
		}, nil},
		{"last_run_failed with class, code and message on one line", func(s *State) {
			s.Jobs[0].LastRuns[0] = Run{ID: 9, Kind: "backup", Status: statusFailed, Class: "network", Code: "NET_DOWN", Message: "dial tcp:\nconnection refused", Ended: now}
		}, []want{{CodeLastRunFailed, "home", "disk", "last backup run 9 failed at 2026-12-01T03:00:00Z (class network, code NET_DOWN): dial tcp: connection refused"}}},
		{"a long run message is cut at a rune boundary", func(s *State) {
			s.Jobs[0].LastRuns[0] = Run{ID: 9, Kind: "backup", Status: statusFailed, Class: "source", Message: strings.Repeat("é", 400), Ended: now}
		}, []want{{CodeLastRunFailed, "home", "disk", strings.Repeat("é", 150) + "..."}}},
		{"last_run_partial", func(s *State) {
			s.Jobs[0].LastRuns[0].Status = statusPartial
			s.Jobs[0].LastRuns[0].Message = "2 files skipped"
		}, []want{{CodeLastRunPartial, "home", "disk", "last backup run 7 ended partial"}}},
		{"a failed retention is not hidden by a later good backup", func(s *State) {
			s.Jobs[0].LastRuns = append(s.Jobs[0].LastRuns, Run{ID: 6, Kind: "retention", Status: statusFailed, Class: "busy", Ended: now.Add(-2 * time.Hour)})
		}, []want{{CodeLastRunFailed, "home", "disk", "last retention run 6 failed"}}},
		{"repository_unavailable", func(s *State) {
			s.Repositories[0].Probe = &Probe{At: now, Reachable: false, Error: "open repository: no such file or directory"}
		}, []want{{CodeRepositoryUnavailable, "", "disk", "repository at /srv/backup is unavailable (probe at 2026-12-01T03:00:00Z): open repository: no such file or directory"}}},
		{"never probed: nothing said about the repository", func(s *State) {
			s.Repositories[0].Probe = nil
		}, nil},
		{"repository_low_space under 10% free", func(s *State) {
			s.Repositories[0].Probe.FreeBytes = 99 << 30
		}, []want{{CodeRepositoryLowSpace, "", "disk", "has 99 GiB free of 1000 GiB (9.9%)"}}},
		{"repository_low_space under twice the newest backup's addition", func(s *State) {
			s.Repositories[0].LastBackupAdded = 401 << 30
		}, []want{{CodeRepositoryLowSpace, "", "disk", "the newest backup added 401 GiB"}}},
		{"no space warning when the space is unknown", func(s *State) {
			s.Repositories[0].Probe.SpaceKnown = false
			s.Repositories[0].Probe.FreeBytes = 0
		}, nil},
		{"repository_unencrypted names the jobs writing into it", func(s *State) {
			s.Repositories[0].Probe.Encrypted = false
			s.Jobs = append(s.Jobs, Job{Name: "etc", Repository: "disk", LastGoodSnapshot: now, Created: now}, Job{Name: "maint", Kind: "prune", Repository: "disk"})
		}, []want{{CodeRepositoryUnencrypted, "", "disk", "and job etc, home writes into it"}}},
		{"an unencrypted repository no job writes into is not a warning", func(s *State) {
			s.Repositories = append(s.Repositories, Repository{Name: "spare", Location: "/srv/spare", Probe: &Probe{At: now, Reachable: true}})
		}, nil},
		{"verify_failed", func(s *State) {
			s.Jobs[0].VerifyFailed = true
			s.Jobs[0].VerifyFailure = "run 12: pack 3a4b damaged"
		}, []want{{CodeVerifyFailed, "home", "disk", "a snapshot failed verification: run 12: pack 3a4b damaged"}}},
		{"never_deep_verified after 8 days", func(s *State) {
			s.Jobs[0].LastDeepVerify = now.Add(-8*24*time.Hour - time.Hour)
		}, []want{{CodeNeverDeepVerified, "home", "disk", "newest deep verification is 193h0m0s old"}}},
		{"never_deep_verified: none at all for a job older than 8 days", func(s *State) {
			s.Jobs[0].LastDeepVerify = time.Time{}
		}, []want{{CodeNeverDeepVerified, "home", "disk", "no deep verification yet"}}},
		{"a young job is not yet missing a deep verification", func(s *State) {
			s.Jobs[0].LastDeepVerify = time.Time{}
			s.Jobs[0].Created = now.Add(-2 * time.Hour)
		}, nil},
		{"no deep verification expected when the job verifies only structurally", func(s *State) {
			s.Jobs[0].LastDeepVerify = time.Time{}
			s.Jobs[0].DeepVerify = false
		}, nil},
		{"run_held after an hour, with its held reason", func(s *State) {
			s.Queued = []QueuedRun{{ID: 11, Job: "home", Repository: "disk", QueuedAt: now.Add(-61 * time.Minute), HeldReason: "repository disk is busy: a prune holds it"}}
		}, []want{{CodeRunHeld, "home", "disk", "run 11 has waited 1h1m0s since 2026-12-01T01:59:00Z: repository disk is busy: a prune holds it"}}},
		{"a retry waiting for its backoff is not held", func(s *State) {
			s.Queued = []QueuedRun{{ID: 11, Job: "home", QueuedAt: now.Add(-3 * time.Hour), NotBefore: now.Add(-30 * time.Minute)}}
		}, nil},
		{"run_stuck when a running run's heartbeat stopped", func(s *State) {
			s.Running = []RunningRun{{ID: 12, Job: "home", Repository: "disk", StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-20 * time.Minute), Runner: "db1:77"}}
		}, []want{{CodeRunStuck, "home", "disk", "run 12 (runner db1:77) has not renewed its heartbeat for 20m0s"}}},
		{"no run_stuck while the owner's lease lasts, however old its heartbeat", func(s *State) {
			s.Running = []RunningRun{{ID: 12, Job: "home", Repository: "disk", StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-20 * time.Minute),
				LeaseUntil: now.Add(10 * time.Minute), Runner: "db1:77"}}
		}, nil},
		{"run_stuck once the owner's lease ran out", func(s *State) {
			s.Running = []RunningRun{{ID: 12, Job: "home", Repository: "disk", StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-20 * time.Minute),
				LeaseUntil: now.Add(-time.Minute), Runner: "db1:77"}}
		}, []want{{CodeRunStuck, "home", "disk", "run 12 (runner db1:77) has not renewed its heartbeat for 20m0s and its lease ran out at"}}},
		{"no secrets: URLs are cut to their scheme and host in messages", func(s *State) {
			s.Repositories[0].Location = "s3://s3.example.com/bucket"
			s.Repositories[0].Probe = &Probe{At: now, Error: `get "https://AKIAKEY:hunter2@s3.example.com/bucket/config?X-Amz-Signature=abc123": 403`}
			s.Jobs[0].LastRuns[0] = Run{ID: 9, Kind: "backup", Status: statusFailed, Class: "network", Message: "post https://user:hunter2@hooks.example/x?token=abc123 failed", Ended: now}
		}, []want{
			{CodeRepositoryUnavailable, "", "disk", `get "https://s3.example.com/…": 403`},
			{CodeLastRunFailed, "home", "disk", "post https://hooks.example/… failed"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := healthy()
			tt.change(&s)
			got := Evaluate(s)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d warnings, want %d:\n%s", len(got), len(tt.want), dump(got))
			}
			for _, w := range tt.want {
				i := slices.IndexFunc(got, func(g Warning) bool { return g.Code == w.code && g.Job == w.job && g.Repository == w.repo })
				if i < 0 {
					t.Fatalf("no %s warning for job %q repository %q in:\n%s", w.code, w.job, w.repo, dump(got))
				}
				if !strings.Contains(got[i].Message, w.msgContain) {
					t.Errorf("%s message = %q, want it to contain %q", w.code, got[i].Message, w.msgContain)
				}
				if got[i].Severity != w.code.Severity() {
					t.Errorf("%s severity = %s, want %s", w.code, got[i].Severity, w.code.Severity())
				}
				if !utf8.ValidString(got[i].Message) || len(got[i].Message) > 2*maxMessage+len("...") {
					t.Errorf("%s message is not valid UTF-8 or is too long (%d bytes)", w.code, len(got[i].Message))
				}
				if strings.Contains(got[i].Message, "\n") {
					t.Errorf("%s message has more than one line: %q", w.code, got[i].Message)
				}
				for _, secret := range []string{"hunter2", "abc123", "AKIAKEY"} {
					if strings.Contains(got[i].Message, secret) {
						t.Errorf("%s message carries the secret %q: %q", w.code, secret, got[i].Message)
					}
				}
			}
		})
	}
}

// TestEvaluateOrder checks the order: critical, warning, info; then by
// job, then by repository.
func TestEvaluateOrder(t *testing.T) {
	s := healthy()
	s.Passes = nil
	s.Jobs = append(s.Jobs,
		Job{Name: "a", Repository: "disk", Paused: true, Manual: true},
		Job{Name: "b", Repository: "disk", LastGoodSnapshot: now.Add(-48 * time.Hour)},
	)
	s.Jobs[0].LastRuns[0].Status = statusFailed
	s.Repositories[0].Probe.Reachable = false
	got := Evaluate(s)
	var order []string
	for _, w := range got {
		order = append(order, string(w.Severity)+" "+string(w.Code)+" "+w.Job+"/"+w.Repository)
	}
	want := []string{
		"critical scheduler_offline /",
		"critical repository_unavailable /disk",
		"critical backup_stale b/disk",
		"warning last_run_failed home/disk",
		"info job_paused a/disk",
		"info schedule_disabled a/disk",
	}
	if !slices.Equal(order, want) {
		t.Errorf("order:\n%s\nwant:\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
}

// TestCodesAreClosed checks that every code has a severity and Codes lists
// each once.
func TestCodesAreClosed(t *testing.T) {
	codes := Codes()
	if len(codes) != len(severities) {
		t.Errorf("Codes lists %d codes, severities has %d", len(codes), len(severities))
	}
	seen := map[Code]bool{}
	for _, c := range codes {
		if seen[c] {
			t.Errorf("%s listed twice", c)
		}
		seen[c] = true
		if c.Severity() == "" {
			t.Errorf("%s has no severity", c)
		}
	}
}

func dump(ws []Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(string(w.Severity) + " " + string(w.Code) + " job=" + w.Job + " repository=" + w.Repository + ": " + w.Message + "\n")
	}
	return b.String()
}

// Times in messages are RFC 3339 in UTC, as JSON has them, or, with a
// TimeZone, in that zone as human output prints times.
func TestMessageTimesFollowTheTimeZone(t *testing.T) {
	now := time.Date(2026, 12, 1, 3, 30, 0, 0, time.UTC)
	st := State{Now: now, Passes: []Pass{{At: now, Host: "h", Mode: "tick"}},
		Jobs: []Job{{Name: "home", Repository: "disk", RPO: time.Hour, NextRun: time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)}}}
	tokyo := time.FixedZone("JST", 9*3600)
	for _, tc := range []struct {
		zone *time.Location
		want string
	}{
		{nil, "no good snapshot yet; next run: 2026-12-01T04:00:00Z"},
		{tokyo, "no good snapshot yet; next run: 2026-12-01 13:00:00"},
	} {
		st.TimeZone = tc.zone
		warnings := Evaluate(st)
		if len(warnings) != 1 || warnings[0].Message != tc.want {
			t.Errorf("zone %v: warnings %+v, want one saying %q", tc.zone, warnings, tc.want)
		}
	}
}
