package schedule

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// cronField describes one of the five fields of a cron expression.
type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	minuteField = cronField{name: "minute", min: 0, max: 59}
	hourField   = cronField{name: "hour", min: 0, max: 23}
	domField    = cronField{name: "day-of-month", min: 1, max: 31}
	monthField  = cronField{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	dowField = cronField{name: "day-of-week", min: 0, max: 7, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}
)

var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

const cronFieldNames = "minute, hour, day-of-month, month, day-of-week"

// parseCron parses the fields of a cron expression after the word cron.
func parseCron(fields []string, loc *time.Location) (Schedule, error) {
	if len(fields) == 1 && strings.HasPrefix(fields[0], "@") {
		expanded, ok := cronMacros[fields[0]]
		if !ok {
			return Schedule{}, fmt.Errorf("cron %q is not one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly", fields[0])
		}
		fields = strings.Fields(expanded)
	}
	switch n := len(fields); {
	case n == 6:
		return Schedule{}, fmt.Errorf("cron takes five fields (%s), got 6: a seconds field is not supported, runs start at whole minutes", cronFieldNames)
	case n == 7:
		return Schedule{}, fmt.Errorf("cron takes five fields (%s), got 7: seconds and year fields are not supported", cronFieldNames)
	case n != 5:
		return Schedule{}, fmt.Errorf("cron takes five fields (%s) or a macro such as @daily, got %d", cronFieldNames, n)
	}
	var sets [5]uint64
	for i, f := range []cronField{minuteField, hourField, domField, monthField, dowField} {
		set, err := f.parse(fields[i])
		if err != nil {
			return Schedule{}, fmt.Errorf("%s field %q: %w", f.name, fields[i], err)
		}
		sets[i] = set
	}
	weekdays := uint8(sets[4] & 0x7f)
	if sets[4]&(1<<7) != 0 {
		weekdays |= 1 // 7 is Sunday too
	}
	cal := &calendar{
		minutes:  sets[0],
		hours:    uint32(sets[1]),
		days:     uint32(sets[2]),
		months:   uint16(sets[3]),
		weekdays: weekdays,
		// The rule cronie uses: a job whose minute or hour field starts with
		// * repeats within the day; any other is tied to a time of day.
		anchored: !strings.HasPrefix(fields[0], "*") && !strings.HasPrefix(fields[1], "*"),
	}
	// A field is restricted when it leaves out some value, however it is
	// written; only then does the either-day rule apply.
	cal.dayOr = cal.days != allDays && cal.weekdays != allWeekdays
	return calendarSchedule(cal, describeCron(cal, loc))
}

// parse turns one field into a set of values (bit v for value v).
func (f cronField) parse(text string) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(text, ",") {
		if item == "" {
			return 0, fmt.Errorf("empty item in the list: separate values with single commas")
		}
		first, last, step, err := f.parseItem(item)
		if err != nil {
			return 0, err
		}
		for v := first; v <= last; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// parseItem parses "*", "V", "A-B", and any of them followed by "/STEP".
func (f cronField) parseItem(item string) (first, last, step int, err error) {
	base, stepText, hasStep := strings.Cut(item, "/")
	step = 1
	if hasStep {
		step, err = strconv.Atoi(stepText)
		if err != nil || step < 1 {
			return 0, 0, 0, fmt.Errorf("step %q is not a whole number from 1 to %d", stepText, f.max-f.min)
		}
		if step > f.max-f.min {
			return 0, 0, 0, fmt.Errorf("step %d is larger than the field's range %d-%d%s", step, f.min, f.max, f.stepHint(step))
		}
	}
	if base == "*" {
		return f.min, f.max, step, nil
	}
	a, b, isRange := strings.Cut(base, "-")
	if first, err = f.value(a); err != nil {
		return 0, 0, 0, err
	}
	switch {
	case isRange:
		if last, err = f.value(b); err != nil {
			return 0, 0, 0, err
		}
		if f.names != nil && f.max == 7 && last == 0 && first > 0 {
			last = 7 // "sat-sun" ends on the Sunday that is 7
		}
		if first > last {
			return 0, 0, 0, fmt.Errorf("range %s runs backwards: the first value must not be larger than the second (split it, such as %d-%d,%d-%d)", base, first, f.max, f.min, last)
		}
	case hasStep:
		last = f.max // "5/15" means 5-59/15
	default:
		last = first
	}
	return first, last, step, nil
}

// value parses a number or, in the month and day-of-week fields, a name.
func (f cronField) value(text string) (int, error) {
	if v, ok := f.names[text]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("%q is not %s", text, f.allowed())
	}
	if v < f.min || v > f.max {
		return 0, fmt.Errorf("%d is out of range: use %s", v, f.allowed())
	}
	return v, nil
}

// allowed says which values the field takes.
func (f cronField) allowed() string {
	switch f.name {
	case "month":
		return "a number from 1 to 12 or a name from jan to dec"
	case "day-of-week":
		return "a number from 0 to 7 (0 and 7 are Sunday) or a name from sun to sat"
	case "day-of-month":
		return "a number from 1 to 31 (for the last day of the month write \"monthly -1 HH:MM\")"
	}
	return fmt.Sprintf("a number from %d to %d", f.min, f.max)
}

// stepHint suggests an interval schedule for a step that does not fit its field.
func (f cronField) stepHint(step int) string {
	switch f.name {
	case "minute":
		return fmt.Sprintf(": for every %d minutes of elapsed time write \"every %dm\"", step, step)
	case "hour":
		return fmt.Sprintf(": for every %d hours of elapsed time write \"every %dh\"", step, step)
	}
	return ""
}

// checkFires rejects a calendar whose days never exist, such as the 30th
// of February. Only the day of month and the month can exclude each other,
// and whether they do shows in one common year and one leap year.
func checkFires(cal *calendar) error {
	if firesIn(cal, 2027) || firesIn(cal, 2028) {
		return nil
	}
	var days []string
	for _, d := range members(uint64(cal.days)) {
		days = append(days, ordinal(d))
	}
	for _, n := range members(uint64(cal.daysFromEnd)) {
		days = append(days, fromEndName(n))
	}
	verb := "has"
	if bits.OnesCount16(cal.months) > 1 {
		verb = "have"
	}
	return fmt.Errorf("the schedule never fires: %s %s no %s", describeMonths(cal.months), verb, join(days, "or"))
}

func firesIn(cal *calendar, year int) bool {
	for date := time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC); date.Year() == year; date = date.AddDate(0, 0, 1) {
		if cal.matchesDay(date) {
			return true
		}
	}
	return false
}
