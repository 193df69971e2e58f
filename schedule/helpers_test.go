package schedule

import (
	"testing"
	"time"
)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustParse(t testing.TB, spec string, loc *time.Location) Schedule {
	t.Helper()
	s, err := Parse(spec, loc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustTime(t testing.TB, text string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, text)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// slotsUTC returns the first n slots after from, as RFC 3339 in UTC.
func slotsUTC(s Schedule, from time.Time, n int) []string {
	var out []string
	for _, slot := range s.Preview(from, n) {
		out = append(out, slot.Time.UTC().Format(time.RFC3339))
	}
	return out
}

// allSlots returns every slot in [from, to).
func allSlots(s Schedule, from, to time.Time) []time.Time {
	var out []time.Time
	for o := range s.slotsAfter(from.Add(-time.Second)) {
		if o.at >= to.Unix() {
			break
		}
		out = append(out, s.instant(o.at))
	}
	return out
}
