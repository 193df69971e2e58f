package schedule

import (
	"math/bits"
	"sort"
	"time"
)

// calendar is a schedule stated in local wall-clock terms: the minutes,
// hours, days, months and weekdays on which it runs. Every calendar kind
// (hourly, daily, weekly, monthly, cron) compiles to one.
type calendar struct {
	minutes     uint64 // bit m: minute m (0-59)
	hours       uint32 // bit h: hour h (0-23)
	days        uint32 // bit d: day of month d (1-31)
	daysFromEnd uint32 // bit n: the nth-to-last day of the month (1 is the last day)
	months      uint16 // bit m: month m (1-12)
	weekdays    uint8  // bit w: weekday w (0 is Sunday)
	// dayOr applies cron's special rule: when both the day of month and the
	// day of week are restricted, a day matching either runs.
	dayOr bool
	// everyHours, everyDays and everyWeeks, when above 1, keep only every
	// nth local hour, day or week, counted from 1970-01-01 00:00 local
	// time (weeks from Monday 1970-01-05), so that the pattern does not
	// restart each day, month or year.
	everyHours, everyDays, everyWeeks int
	// anchored marks a schedule tied to a time of day (daily, weekly,
	// monthly and cron with fixed minute and hour): at a daylight saving
	// change its slots move out of a gap and run once in an overlap. The
	// others repeat within the day and follow the local clock exactly.
	anchored bool
}

const (
	allHours    = uint32(1)<<24 - 1
	allDays     = ^uint32(1)        // bits 1..31
	allMonths   = uint16(1)<<13 - 2 // bits 1..12
	allWeekdays = uint8(1)<<7 - 1
)

// epochMonday is the day number of Monday 1970-01-05, from which weeks count.
const epochMonday = 4

// slotNote says how a daylight saving change touched a slot.
type slotNote int

const (
	notePlain        slotNote = iota
	noteMovedFromGap          // the reading did not exist; the slot runs when the gap ends
	noteFirstOfTwo            // the reading occurred twice; this is the first
	noteSecondOfTwo           // the reading occurred twice; this is the second
	noteAfterSkipped          // the first slot after repeating slots that a gap removed
)

// occurrence is one slot: an instant, the wall reading it was meant for,
// and how a daylight saving change touched it.
type occurrence struct {
	at   int64 // unix seconds
	wall int64 // wall seconds of the reading the slot stands for
	note slotNote
	// skippedFirst and skippedLast are the first and last readings a gap
	// removed just before a slot noted noteAfterSkipped.
	skippedFirst, skippedLast int64
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// matchesDay reports whether the calendar runs on the given local date.
func (c *calendar) matchesDay(date time.Time) bool {
	y, m, d := date.Date()
	if c.months&(1<<m) == 0 {
		return false
	}
	dayNumber := floorDiv(date.Unix(), 86400)
	if c.everyDays > 1 && floorMod(dayNumber, int64(c.everyDays)) != 0 {
		return false
	}
	if c.everyWeeks > 1 && floorMod(floorDiv(dayNumber-epochMonday, 7), int64(c.everyWeeks)) != 0 {
		return false
	}
	fromEnd := daysIn(y, m) - d + 1
	dom := c.days&(1<<d) != 0 || c.daysFromEnd&(1<<fromEnd) != 0
	dow := c.weekdays&(1<<date.Weekday()) != 0
	if c.dayOr {
		return dom || dow
	}
	return dom && dow
}

// daySlots returns the slots of the local date (a midnight in UTC standing
// for a civil date), in order.
func (c *calendar) daySlots(loc *time.Location, date time.Time) []occurrence {
	if !c.matchesDay(date) {
		return nil
	}
	midnight := date.Unix()
	const margin = 26 * 3600
	zone := periodsBetween(loc, midnight-margin, midnight+86400+margin)
	dayNumber := floorDiv(midnight, 86400)
	var slots, skipped []occurrence
	for hs := c.hours; hs != 0; hs &= hs - 1 {
		h := int64(bits.TrailingZeros32(hs))
		if c.everyHours > 1 && floorMod(dayNumber*24+h, int64(c.everyHours)) != 0 {
			continue
		}
		for ms := c.minutes; ms != 0; ms &= ms - 1 {
			w := midnight + h*3600 + int64(bits.TrailingZeros64(ms))*60
			r := read(zone, w)
			if r.inGap && !c.anchored {
				skipped = append(skipped, occurrence{at: r.gapEnd, wall: w})
				continue
			}
			slots = c.appendReading(slots, w, r)
		}
	}
	sort.SliceStable(slots, func(i, j int) bool { return slots[i].at < slots[j].at })
	// A repeating slot in a gap does not exist; the next slot of the day
	// says which readings had no run.
	for _, gone := range skipped {
		for i := range slots {
			if slots[i].at < gone.at {
				continue
			}
			if slots[i].note == notePlain {
				slots[i].note, slots[i].skippedFirst = noteAfterSkipped, gone.wall
			}
			if slots[i].note == noteAfterSkipped {
				slots[i].skippedLast = gone.wall
			}
			break
		}
	}
	return slots
}

// appendReading applies the daylight saving rules to one wall reading.
func (c *calendar) appendReading(slots []occurrence, w int64, r reading) []occurrence {
	switch {
	case r.inGap && c.anchored:
		return append(slots, occurrence{at: r.gapEnd, wall: w, note: noteMovedFromGap})
	case len(r.instants) == 1:
		return append(slots, occurrence{at: r.instants[0], wall: w})
	case len(r.instants) > 1 && c.anchored:
		return append(slots, occurrence{at: r.instants[0], wall: w, note: noteFirstOfTwo})
	case len(r.instants) > 1:
		slots = append(slots, occurrence{at: r.instants[0], wall: w, note: noteFirstOfTwo})
		return append(slots, occurrence{at: r.instants[1], wall: w, note: noteSecondOfTwo})
	}
	return slots
}

// maxQuietDays bounds the search for the next slot: the sparsest schedule
// that can fire (the 29th of February) is quiet for at most eight years.
const maxQuietDays = 8*366 + 31

// slotsAfter calls yield with every slot strictly after the instant after,
// in order, until yield returns false or the calendar stays quiet for
// maxQuietDays.
func (c *calendar) slotsAfter(loc *time.Location, after int64, yield func(occurrence) bool) {
	// Slots of the previous local date can be moved out of a gap into this
	// one, so the search starts a day early. Dates are walked as civil dates
	// with AddDate, never by adding 24 hours.
	y, m, d := time.Unix(after, 0).In(loc).Date()
	date := time.Date(y, m, d-1, 0, 0, 0, 0, time.UTC)
	last := after
	for quiet := 0; quiet <= maxQuietDays; date = date.AddDate(0, 0, 1) {
		slots := c.daySlots(loc, date)
		found := false
		for _, s := range slots {
			// Several anchored slots moved out of one gap share an instant
			// and run once.
			if s.at <= last {
				continue
			}
			found = true
			last = s.at
			if !yield(s) {
				return
			}
		}
		if found {
			quiet = 0
		} else {
			quiet++
		}
	}
}
