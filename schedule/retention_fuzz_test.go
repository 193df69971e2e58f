package schedule

import (
	"strings"
	"testing"
	"time"
)

// Run with: go test ./schedule -fuzz FuzzParseCalendarDuration
// Without -fuzz the seeds run as ordinary tests.

// FuzzParseCalendarDuration holds what every parse must satisfy: a rejection
// is one line naming the duration; an accepted duration is not zero, writes
// itself in a form that parses back to the same value, and reaches back in
// time from any instant in any zone without panicking.
func FuzzParseCalendarDuration(f *testing.F) {
	for _, seed := range []string{
		"30d", "1y2m", "2y5m7d3h", "12h", "0d", "1y0m", "", " ", "1d1y", "1d2d", "-1d", "1.5d",
		"5min", "3days", "1Y", "½d", "1000000h", "1000001d", "99999999999999999999y", "y", "1", "1h30m",
		"0y0m0d0h", "007d", "1y\n", "1y 2m",
	} {
		f.Add(seed)
	}
	zones := []*time.Location{time.UTC, mustZone(f, "Europe/Berlin"), mustZone(f, "America/New_York")}
	from := time.Date(2024, 3, 31, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		d, err := ParseCalendarDuration(text)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "duration ") || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("ParseCalendarDuration(%q): message %q is not one line about the duration", text, msg)
			}
			return
		}
		if d.IsZero() {
			t.Fatalf("ParseCalendarDuration(%q) accepted a zero duration", text)
		}
		again, err := ParseCalendarDuration(d.String())
		if err != nil || again != d {
			t.Fatalf("ParseCalendarDuration(%q) = %+v writes as %q, which parses to %+v, %v", text, d, d.String(), again, err)
		}
		if err := (RetentionPolicy{Within: d}).Validate(); err != nil {
			t.Fatalf("a parsed duration %q fails validation: %v", text, err)
		}
		for _, loc := range zones {
			if before := d.Before(from.In(loc)); !before.Before(from) {
				t.Fatalf("%s before %s is %s, not earlier", d, from.In(loc), before)
			}
		}
	})
}
