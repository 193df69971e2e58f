package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

const kindsAllowed = "manual, every, hourly, daily, weekly, monthly or cron"

// parseFields parses the lower-cased fields of a spec.
func parseFields(fields []string, loc *time.Location) (Schedule, error) {
	if len(fields) == 0 {
		return Schedule{}, fmt.Errorf("the schedule is empty: write one such as \"daily 02:00\" (%s)", kindsAllowed)
	}
	args := fields[1:]
	switch fields[0] {
	case "manual":
		if len(args) > 0 {
			return Schedule{}, fmt.Errorf("manual takes nothing after it, got %q", strings.Join(args, " "))
		}
		return Schedule{kind: kindManual, description: describeManual}, nil
	case "hourly":
		return parseHourly(args, 1, loc)
	case "daily":
		if len(args) != 1 {
			return Schedule{}, fmt.Errorf("daily takes one time of day, such as \"daily 02:00\"")
		}
		return parseDaily(args[0], 1, loc)
	case "weekly":
		if len(args) != 2 {
			return Schedule{}, fmt.Errorf("weekly takes weekdays and a time of day, such as \"weekly sat,sun 22:00\"")
		}
		return parseWeekly(args[0], args[1], 1, loc)
	case "monthly":
		if len(args) != 2 {
			return Schedule{}, fmt.Errorf("monthly takes days of the month and a time of day, such as \"monthly 1,-1 03:00\"")
		}
		return parseMonthly(args[0], args[1], loc)
	case "every":
		return parseEvery(args, loc)
	case "cron":
		return parseCron(args, loc)
	}
	if len(fields) == 5 || strings.HasPrefix(fields[0], "@") {
		return Schedule{}, fmt.Errorf("unknown schedule kind %q: a cron expression needs the word cron in front, such as \"cron %s\"", fields[0], strings.Join(fields, " "))
	}
	return Schedule{}, fmt.Errorf("unknown schedule kind %q: use %s", fields[0], kindsAllowed)
}

// parseEvery parses "every DURATION" and "every N hours|days|weeks ...".
func parseEvery(args []string, loc *time.Location) (Schedule, error) {
	if len(args) == 0 {
		return Schedule{}, fmt.Errorf("every needs a length, such as \"every 6h\" or \"every 2 hours :15\"")
	}
	if len(args) == 1 {
		return parseInterval(args[0])
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return Schedule{}, fmt.Errorf("count %q after every is not a whole number: write \"every 2 hours :15\", \"every 3 days 02:00\" or \"every 2 weeks mon 01:00\"", args[0])
	}
	rest := args[2:]
	switch unit := args[1]; unit {
	case "hour", "hours":
		if err := checkCount(n, unit, 24); err != nil {
			return Schedule{}, err
		}
		if len(rest) == 0 {
			return Schedule{}, fmt.Errorf("every %d %s needs a minute, such as \"every %d %s :00\"; for a fixed elapsed time write \"every %dh\"", n, unit, n, unit, n)
		}
		return parseHourly(rest, n, loc)
	case "day", "days":
		if err := checkCount(n, unit, 365); err != nil {
			return Schedule{}, err
		}
		if len(rest) != 1 {
			return Schedule{}, fmt.Errorf("every %d %s takes one time of day, such as \"every %d %s 02:00\"", n, unit, n, unit)
		}
		return parseDaily(rest[0], n, loc)
	case "week", "weeks":
		if err := checkCount(n, unit, 52); err != nil {
			return Schedule{}, err
		}
		if len(rest) != 2 {
			return Schedule{}, fmt.Errorf("every %d %s takes weekdays and a time of day, such as \"every %d %s mon 01:00\"", n, unit, n, unit)
		}
		return parseWeekly(rest[0], rest[1], n, loc)
	case "minute", "minutes":
		return Schedule{}, fmt.Errorf("for every %d %s write \"every %dm\" (elapsed time) or a cron expression such as \"cron */%d * * * *\"", n, unit, n, n)
	default:
		return Schedule{}, fmt.Errorf("unit %q after every %d is not one of hours, days, weeks; for an elapsed interval write it without a space, such as \"every 6h\"", unit, n)
	}
}

func checkCount(n int, unit string, max int) error {
	if n < 1 || n > max {
		return fmt.Errorf("every %d %s: the count must be from 1 to %d", n, unit, max)
	}
	return nil
}

// parseInterval parses the duration of "every 6h".
func parseInterval(text string) (Schedule, error) {
	if _, err := strconv.Atoi(text); err == nil {
		return Schedule{}, fmt.Errorf("interval %q has no unit: write it as \"every %sh\" or \"every %sm\"", text, text, text)
	}
	d, err := ParseDuration(text)
	if err != nil {
		return Schedule{}, fmt.Errorf("interval: %w", err)
	}
	if d < time.Minute {
		return Schedule{}, fmt.Errorf("interval %q is shorter than the minimum of 1 minute", text)
	}
	if d%time.Minute != 0 {
		return Schedule{}, fmt.Errorf("interval %q is not a whole number of minutes: slots fall on whole minutes", text)
	}
	return Schedule{
		kind:        kindInterval,
		interval:    int64(d / time.Second),
		description: "every " + formatDuration(d) + " of elapsed time",
	}, nil
}

// parseHourly parses the minute of "hourly :30" and "every 2 hours :15".
func parseHourly(args []string, every int, loc *time.Location) (Schedule, error) {
	minute := 0
	switch len(args) {
	case 0:
	case 1:
		m, err := parseMinuteMark(args[0])
		if err != nil {
			return Schedule{}, err
		}
		minute = m
	default:
		return Schedule{}, fmt.Errorf("hourly takes one minute, such as \":30\", got %q", strings.Join(args, " "))
	}
	cal := &calendar{
		minutes: 1 << minute, hours: allHours, days: allDays, months: allMonths, weekdays: allWeekdays,
		everyHours: every,
	}
	return calendarSchedule(cal, describeHourly(minute, every, loc))
}

