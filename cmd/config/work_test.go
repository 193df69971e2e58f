package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// workConfig is a repository whose table ends with repoLines and a job a
// whose table ends with jobLines, then extra.
func workConfig(repoLines, jobLines, extra string) string {
	return goodRepo + repoLines + "\n[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\npriority = \"high\"\n" +
		jobLines + "\n[[job.source]]\npath = \"/x\"\n" + extra
}

// The prune key of a repository and the drill key of a job take every
// form a job's schedule takes, in the repository's time_zone (UTC when it
// names none) and in the job's, and become jobs of their own.
func TestScheduledWorkAccepted(t *testing.T) {
	cases := []struct {
		name      string
		repoLines string
		jobLines  string
		job       string // the scheduled work's job
		kind      string
		next      time.Time // its first slot after testNow (Sunday 2026-11-29 12:00 UTC)
		zone      string
	}{
		{name: "weekly prune, UTC by default", repoLines: `prune = "weekly sun 04:00"`, job: "repository:local", kind: pass.KindPrune,
			next: time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC), zone: "UTC"},
		{name: "prune in the repository's zone", repoLines: "prune = \"daily 04:00\"\ntime_zone = \"Europe/Berlin\"", job: "repository:local", kind: pass.KindPrune,
			next: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC), zone: "Europe/Berlin"},
		{name: "prune by interval", repoLines: `prune = "every 6h"`, job: "repository:local", kind: pass.KindPrune, zone: "UTC"},
		{name: "prune by cron", repoLines: `prune = "cron 30 3 * * 0"`, job: "repository:local", kind: pass.KindPrune,
			next: time.Date(2026, 12, 6, 3, 30, 0, 0, time.UTC), zone: "UTC"},
		{name: "prune only on request", repoLines: `prune = "manual"`, job: "repository:local", kind: pass.KindPrune, zone: "UTC"},
		{name: "monthly drill", jobLines: `drill = "monthly 1 03:00"`, job: "a:drill", kind: pass.KindDrill,
			next: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC), zone: "UTC"},
		{name: "drill in the job's zone", jobLines: "drill = \"monthly 1 03:00\"\ntime_zone = \"America/New_York\"", job: "a:drill", kind: pass.KindDrill,
			next: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), zone: "America/New_York"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("/etc/nightjar/config.toml", workConfig(tc.repoLines, tc.jobLines, ""), testNow)
			if err != nil {
				t.Fatal(err)
			}
			work := cfg.ScheduledWork()
			if len(work) != 1 {
				t.Fatalf("scheduled work %+v, want one job", work)
			}
			w := work[0]
			if w.Name != tc.job || w.Kind != tc.kind || w.Repository != "local" || len(w.Sources) != 0 || len(w.DependsOn) != 0 {
				t.Errorf("scheduled work %+v, want job %s of kind %s on repository local, without sources or dependencies", w, tc.job, tc.kind)
			}
			if got := w.Schedule.Location().String(); got != tc.zone {
				t.Errorf("zone %s, want %s", got, tc.zone)
			}
			if !tc.next.IsZero() {
				if next, _ := w.Schedule.Next(testNow); !next.Equal(tc.next) {
					t.Errorf("first slot %s, want %s", next.UTC(), tc.next)
				}
			}
			if tc.kind == pass.KindDrill && (w.ForJob != "a" || w.Priority != "high") {
				t.Errorf("drill %+v, want it for job a, with a's priority", w)
			}
			defs := cfg.JobDefs()
			if _, ok := defs[tc.job]; !ok || len(defs) != 2 || defs["a"].Kind != "" {
				t.Errorf("JobDefs %v, want job a and %s", defs, tc.job)
			}
		})
	}
	cfg, err := Parse("/etc/nightjar/config.toml", workConfig("", "", ""), testNow)
	if err != nil {
		t.Fatal(err)
	}
	if work := cfg.ScheduledWork(); len(work) != 0 {
		t.Errorf("a config without prune or drill keys has scheduled work %+v", work)
	}
}

