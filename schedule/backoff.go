package schedule

import (
	"math"
	"time"
)

// Backoff returns how long retry number attempt waits: initial for attempt 1, doubling with each attempt, capped at max, and shortened by up to a fifth by jitter in [0, 1).
//
// The delay is computed in floating point, so that no attempt number
// overflows; an attempt below 1 counts as 1, and max <= 0 means no cap
// beyond the longest time.Duration. Jitter only ever shortens the delay, so
// the cap is never exceeded; a jitter outside [0, 1) is clamped into it.
func Backoff(attempt int, initial, max time.Duration, jitter float64) time.Duration {
	if initial <= 0 {
		return 0
	}
	if attempt < 1 {
		attempt = 1
	}
	limit := float64(math.MaxInt64)
	if max > 0 {
		limit = float64(max)
	}
	delay := float64(initial) * math.Pow(2, float64(attempt-1))
	if delay > limit || math.IsInf(delay, 1) || math.IsNaN(delay) {
		delay = limit
	}
	switch {
	case math.IsNaN(jitter) || jitter < 0:
		jitter = 0
	case jitter >= 1:
		jitter = math.Nextafter(1, 0)
	}
	delay *= 1 - jitter*0.2
	if delay >= float64(math.MaxInt64) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(delay)
}
