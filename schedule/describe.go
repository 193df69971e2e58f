package schedule

import (
	"fmt"
	"math/bits"
	"strings"
	"time"
)

// Descriptions are computed once, at parse time, so that the command line,
// notifications and job listings show the same words.

const describeManual = "manual: runs only on request"

func inZone(loc *time.Location) string { return " (" + loc.String() + ")" }

func clock(h, m int) string { return fmt.Sprintf("%02d:%02d", h, m) }

func describeHourly(minute, every int, loc *time.Location) string {
	switch {
	case every == 1:
		return fmt.Sprintf("hourly at :%02d", minute) + inZone(loc)
	case 24%every == 0 && 24/every <= 4:
		var times []string
		for h := 0; h < 24; h += every {
			times = append(times, clock(h, minute))
		}
		return fmt.Sprintf("every %d hours at %s", every, join(times, "and")) + inZone(loc)
	case 24%every == 0:
		return fmt.Sprintf("every %d hours at :%02d, from %s to %s", every, minute, clock(0, minute), clock(24-every, minute)) + inZone(loc)
	}
	return fmt.Sprintf("every %d hours at :%02d, counting hours of the local clock from 1970-01-01 00:00", every, minute) + inZone(loc)
}

func describeDaily(h, m, every int, loc *time.Location) string {
	if every == 1 {
		return "daily at " + clock(h, m) + inZone(loc)
	}
	return fmt.Sprintf("every %d days at %s, counting days from 1970-01-01", every, clock(h, m)) + inZone(loc)
}

func describeWeekly(weekdays uint8, h, m, every int, loc *time.Location) string {
	if every == 1 {
		return "weekly on " + describeWeekdays(weekdays) + " at " + clock(h, m) + inZone(loc)
	}
	return fmt.Sprintf("every %d weeks on %s at %s, counting weeks from Monday 1970-01-05", every, describeWeekdays(weekdays), clock(h, m)) + inZone(loc)
}

func describeMonthly(cal *calendar, h, m int, loc *time.Location) string {
	return "monthly on " + describeMonthDays(cal.days, cal.daysFromEnd) + " at " + clock(h, m) + inZone(loc)
}

func describeCron(cal *calendar, loc *time.Location) string {
	times, repeating := describeTimes(cal.minutes, cal.hours)
	parts := []string{times}
	domRestricted := cal.days != allDays || cal.daysFromEnd != 0
	dowRestricted := cal.weekdays != allWeekdays
	switch {
	case domRestricted && dowRestricted:
		parts = append(parts, "on "+describeMonthDays(cal.days, cal.daysFromEnd)+" of the month or on "+describeWeekdays(cal.weekdays))
	case domRestricted:
		parts = append(parts, "on "+describeMonthDays(cal.days, cal.daysFromEnd)+" of the month")
	case dowRestricted:
		parts = append(parts, "on "+describeWeekdays(cal.weekdays))
	case !repeating:
		parts = append(parts, "every day")
	}
	if cal.months != allMonths {
		parts = append(parts, "in "+describeMonths(cal.months))
	}
	return strings.Join(parts, " ") + inZone(loc)
}

// describeTimes describes the minutes and hours of a cron expression, and
// reports whether the words describe something repeating ("every 15
// minutes") rather than a list of times of day.
func describeTimes(minutes uint64, hours uint32) (string, bool) {
	ms, hs := members(minutes), members(uint64(hours))
	if len(ms)*len(hs) <= 4 {
		var times []string
		for _, h := range hs {
			for _, m := range ms {
				times = append(times, clock(h, m))
			}
		}
		return "at " + join(times, "and"), false
	}
	first, last := hs[0], hs[len(hs)-1]
	contiguous := last-first+1 == len(hs)
	if start, step, ok := stepOf(ms, 60); ok && contiguous {
		every := fmt.Sprintf("every %d minutes", step)
		if step == 1 {
			every = "every minute"
		}
		if start == 0 && len(hs) == 24 {
			return every, true
		}
		return every + " from " + clock(first, start) + " to " + clock(last, ms[len(ms)-1]), true
	}
	if len(ms) == 1 {
		m := ms[0]
		if start, step, ok := stepOf(hs, 24); ok && start == 0 && 24%step == 0 {
			if step == 1 {
				return fmt.Sprintf("every hour at :%02d", m), true
			}
			return fmt.Sprintf("every %d hours at :%02d, from %s to %s", step, m, clock(0, m), clock(last, m)), true
		}
		if contiguous {
			return fmt.Sprintf("every hour at :%02d from %s to %s", m, clock(first, m), clock(last, m)), true
		}
	}
	minuteWords := "minute " + listNumbers(ms)
	if len(ms) > 1 {
		minuteWords = "minutes " + listNumbers(ms)
	}
	switch {
	case len(hs) == 24:
		return "at " + minuteWords + " past every hour", true
	case len(hs) == 1:
		return "at " + minuteWords + " past hour " + listNumbers(hs), true
	}
	return "at " + minuteWords + " past hours " + listNumbers(hs), true
}

