package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/notify"
)

// notifyConfig is job a with a [job.notify] whose one line is aLine
// (line 12), job b with the line bLine (line 21; an inline notify table
// or a comment), and a [notify] table whose one line is globalLine
// (line 26).
func notifyConfig(aLine, bLine, globalLine string) string {
	return "[repository.local]\npath = \"/backup/repo\"\npassword_file = \"/p\"\nprune = \"weekly sun 05:00\"\n" +
		"\n[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\ndrill = \"weekly sun 04:00\"\n" +
		"[job.notify]\n" + aLine + "\n\n[[job.source]]\npath = \"/x\"\n" +
		"\n[[job]]\nname = \"b\"\nrepository = \"local\"\nschedule = \"daily 03:00\"\n" + bLine + "\n[[job.source]]\npath = \"/y\"\n" +
		"\n[notify]\n" + globalLine + "\n"
}

func TestNotifyAccepted(t *testing.T) {
	cases := []struct {
		name                 string
		aLine, bLine, global string
		want                 map[string]notify.Route // by job name, scheduled work included
	}{
		{name: "nothing set", aLine: "# none", bLine: "# none", global: "# none",
			want: map[string]notify.Route{"a": {}, "a:drill": {}, "b": {}, "repository:local": {}}},
		{name: "global webhooks reach every job, the job's add to them",
			aLine: `webhooks = ["https://a.example/hook", "https://all.example/hook"]`, bLine: "# none",
			global: `webhooks = ["https://all.example/hook"]`,
			want: map[string]notify.Route{
				"a":                {Webhooks: []string{"https://all.example/hook", "https://a.example/hook"}},
				"a:drill":          {Webhooks: []string{"https://all.example/hook", "https://a.example/hook"}},
				"b":                {Webhooks: []string{"https://all.example/hook"}},
				"repository:local": {Webhooks: []string{"https://all.example/hook"}},
			}},
		{name: "a healthcheck is the job's own",
			aLine: `healthcheck = "https://hc-ping.com/UUID-A"`, bLine: `notify = { healthcheck = "http://127.0.0.1:8000/ping/UUID-B" }`, global: "# none",
			want: map[string]notify.Route{
				"a": {Healthcheck: "https://hc-ping.com/UUID-A"}, "a:drill": {Healthcheck: "https://hc-ping.com/UUID-A"},
				"b": {Healthcheck: "http://127.0.0.1:8000/ping/UUID-B"}, "repository:local": {},
			}},
		{name: "kinds, timeout and attempts: the job's replace the global ones",
			aLine: `kinds = ["backup", "drill"]`, bLine: `notify = { timeout = "30s", attempts = 1 }`,
			global: `kinds = ["backup", "verify"]` + "\ntimeout = \"5s\"\nattempts = 5",
			want: map[string]notify.Route{
				"a":                {Kinds: []string{"backup", "drill"}, Timeout: 5 * time.Second, Attempts: 5},
				"a:drill":          {Kinds: []string{"backup", "drill"}, Timeout: 5 * time.Second, Attempts: 5},
				"b":                {Kinds: []string{"backup", "verify"}, Timeout: 30 * time.Second, Attempts: 1},
				"repository:local": {Kinds: []string{"backup", "verify"}, Timeout: 5 * time.Second, Attempts: 5},
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("/etc/nightjar/config.toml", notifyConfig(tc.aLine, tc.bLine, tc.global), testNow)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.NotifyRoutes()
			if len(got) != len(tc.want) {
				t.Errorf("routes for %d jobs, want %d: %+v", len(got), len(tc.want), got)
			}
			for name, want := range tc.want {
				r := got[name]
				if !slices.Equal(r.Webhooks, want.Webhooks) || r.Healthcheck != want.Healthcheck || !slices.Equal(r.Kinds, want.Kinds) ||
					r.Timeout != want.Timeout || r.Attempts != want.Attempts {
					t.Errorf("route of %s = %+v, want %+v", name, r, want)
				}
			}
		})
	}
}

func TestNotifyRejected(t *testing.T) {
	cases := []struct {
		name                 string
		aLine, bLine, global string
		want                 []string // parts of the one problem
	}{
		{name: "a webhook that is not http", aLine: `webhooks = ["https://ok.example/", "ftp://files.example/SECRET"]`,
			want: []string{":12: job[0].notify.webhooks: element 2: not an http:// or https:// URL with a host: its scheme is ftp", "not shown"}},
		{name: "a webhook without a scheme", global: `webhooks = ["hooks.example.com/SECRET"]`,
			want: []string{":26: notify.webhooks: element 1: not an http:// or https:// URL with a host: its scheme is none"}},
		{name: "a healthcheck without a host", aLine: `healthcheck = "https:///SECRET"`,
			want: []string{":12: job[0].notify.healthcheck: not an http:// or https:// URL with a host: it names no host"}},
		{name: "a healthcheck for every job", global: `healthcheck = "https://hc-ping.com/SECRET"`,
			want: []string{":26: notify.healthcheck: not allowed in [notify]: a healthcheck watches one job, set it in that job's [job.notify]"}},
		{name: "two jobs share a healthcheck", aLine: `healthcheck = "https://hc-ping.com/SECRET"`, bLine: `notify = { healthcheck = "https://hc-ping.com/SECRET" }`,
			want: []string{"job[1].notify.healthcheck: job a pings the same healthcheck: a dead man's switch watches one job"}},
		{name: "an unknown kind", aLine: `kinds = ["backups"]`,
			want: []string{`:12: job[0].notify.kinds: "backups" is not a run kind: want some of backup, verify, retention, prune, drill`}},
		{name: "no kinds", global: `kinds = []`, want: []string{":26: notify.kinds: empty: name the run kinds"}},
		{name: "a timeout too short", aLine: `timeout = "100ms"`,
			want: []string{`:12: job[0].notify.timeout: "100ms" is not allowed: want a duration from 1s to 5m, such as "10s"`}},
		{name: "a timeout that is not a duration", global: `timeout = "soon"`, want: []string{`:26: notify.timeout: "soon" is not allowed`}},
		{name: "no attempt", aLine: `attempts = 0`, want: []string{":12: job[0].notify.attempts: 0 is not allowed: want 1 to 10 attempts in all"}},
		{name: "an unknown key", aLine: `webhook = "https://x.example/"`,
			want: []string{":12: job[0].notify.webhook: unknown key (allowed here: webhooks, healthcheck, kinds, timeout, attempts)"}},
		{name: "an unknown global key", global: `url = "https://x.example/"`,
			want: []string{":26: notify.url: unknown key (allowed here: webhooks, healthcheck, kinds, timeout, attempts)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b, g := tc.aLine, tc.bLine, tc.global
			for _, s := range []*string{&a, &b, &g} {
				if *s == "" {
					*s = "# none"
				}
			}
			_, err := Parse("/etc/nightjar/config.toml", notifyConfig(a, b, g), testNow)
			var invalid *ErrInvalid
			if !errors.As(err, &invalid) {
				t.Fatalf("err = %v, want *ErrInvalid", err)
			}
			if len(invalid.Problems) != 1 {
				t.Fatalf("problems = %q, want exactly one", invalid.Problems)
			}
			p := invalid.Problems[0]
			if !containsAll(p, tc.want) || strings.Contains(p, "\n") {
				t.Errorf("problem = %q, want one line with %q", p, tc.want)
			}
			if strings.Contains(p, "SECRET") {
				t.Errorf("problem %q shows a URL's secret part", p)
			}
		})
	}
}
