package schedule

import (
	"fmt"
	"time"
)

// CatchUp is what a job does about slots that passed while it could not run (the machine was off).
type CatchUp string

const (
	// CatchUpOnce runs one catch-up run now, then continues on schedule.
	CatchUpOnce CatchUp = "once"
	// CatchUpSkip runs nothing until the next regular slot.
	CatchUpSkip CatchUp = "skip"
)

// ParseCatchUp parses a catch_up setting; the empty string means CatchUpOnce.
func ParseCatchUp(text string) (CatchUp, error) {
	switch CatchUp(text) {
	case "", CatchUpOnce:
		return CatchUpOnce, nil
	case CatchUpSkip:
		return CatchUpSkip, nil
	}
	return "", fmt.Errorf("catch-up policy %q is not one of once, skip", text)
}

// Due says what a job does at now about the slots that have come since its stored next slot.
type Due struct {
	Run     bool      // start a run now
	CatchUp bool      // the run is a catch-up for missed slots, not a regular run on time
	Slot    time.Time // the slot a run now stands for: the latest slot not after now
	Missed  int       // slots that passed without a run of their own; they are never run one by one
	Next    time.Time // the slot to wait for after this decision (zero for a manual schedule)
}

// CheckDue decides what a job whose stored next slot is slot does at now;
// a slot noticed at most grace after it passed counts as on time.
//
// Before slot, nothing is due and Next is slot. The zero slot means the job
// has no stored slot yet (it is new, or its schedule changed): nothing runs
// and Next is the first slot after now. Otherwise Next is the first slot
// after now, counted from the schedule, not from when a run happens.
func CheckDue(s Schedule, slot, now time.Time, grace time.Duration, policy CatchUp) Due {
	if !slot.IsZero() && now.Before(slot) {
		return Due{Next: slot}
	}
	next, _ := s.Next(now)
	if slot.IsZero() {
		return Due{Next: next}
	}
	// The stored slot counts even if the schedule has no slot there (a
	// postponed slot, or one of an earlier schedule); every later slot up to
	// now counts too.
	latest, count := slot, 1
	for o := range s.slotsAfter(slot) {
		if o.at > now.Unix() {
			break
		}
		latest, count = s.instant(o.at), count+1
	}
	onTime := now.Sub(latest) <= grace
	due := Due{Slot: latest, Next: next, Missed: count}
	if onTime {
		due.Missed--
	}
	due.Run = onTime || (due.Missed > 0 && policy != CatchUpSkip)
	due.CatchUp = due.Run && !onTime
	return due
}
