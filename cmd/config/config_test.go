package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const goodRepo = `
[repository.local]
path = "/backup/repo"
password_file = "/etc/nightjar/local.pass"
`

func TestExampleConfigLoads(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "..", "config.example.toml"), testNow)
	if err != nil {
		t.Fatalf("config.example.toml: %v", err)
	}
	if len(cfg.Jobs) != 1 || cfg.Jobs[0].Def.Name != "sample" {
		t.Fatalf("jobs = %+v, want the one job sample", cfg.Jobs)
	}
	repo := cfg.Repositories["demo"]
	if !repo.CreateIfMissing || !filepath.IsAbs(repo.Path) || !filepath.IsAbs(repo.Password.File) {
		t.Errorf("repository demo = %+v: want create_if_missing and paths made absolute", repo)
	}
	if !filepath.IsAbs(cfg.Jobs[0].Sources[0].Path) {
		t.Errorf("source path %q is not absolute", cfg.Jobs[0].Sources[0].Path)
	}
	if repo.Compression != "default" {
		t.Errorf("repository demo compresses at %q, want default", repo.Compression)
	}
}

func TestRejections(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string // substrings of one problem line
	}{
		{
			name: "unknown key names its line and the allowed keys",
			text: goodRepo + "\n[[job]]\nname = \"a\"\nrepository = \"local\"\nschedul = \"daily 02:00\"\n",
			want: []string{":9:", "job[0].schedul", "unknown key", "schedule"},
		},
		{
			name: "a repository path with a scheme is refused, as -r refuses it",
			text: "[repository.offsite]\npath = \"sftp:u@h:/srv/repo\"\npassword_file = \"/pw\"\n",
			want: []string{"repository.offsite.path", `"sftp:u@h:/srv/repo" starts with the scheme "sftp"`, "./sftp:u@h:/srv/repo"},
		},
		{
			name: "unknown time zone is named",
			text: goodRepo + "[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\ntime_zone = \"Mars/Olympus\"\n[[job.source]]\npath = \"/x\"\n",
			want: []string{"time_zone", "Mars/Olympus"},
		},
		{
			name: "bad schedule",
			text: goodRepo + "[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 25:00\"\n[[job.source]]\npath = \"/x\"\n",
			want: []string{"job[0].schedule", "25:00"},
		},
		{
			name: "unknown repository lists the declared ones",
			text: goodRepo + "[[job]]\nname = \"a\"\nrepository = \"remote\"\nschedule = \"daily 02:00\"\n[[job.source]]\npath = \"/x\"\n",
			want: []string{"unknown repository \"remote\"", "declared: local"},
		},
		{
			name: "dependency cycle is spelled out",
			text: goodRepo + job("a", "b") + job("b", "c") + job("c", "a"),
			want: []string{"dependency cycle: a → b → c → a"},
		},
		{
			name: "self dependency",
			text: goodRepo + job("a", "a"),
			want: []string{"job \"a\" depends on itself"},
		},
		{
			name: "unknown dependency",
			text: goodRepo + job("a", "nope"),
			want: []string{"unknown job \"nope\""},
		},
		{
			name: "duplicate job",
			text: goodRepo + job("a", "") + job("a", ""),
			want: []string{"job \"a\" is declared twice"},
		},
		{
			name: "rpo the schedule cannot meet",
			text: goodRepo + "[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\nrpo = \"4h\"\n[[job.source]]\npath = \"/x\"\n",
			want: []string{"job[0].rpo", "cannot meet the recovery point objective of 4 hours"},
		},
		{
			name: "a command source without a name is refused, not skipped",
			text: goodRepo + "[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\n[[job.source]]\ncommand = \"pg_dump\"\n",
			want: []string{"job[0].source[0].name", "a command source needs name"},
		},
		{
			name: "unknown compression level lists the allowed ones",
			text: strings.Replace(goodRepo, "[repository.local]\n", "[repository.local]\ncompression = \"max\"\n", 1),
			want: []string{"repository.local.compression", `"max"`, "off, fastest, default or better"},
		},
		{
			name: "zero bandwidth",
			text: goodRepo + "[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\nbandwidth = \"0\"\n[[job.source]]\npath = \"/x\"\n",
			want: []string{"job[0].bandwidth"},
		},
		{
			name: "stale_after too close to the heartbeat",
			text: "[scheduler]\nheartbeat = \"1m\"\nstale_after = \"2m\"\n" + goodRepo,
			want: []string{"scheduler.stale_after", "three heartbeats"},
		},
		{
			name: "password in no source",
			text: "[repository.local]\npath = \"/r\"\n",
			want: []string{"repository.local", "exactly one of password_file"},
		},
		{
			name: "bad priority",
			text: goodRepo + "[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\npriority = \"urgent\"\n[[job.source]]\npath = \"/x\"\n",
			want: []string{"\"urgent\" is not one of low, normal, high, critical"},
		},
		{
			name: "window with no free instant",
			text: goodRepo + job("a", "") + "[[window]]\nkind = \"blackout\"\nfrom = \"2026-11-01T00:00:00Z\"\nuntil = \"2027-06-01T00:00:00Z\"\n",
			want: []string{"no instant within 31 days"},
		},
		{
			name: "syntax error names the line",
			text: "[scheduler\n",
			want: []string{"config.toml:2:", "table name"},
		},
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
					return
				}
			}
			t.Fatalf("no problem contains %q; problems:\n%s", tc.want, strings.Join(invalid.Problems, "\n"))
		})
	}
}

func job(name, dependsOn string) string {
	s := "[[job]]\nname = \"" + name + "\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\n"
	if dependsOn != "" {
		s += "depends_on = [\"" + dependsOn + "\"]\n"
	}
	return s + "[[job.source]]\npath = \"/x\"\n"
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestEveryProblemIsReportedOnce(t *testing.T) {
	text := goodRepo + "[[job]]\nname = \"a\"\nrepository = \"nope\"\nschedule = \"weekly fun 01:00\"\npriority = \"x\"\n[[job.source]]\npath = \"/x\"\n"
	_, err := Parse("/c.toml", text, testNow)
	var invalid *ErrInvalid
	if !errors.As(err, &invalid) || len(invalid.Problems) != 3 {
		t.Fatalf("err = %v, want three problems", err)
	}
	if !strings.Contains(err.Error(), "and 2 more problems") {
		t.Errorf("Error() = %q, want it to say how many more problems there are", err.Error())
	}
}

// The retry defaults give 3 retries with jitter on; retry.jitter = false
// turns the jitter off and keeps the other defaults.
func TestRetryDefaultsAndJitter(t *testing.T) {
	cases := []struct {
		name     string
		retry    string
		attempts int
		noJitter bool
	}{
		{name: "defaults", retry: "", attempts: 4},
		{name: "jitter off", retry: "retry = { jitter = false }\n", attempts: 4, noJitter: true},
		{name: "jitter on, one attempt", retry: "retry = { attempts = 1, jitter = true }\n", attempts: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := goodRepo + "[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\n" + tc.retry + "[[job.source]]\npath = \"/x\"\n"
			cfg, err := Parse("/etc/nightjar/config.toml", text, testNow)
			if err != nil {
				t.Fatal(err)
			}
			r := cfg.Jobs[0].Def.Retry
			if r.Attempts != tc.attempts || r.NoJitter != tc.noJitter || r.Initial != 30*time.Second || r.Max != 15*time.Minute {
				t.Errorf("retry = %+v, want %d attempts from 30s to 15m, NoJitter %v", r, tc.attempts, tc.noJitter)
			}
		})
	}
}
