package schedule

import (
	"fmt"
	"time"
)

// rpoHorizon is how far ahead CheckRPO looks: four years hold a leap day
// and three common Februaries, and every daylight saving change a zone's
// yearly rules make.
const rpoHorizon = 4*366*24*time.Hour + 7*24*time.Hour

// CheckRPO rejects a schedule whose largest gap between two slots, in the four years after now, is longer than rpo.
func CheckRPO(s Schedule, rpo time.Duration, now time.Time) error {
	if rpo <= 0 {
		return fmt.Errorf("the recovery point objective must be longer than zero, got %s", rpo)
	}
	objective := "the recovery point objective of " + formatDuration(rpo)
	if s.kind == kindManual {
		return fmt.Errorf("the schedule runs only on request and cannot meet %s", objective)
	}
	gap, from, to, regular := s.largestGap(now)
	if gap <= rpo {
		return nil
	}
	where := ""
	if !regular {
		where = fmt.Sprintf(" (from %s to %s)", from.Format(humanTime), to.Format(humanTime))
	}
	return fmt.Errorf("the schedule runs only every %s%s and cannot meet %s", formatDuration(gap), where, objective)
}

// humanTime is how messages show an instant: local time with its zone.
const humanTime = "2006-01-02 15:04 MST"

// largestGap returns the longest time between two consecutive slots after
// now (within rpoHorizon, and the first slot past it), the slots that
// bound it, and whether all gaps are equal.
func (s Schedule) largestGap(now time.Time) (gap time.Duration, from, to time.Time, regular bool) {
	if s.kind == kindInterval {
		d := time.Duration(s.interval) * time.Second
		first, _ := s.Next(now)
		return d, first, first.Add(d), true
	}
	end := now.Add(rpoHorizon).Unix()
	var prev, longest, shortest int64
	started := false
	for o := range s.slotsAfter(now) {
		if started {
			g := o.at - prev
			if g > longest {
				longest, from, to = g, s.instant(prev), s.instant(o.at)
			}
			if shortest == 0 || g < shortest {
				shortest = g
			}
		}
		prev, started = o.at, true
		if o.at > end {
			break
		}
	}
	return time.Duration(longest) * time.Second, from, to, longest == shortest
}
