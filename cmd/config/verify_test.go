package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// verifyConfig is a repository with the line repoLine (line 5) and a job
// with the line jobLine (line 10).
func verifyConfig(repoLine, jobLine string) string {
	return "\n[repository.local]\npath = \"/backup/repo\"\npassword_file = \"/etc/nightjar/local.pass\"\n" + repoLine +
		"\n[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\n" + jobLine + "\n[[job.source]]\npath = \"/x\"\n"
}

func TestVerifyKeysAccepted(t *testing.T) {
	cases := []struct {
		name      string
		repoLine  string
		jobLine   string
		enabled   bool
		deepEvery time.Duration
	}{
		{name: "defaults: on, deep every 7 days", enabled: true, deepEvery: 7 * 24 * time.Hour},
		{name: "a duration", repoLine: `deep_verify_every = "1d12h"`, enabled: true, deepEvery: 36 * time.Hour},
		{name: "always", repoLine: `deep_verify_every = "always"`, enabled: true, deepEvery: 0},
		{name: "never", repoLine: `deep_verify_every = "never"`, enabled: true, deepEvery: -1},
		{name: "verify on", jobLine: `verify = "on"`, enabled: true, deepEvery: 7 * 24 * time.Hour},
		{name: "verify off", jobLine: `verify = "off"`, enabled: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("/etc/nightjar/config.toml", verifyConfig(tc.repoLine, tc.jobLine), testNow)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Jobs[0].Def.Verify
			if got.Enabled != tc.enabled || (tc.enabled && got.DeepEvery != tc.deepEvery) {
				t.Errorf("verify = %+v, want enabled %v, deep every %s", got, tc.enabled, tc.deepEvery)
			}
		})
	}
}

func TestVerifyKeysRejected(t *testing.T) {
	cases := []struct {
		name     string
		repoLine string
		jobLine  string
		want     []string // substrings of the one problem
	}{
		{name: "not a duration", repoLine: `deep_verify_every = "weekly"`,
			want: []string{`:5: repository.local.deep_verify_every: "weekly" is not allowed: want a duration such as "7d"`, `"always"`, `"never"`}},
		{name: "zero", repoLine: `deep_verify_every = "0s"`, want: []string{`:5: repository.local.deep_verify_every: "0s" is not allowed`}},
		{name: "too long", repoLine: `deep_verify_every = "3661d"`, want: []string{`"3661d" is not allowed`, "up to 3660d"}},
		{name: "a number", repoLine: `deep_verify_every = 7`, want: []string{"line 5", "deep_verify_every"}},
		{name: "verify neither on nor off", jobLine: `verify = "deep"`, want: []string{`:10: job[0].verify: "deep" is not allowed: want "on"`, `"off"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/etc/nightjar/config.toml", verifyConfig(tc.repoLine, tc.jobLine), testNow)
			var invalid *ErrInvalid
			if !errors.As(err, &invalid) {
				t.Fatalf("err = %v, want *ErrInvalid", err)
			}
			if len(invalid.Problems) != 1 {
				t.Fatalf("problems = %q, want exactly one", invalid.Problems)
			}
			if p := invalid.Problems[0]; !containsAll(p, tc.want) || strings.Contains(p, "\n") {
				t.Errorf("problem = %q, want one line with %q", p, tc.want)
			}
		})
	}
}
