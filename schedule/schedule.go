package schedule

import (
	"fmt"
	"strings"
	"time"
)

type kind int

const (
	kindManual kind = iota
	kindInterval
	kindCalendar
)

// Schedule is a parsed schedule spec in a time zone; the zero Schedule is manual.
type Schedule struct {
	spec        string
	kind        kind
	interval    int64 // seconds, for kindInterval
	cal         *calendar
	loc         *time.Location
	description string
}

// Parse parses a schedule spec such as "daily 02:00" in loc (nil means UTC).
func Parse(spec string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	if loc == time.Local {
		return Schedule{}, fmt.Errorf("schedule %q: the machine's local time zone is never used: name an IANA zone, or UTC", spec)
	}
	fields := strings.Fields(strings.ToLower(spec))
	s, err := parseFields(fields, loc)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %w", spec, err)
	}
	s.spec = strings.Join(fields, " ")
	s.loc = loc
	return s, nil
}

// String returns the spec in its normal form: lower case, single spaces.
func (s Schedule) String() string {
	if s.spec == "" {
		return "manual"
	}
	return s.spec
}

// Description says in words when the schedule runs, with its time zone.
func (s Schedule) Description() string {
	if s.description == "" {
		return describeManual
	}
	return s.description
}

// Location returns the time zone the schedule runs in.
func (s Schedule) Location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}

// Next returns the first slot strictly after after, and false if the schedule has none (manual).
func (s Schedule) Next(after time.Time) (time.Time, bool) {
	for o := range s.slotsAfter(after) {
		return s.instant(o.at), true
	}
	return time.Time{}, false
}

// Slot is one slot of a preview, with a note when a daylight saving change moved or doubled it.
type Slot struct {
	Time time.Time // in the schedule's time zone
	Note string    // empty unless a daylight saving change touched the slot
}

// Preview returns the first n slots strictly after after.
func (s Schedule) Preview(after time.Time, n int) []Slot {
	slots := []Slot{}
	if n <= 0 {
		return slots
	}
	for o := range s.slotsAfter(after) {
		slots = append(slots, Slot{Time: s.instant(o.at), Note: s.note(o)})
		if len(slots) == n {
			break
		}
	}
	return slots
}

// slotsAfter is the sequence of slots strictly after after, in order.
func (s Schedule) slotsAfter(after time.Time) func(yield func(occurrence) bool) {
	return func(yield func(occurrence) bool) {
		switch s.kind {
		case kindInterval:
			// Interval slots are the whole multiples of the interval since
			// 1970-01-01 00:00 UTC: they do not depend on when a job was
			// created or last ran, and no time zone applies.
			for at := (floorDiv(after.Unix(), s.interval) + 1) * s.interval; yield(occurrence{at: at}); at += s.interval {
			}
		case kindCalendar:
			s.cal.slotsAfter(s.Location(), after.Unix(), yield)
		}
	}
}

func (s Schedule) instant(at int64) time.Time {
	return time.Unix(at, 0).In(s.Location())
}

// note explains how a daylight saving change touched a slot.
func (s Schedule) note(o occurrence) string {
	w := time.Unix(o.wall, 0).UTC()
	clock, date := w.Format("15:04"), w.Format("2006-01-02")
	switch o.note {
	case noteMovedFromGap:
		return fmt.Sprintf("%s does not exist on %s (the clocks go forward): runs when the gap ends", clock, date)
	case noteFirstOfTwo:
		if s.cal.anchored {
			return fmt.Sprintf("%s occurs twice on %s (the clocks go back): runs at the first only", clock, date)
		}
		return fmt.Sprintf("%s occurs twice on %s (the clocks go back): this is the first", clock, date)
	case noteSecondOfTwo:
		return fmt.Sprintf("%s occurs twice on %s (the clocks go back): this is the second", clock, date)
	case noteAfterSkipped:
		first, last := time.Unix(o.skippedFirst, 0).UTC(), time.Unix(o.skippedLast, 0).UTC()
		skipped := first.Format("15:04")
		if last.After(first) {
			skipped += " to " + last.Format("15:04")
		}
		return fmt.Sprintf("no run at %s on %s: the clocks go forward and that time does not exist", skipped, first.Format("2006-01-02"))
	}
	return ""
}
