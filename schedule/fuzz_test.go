package schedule

import (
	"strings"
	"testing"
	"time"
)

// Run with: go test ./schedule -fuzz FuzzParseCron (or FuzzParseSpec).
// Without -fuzz the seeds run as ordinary tests.

var fuzzFrom = time.Date(2026, 3, 28, 23, 17, 0, 0, time.UTC)

// checkParsed holds what every parse result must satisfy: a rejection is
// one lower-case line naming the spec; an accepted schedule has words, a
// normal form that parses to the same schedule, and slots that increase.
func checkParsed(t *testing.T, spec string, loc *time.Location) {
	s, err := Parse(spec, loc)
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "schedule ") || strings.ContainsAny(msg, "\n\r") {
			t.Fatalf("Parse(%q): message %q is not one line starting with the spec", spec, msg)
		}
		return
	}
	if s.Description() == "" {
		t.Fatalf("Parse(%q): empty description", spec)
	}
	again, err := Parse(s.String(), loc)
	if err != nil || again.String() != s.String() || again.Description() != s.Description() {
		t.Fatalf("Parse(%q).String() = %q does not parse back to the same schedule: %v", spec, s.String(), err)
	}
	prev := fuzzFrom
	for _, slot := range s.Preview(fuzzFrom, 5) {
		if !slot.Time.After(prev) {
			t.Fatalf("Parse(%q): slot %s does not follow %s", spec, slot.Time, prev)
		}
		prev = slot.Time
	}
	if next, ok := s.Next(fuzzFrom); ok != (s.kind != kindManual) || (ok && next.Before(fuzzFrom)) {
		t.Fatalf("Parse(%q): Next = %s, %v", spec, next, ok)
	}
}

func FuzzParseCron(f *testing.F) {
	for _, seed := range []string{
		"* * * * *", "*/15 9-17 * * mon-fri", "0 0 13 * 5", "0 0 30 2 *", "0 0 29 2 *",
		"@daily", "@reboot", "0 0 0 * * *", "5/15 * * * *", "0 22-2 * * *", "0 0 * * sat-sun",
		"1,,2 * * * *", "*/0 * * * *", "*/90 * * * *", "0 0 L * *", "0 0 * * 1#2", "- - - - -",
		"0 0 31 4,6,9,11 *", "99999999999999999999 * * * *", "0-59/59 0-23/23 1-31/30 1-12/11 0-7/7",
	} {
		f.Add(seed)
	}
	berlin, err := LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		checkParsed(t, "cron "+expr, berlin)
	})
}

func FuzzParseSpec(f *testing.F) {
	for _, seed := range []string{
		"manual", "every 6h", "every 90m", "every 1d12h", "hourly :30", "every 2 hours :15",
		"daily 02:00", "every 3 days 02:00", "weekly sat,sun 22:00", "every 2 weeks mon 01:00",
		"monthly 1,-1 03:00", "monthly 31 03:00", "cron @hourly", "every 6", "every 6 hours",
		"every 0 days 01:00", "daily 2:5", "weekly fri-mon 01:00", "monthly -32 01:00",
		"every 9999999w", "hourly :", "", "EVERY 5 HOURS :00",
	} {
		f.Add(seed, "Europe/Berlin")
	}
	f.Add("daily 02:00", "Pacific/Apia")
	f.Add("hourly :45", "Australia/Lord_Howe")
	f.Fuzz(func(t *testing.T, spec, zone string) {
		loc, err := LoadLocation(zone)
		if err != nil {
			return
		}
		checkParsed(t, spec, loc)
	})
}
