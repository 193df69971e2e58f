package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// retentionJob is a job whose retention line (line 9 of the text) is given.
func retentionJob(line string) string {
	return goodRepo + "[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\n" + line + "\n[[job.source]]\npath = \"/x\"\n"
}

func TestRetentionAccepted(t *testing.T) {
	within30d, err := schedule.ParseCalendarDuration("30d")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		line string
		want pass.RetentionDef
	}{
		{name: "a job that names none gets the default", line: "", want: pass.RetentionDef{Enabled: true, Policy: schedule.RetentionPolicy{Daily: 7, Weekly: 4, Monthly: 6}}},
		{name: "off turns it off", line: `retention = "off"`, want: pass.RetentionDef{}},
		{name: "last alone", line: "retention = { last = 2 }", want: pass.RetentionDef{Enabled: true, Policy: schedule.RetentionPolicy{Last: 2}}},
		{name: "every rule", line: `retention = { last = 1, hourly = 24, daily = 366, weekly = 260, monthly = 120, yearly = -1, within = "30d" }`,
			want: pass.RetentionDef{Enabled: true, Policy: schedule.RetentionPolicy{Last: 1, Hourly: 24, Daily: 366, Weekly: 260, Monthly: 120, Yearly: -1, Within: within30d}}},
		{name: "a table of its own", line: "[job.retention]\nweekly = 4", want: pass.RetentionDef{Enabled: true, Policy: schedule.RetentionPolicy{Weekly: 4}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("/etc/nightjar/config.toml", retentionJob(tc.line), testNow)
			if err != nil {
				t.Fatal(err)
			}
			got := cfg.Jobs[0].Def.Retention
			if got.Enabled != tc.want.Enabled || got.Policy.String() != tc.want.Policy.String() {
				t.Errorf("retention = %+v (%s), want %+v (%s)", got, got.Policy, tc.want, tc.want.Policy)
			}
		})
	}
}

func TestRetentionRejected(t *testing.T) {
	cases := []struct {
		name string
		line string
		want []string // substrings of the one problem
	}{
		{name: "too many days", line: "retention = { daily = 367 }", want: []string{"retention daily = 367 is out of range: allowed 0 to 366"}},
		{name: "too many weeks", line: "retention = { weekly = 261 }", want: []string{"retention weekly = 261 is out of range: allowed 0 to 260"}},
		{name: "too many months", line: "retention = { monthly = 121 }", want: []string{"retention monthly = 121 is out of range: allowed 0 to 120"}},
		{name: "below unlimited", line: "retention = { last = -2 }", want: []string{"retention last = -2 is out of range"}},
		{name: "unlimited days are over the limit", line: "retention = { daily = -1 }", want: []string{"retention daily = -1 is out of range: allowed 0 to 366"}},
		{name: "keeps nothing", line: "retention = { daily = 0 }", want: []string{"keeps nothing"}},
		{name: "empty table keeps nothing", line: "retention = {}", want: []string{"keeps nothing"}},
		{name: "unknown rule", line: "retention = { dayly = 7 }", want: []string{`unknown key "dayly"`, "last, hourly, daily, weekly, monthly, yearly, within"}},
		{name: "tag is forget's, not a job's", line: `retention = { tag = "keep" }`, want: []string{`unknown key "tag"`}},
		{name: "a count that is text", line: `retention = { daily = "7" }`, want: []string{"daily: want a whole number"}},
		{name: "within that is a number", line: "retention = { within = 30 }", want: []string{"within: want a duration"}},
		{name: "within that does not parse", line: `retention = { within = "30 fortnights" }`, want: []string{"within:"}},
		{name: "a word other than off", line: `retention = "on"`, want: []string{`"on" is not allowed: want "off"`}},
		{name: "neither text nor table", line: "retention = 7", want: []string{`want "off" or a table`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/etc/nightjar/config.toml", retentionJob(tc.line), testNow)
			var invalid *ErrInvalid
			if !errors.As(err, &invalid) {
				t.Fatalf("err = %v, want *ErrInvalid", err)
			}
			if len(invalid.Problems) != 1 {
				t.Fatalf("problems = %q, want exactly one", invalid.Problems)
			}
			want := append([]string{"/etc/nightjar/config.toml:9: job[0].retention: "}, tc.want...)
			if p := invalid.Problems[0]; !containsAll(p, want) || strings.Contains(p, "\n") {
				t.Errorf("problem = %q, want one line with %q", p, want)
			}
		})
	}
}

func TestRetentionCountsInTheJobsZone(t *testing.T) {
	cfg, err := Parse("/etc/nightjar/config.toml", strings.Replace(retentionJob("retention = { daily = 2 }"), "schedule =", "time_zone = \"Asia/Tokyo\"\nschedule =", 1), testNow)
	if err != nil {
		t.Fatal(err)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	if got := cfg.Jobs[0].Def.Schedule.Location(); got.String() != tokyo.String() {
		t.Errorf("the job's retention counts in %v, want Asia/Tokyo", got)
	}
}