// stepOf reports whether values (sorted) are start, start+step, ... up to
// the last value below limit, with at least two of them.
func stepOf(values []int, limit int) (start, step int, ok bool) {
	if len(values) < 2 {
		return 0, 0, false
	}
	start, step = values[0], values[1]-values[0]
	if start >= step {
		return 0, 0, false
	}
	for i, v := range values {
		if v != start+i*step {
			return 0, 0, false
		}
	}
	return start, step, values[len(values)-1]+step >= limit
}

// members lists the set bits of set, in order.
func members(set uint64) []int {
	var out []int
	for ; set != 0; set &= set - 1 {
		out = append(out, bits.TrailingZeros64(set))
	}
	return out
}

// runs groups sorted values into runs of consecutive values.
func runs(values []int) [][2]int {
	var out [][2]int
	for _, v := range values {
		if n := len(out); n > 0 && out[n-1][1] == v-1 {
			out[n-1][1] = v
			continue
		}
		out = append(out, [2]int{v, v})
	}
	return out
}

// listWith names sorted values, writing runs of three or more as "a to b".
func listWith(values []int, name func(int) string) string {
	var items []string
	for _, r := range runs(values) {
		switch {
		case r[1]-r[0] >= 2:
			items = append(items, name(r[0])+" to "+name(r[1]))
		case r[1] > r[0]:
			items = append(items, name(r[0]), name(r[1]))
		default:
			items = append(items, name(r[0]))
		}
	}
	return join(items, "and")
}

func listNumbers(values []int) string {
	return listWith(values, func(v int) string { return fmt.Sprint(v) })
}

func describeWeekdays(set uint8) string {
	if set == allWeekdays {
		return "every day"
	}
	// Monday first, Sunday last, as a week is read.
	var days []int
	for d := 1; d <= 7; d++ {
		if set&(1<<(d%7)) != 0 {
			days = append(days, d)
		}
	}
	return listWith(days, func(d int) string { return time.Weekday(d % 7).String() })
}

func describeMonths(set uint16) string {
	if set == allMonths {
		return "every month"
	}
	return listWith(members(uint64(set)), func(m int) string { return time.Month(m).String() })
}

// describeMonthDays names days of the month: "the 1st, the 15th and the last day".
func describeMonthDays(days, fromEnd uint32) string {
	var items []string
	if days != 0 {
		items = append(items, listWith(members(uint64(days)), func(d int) string { return "the " + ordinal(d) }))
	}
	for _, n := range members(uint64(fromEnd)) {
		items = append(items, "the "+fromEndName(n))
	}
	return join(items, "and")
}

func fromEndName(n int) string {
	if n == 1 {
		return "last day"
	}
	return ordinal(n) + "-to-last day"
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprint(n) + suffix
}

// join joins items as "a, b and c" (or "a, b or c").
func join(items []string, conjunction string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conjunction + " " + items[len(items)-1]
}

// dayWarnings warns about chosen days of the month that some chosen months
// lack (the 31st, the 29th of February), since those months run less.
func dayWarnings(cal *calendar) string {
	if cal.days == allDays && cal.daysFromEnd == 0 {
		return ""
	}
	var notes []string
	lacking := func(n int) []int {
		var months []int
		for _, m := range members(uint64(cal.months)) {
			if daysIn(2028, time.Month(m)) < n || (m == 2 && n == 29) {
				months = append(months, m)
			}
		}
		return months
	}
	note := func(n int, name string) {
		months := lacking(n)
		if len(months) == 0 {
			return
		}
		verb := "have"
		if len(months) == 1 {
			verb = "has"
		}
		text := fmt.Sprintf("%s %s no %s", listWith(months, func(m int) string { return time.Month(m).String() }), verb, name)
		if n == 29 {
			text += " except in leap years"
		}
		notes = append(notes, text)
	}
	for _, d := range members(uint64(cal.days)) {
		if d >= 29 {
			note(d, ordinal(d))
		}
	}
	for _, n := range members(uint64(cal.daysFromEnd)) {
		if n >= 29 {
			note(n, fromEndName(n))
		}
	}
	if !firesIn(cal, 2027) {
		notes = append(notes, "it runs only in leap years")
	}
	if len(notes) == 0 {
		return ""
	}
	text := "; note: " + strings.Join(notes, "; ")
	if cal.days&^(1<<30-1) != 0 {
		text += " (write -1 for the last day of every month)"
	}
	return text
}