// parseMinuteMark parses ":MM".
func parseMinuteMark(text string) (int, error) {
	digits, ok := strings.CutPrefix(text, ":")
	if !ok {
		return 0, fmt.Errorf("minute %q: write the minute past the hour as :MM, such as :30", text)
	}
	m, err := parseTwoDigits(digits, 59)
	if err != nil {
		return 0, fmt.Errorf("minute %q: write the minute past the hour as :MM from :00 to :59", text)
	}
	return m, nil
}

// parseDaily parses "daily HH:MM" and "every N days HH:MM".
func parseDaily(clock string, every int, loc *time.Location) (Schedule, error) {
	h, m, err := parseClock(clock)
	if err != nil {
		return Schedule{}, err
	}
	cal := &calendar{
		minutes: 1 << m, hours: 1 << h, days: allDays, months: allMonths, weekdays: allWeekdays,
		everyDays: every, anchored: true,
	}
	return calendarSchedule(cal, describeDaily(h, m, every, loc))
}

// parseWeekly parses "weekly DAYS HH:MM" and "every N weeks DAYS HH:MM".
func parseWeekly(days, clock string, every int, loc *time.Location) (Schedule, error) {
	weekdays, err := parseWeekdays(days)
	if err != nil {
		return Schedule{}, err
	}
	h, m, err := parseClock(clock)
	if err != nil {
		return Schedule{}, err
	}
	cal := &calendar{
		minutes: 1 << m, hours: 1 << h, days: allDays, months: allMonths, weekdays: weekdays,
		everyWeeks: every, anchored: true,
	}
	return calendarSchedule(cal, describeWeekly(weekdays, h, m, every, loc))
}

// parseMonthly parses "monthly DAYS HH:MM".
func parseMonthly(list, clock string, loc *time.Location) (Schedule, error) {
	cal := &calendar{months: allMonths, weekdays: allWeekdays, anchored: true}
	for _, item := range strings.Split(list, ",") {
		d, err := strconv.Atoi(item)
		switch {
		case err != nil || d == 0 || d > 31 || d < -31:
			return Schedule{}, fmt.Errorf("day of month %q: use 1 to 31, or -1 (the last day) to -31 (counting back from the end), separated by commas", item)
		case d > 0:
			cal.days |= 1 << d
		default:
			cal.daysFromEnd |= 1 << -d
		}
	}
	h, m, err := parseClock(clock)
	if err != nil {
		return Schedule{}, err
	}
	cal.minutes, cal.hours = 1<<m, 1<<h
	return calendarSchedule(cal, describeMonthly(cal, h, m, loc))
}

// calendarSchedule rejects a calendar that never fires and wraps it.
func calendarSchedule(cal *calendar, description string) (Schedule, error) {
	if err := checkFires(cal); err != nil {
		return Schedule{}, err
	}
	return Schedule{kind: kindCalendar, cal: cal, description: description + dayWarnings(cal)}, nil
}

// parseClock parses "HH:MM" (the hour may have one digit).
func parseClock(text string) (hour, minute int, err error) {
	hh, mm, ok := strings.Cut(text, ":")
	bad := fmt.Errorf("time of day %q: write it as HH:MM from 00:00 to 23:59, such as 02:00", text)
	if !ok || len(hh) == 0 || len(hh) > 2 {
		return 0, 0, bad
	}
	if hour, err = parseTwoDigits(hh, 23); err != nil {
		return 0, 0, bad
	}
	if len(mm) != 2 {
		return 0, 0, bad
	}
	if minute, err = parseTwoDigits(mm, 59); err != nil {
		return 0, 0, bad
	}
	return hour, minute, nil
}

// parseTwoDigits parses one or two decimal digits no larger than max.
func parseTwoDigits(text string, max int) (int, error) {
	if len(text) == 0 || len(text) > 2 {
		return 0, fmt.Errorf("%q is not one or two digits", text)
	}
	n := 0
	for _, r := range text {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("%q is not a number", text)
		}
		n = n*10 + int(r-'0')
	}
	if n > max {
		return 0, fmt.Errorf("%d is larger than %d", n, max)
	}
	return n, nil
}

// weekdayNames maps accepted names to time.Weekday numbers.
var weekdayNames = map[string]int{
	"sun": 0, "sunday": 0, "mon": 1, "monday": 1, "tue": 2, "tuesday": 2,
	"wed": 3, "wednesday": 3, "thu": 4, "thursday": 4, "fri": 5, "friday": 5,
	"sat": 6, "saturday": 6,
}

// parseWeekdays parses "sat,sun" or "mon-fri" (ranges run Monday to Sunday).
func parseWeekdays(list string) (uint8, error) {
	var set uint8
	for _, item := range strings.Split(list, ",") {
		first, last, isRange := strings.Cut(item, "-")
		a, okA := weekdayNames[first]
		b, okB := a, okA
		if isRange {
			b, okB = weekdayNames[last]
		}
		if !okA || !okB {
			return 0, fmt.Errorf("weekday %q: use mon, tue, wed, thu, fri, sat, sun (or full names), separated by commas, or a range such as mon-fri", item)
		}
		// Count Monday as 1 and Sunday as 7 so that "fri-sun" is a range.
		from, to := (a+6)%7+1, (b+6)%7+1
		if from > to {
			return 0, fmt.Errorf("weekday range %q runs backwards: ranges go from Monday to Sunday, such as mon-fri or sat-sun", item)
		}
		for d := from; d <= to; d++ {
			set |= 1 << (d % 7)
		}
	}
	return set, nil
}