// Each problem of the new keys is one line naming the key, its line and
// what is allowed; windows may name scheduled work, and one that leaves it
// no instant is refused as for a job.
func TestScheduledWorkRejected(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string
	}{
		{name: "bad prune", text: workConfig(`prune = "weekly sun 25:00"`, "", ""),
			want: []string{"config.toml:5:", "repository.local.prune", "25:00"}},
		{name: "bad drill", text: workConfig("", `drill = "monthly 32 03:00"`, ""),
			want: []string{"config.toml:11:", "job[0].drill", "32"}},
		{name: "unknown repository time zone", text: workConfig("prune = \"daily 04:00\"\ntime_zone = \"Mars/Olympus\"", "", ""),
			want: []string{"config.toml:6:", "repository.local.time_zone", "Mars/Olympus", "IANA"}},
		{name: "misspelt prune lists the allowed keys", text: workConfig(`prun = "daily 04:00"`, "", ""),
			want: []string{"repository.local.prun", "unknown key", "prune, time_zone"}},
		{name: "misspelt drill lists the allowed keys", text: workConfig("", `dril = "daily 04:00"`, ""),
			want: []string{"job[0].dril", "unknown key", "drill"}},
		{name: "window naming maintenance that does not exist", text: workConfig("", "", "[[window]]\nkind = \"blackout\"\nstart = \"daily 01:00\"\nduration = \"1h\"\njobs = [\"repository:local\"]\n"),
			want: []string{"window[0].jobs", `unknown job "repository:local"`}},
		{name: "window leaving the maintenance no instant", text: workConfig(`prune = "daily 04:00"`, "",
			"[[window]]\nkind = \"blackout\"\nfrom = \"2026-11-01T00:00:00Z\"\nuntil = \"2027-06-01T00:00:00Z\"\njobs = [\"repository:local\"]\n"),
			want: []string{"repository.local.prune", "no instant within 31 days"}},
		{name: "window leaving the drills no instant", text: workConfig("", `drill = "daily 04:00"`,
			"[[window]]\nkind = \"blackout\"\nfrom = \"2026-11-01T00:00:00Z\"\nuntil = \"2027-06-01T00:00:00Z\"\njobs = [\"a:drill\"]\n"),
			want: []string{"job[0].drill", "no instant within 31 days"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/etc/nightjar/config.toml", tc.text, testNow)
			var invalid *ErrInvalid
			if !errors.As(err, &invalid) {
				t.Fatalf("err = %v, want *ErrInvalid", err)
			}
			for _, p := range invalid.Problems {
				if containsAll(p, tc.want) {
					if strings.Contains(p, "\n") {
						t.Errorf("problem %q is more than one line", p)
					}
					return
				}
			}
			t.Fatalf("no problem contains %q; problems:\n%s", tc.want, strings.Join(invalid.Problems, "\n"))
		})
	}
}

// A window may name scheduled work by its job's name.
func TestWindowsNameScheduledWork(t *testing.T) {
	text := workConfig(`prune = "weekly sun 04:00"`, `drill = "monthly 1 03:00"`,
		"[[window]]\nkind = \"blackout\"\nstart = \"daily 08:00\"\nduration = \"10h\"\njobs = [\"repository:local\", \"a:drill\"]\n")
	cfg, err := Parse("/etc/nightjar/config.toml", text, testNow)
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Windows[0]
	for _, name := range []string{"repository:local", "a:drill"} {
		if !w.AppliesTo(name) {
			t.Errorf("the window does not apply to %s", name)
		}
	}
	if w.AppliesTo("a") {
		t.Errorf("the window applies to job a, which it does not name")
	}
}

// The example config shows both keys.
func TestExampleConfigHasScheduledWork(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "..", "config.example.toml"), testNow)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range cfg.ScheduledWork() {
		names = append(names, w.Name+" "+w.Kind)
	}
	if strings.Join(names, ", ") != "sample:drill drill, repository:demo prune" {
		t.Errorf("scheduled work of config.example.toml: %v, want sample's drills and demo's maintenance", names)
	}
}
