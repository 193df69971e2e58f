package schedule

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// durationUnits are the units ParseDuration accepts, largest first.
var durationUnits = []struct {
	suffix string
	length time.Duration
}{
	{"w", 7 * 24 * time.Hour},
	{"d", 24 * time.Hour},
	{"h", time.Hour},
	{"m", time.Minute},
	{"s", time.Second},
}

// ParseDuration parses a positive elapsed time such as "90m", "26h", "1d" or "1d12h" (units w, d, h, m, s; a day is 24 hours).
func ParseDuration(text string) (time.Duration, error) {
	const allowed = "write whole numbers with units w, d, h, m or s, largest first, such as 90m, 26h, 1d or 1d12h"
	rest := strings.ToLower(strings.TrimSpace(text))
	if rest == "" {
		return 0, fmt.Errorf("duration is empty: %s", allowed)
	}
	var total time.Duration
	next := 0 // index of the largest unit still allowed
	for rest != "" {
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		if digits == 0 {
			return 0, fmt.Errorf("duration %q: %s", text, allowed)
		}
		n, err := strconv.ParseInt(rest[:digits], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("duration %q is too long", text)
		}
		rest = rest[digits:]
		unit := -1
		for i := next; i < len(durationUnits); i++ {
			if strings.HasPrefix(rest, durationUnits[i].suffix) {
				unit = i
				break
			}
		}
		if unit < 0 {
			return 0, fmt.Errorf("duration %q: %s", text, allowed)
		}
		length := durationUnits[unit].length
		if n > int64(math.MaxInt64/length) || total > math.MaxInt64-time.Duration(n)*length {
			return 0, fmt.Errorf("duration %q is too long", text)
		}
		total += time.Duration(n) * length
		rest = rest[len(durationUnits[unit].suffix):]
		next = unit + 1
	}
	if total <= 0 {
		return 0, fmt.Errorf("duration %q must be longer than zero", text)
	}
	return total, nil
}

// formatDuration writes d in the largest unit that expresses it exactly:
// "1 day", "25 hours", "90 minutes".
func formatDuration(d time.Duration) string {
	for _, u := range []struct {
		length time.Duration
		name   string
	}{{24 * time.Hour, "day"}, {time.Hour, "hour"}, {time.Minute, "minute"}, {time.Second, "second"}} {
		if d%u.length == 0 {
			n := int64(d / u.length)
			if n == 1 {
				return "1 " + u.name
			}
			return fmt.Sprintf("%d %ss", n, u.name)
		}
	}
	return d.String()
}
