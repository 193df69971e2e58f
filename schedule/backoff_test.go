package schedule

import (
	"math"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	const (
		initial = 30 * time.Second
		max     = 15 * time.Minute
	)
	cases := []struct {
		name    string
		attempt int
		initial time.Duration
		max     time.Duration
		jitter  float64
		want    time.Duration
	}{
		{"first retry waits the initial delay", 1, initial, max, 0, 30 * time.Second},
		{"second doubles", 2, initial, max, 0, 60 * time.Second},
		{"third doubles again", 3, initial, max, 0, 120 * time.Second},
		{"fifth", 5, initial, max, 0, 8 * time.Minute},
		{"sixth is capped", 6, initial, max, 0, 15 * time.Minute},
		{"tenth stays capped", 10, initial, max, 0, 15 * time.Minute},
		{"a huge attempt does not overflow", 1 << 30, initial, max, 0, 15 * time.Minute},
		{"the largest int does not overflow", math.MaxInt, initial, max, 0, 15 * time.Minute},
		{"attempt zero counts as one", 0, initial, max, 0, 30 * time.Second},
		{"a negative attempt counts as one", -4, initial, max, 0, 30 * time.Second},
		{"no cap: grows to the longest duration", 1000, initial, 0, 0, time.Duration(math.MaxInt64)},
		{"no initial delay: no wait", 3, 0, max, 0, 0},
		{"jitter shortens by a fifth at most", 1, initial, max, 0.5, 27 * time.Second},
		{"jitter applies below the cap", 10, initial, max, 0.5, 13*time.Minute + 30*time.Second},
		{"negative jitter is none", 2, initial, max, -1, 60 * time.Second},
		{"NaN jitter is none", 2, initial, max, math.NaN(), 60 * time.Second},
		{"max smaller than initial caps at once", 1, time.Minute, 10 * time.Second, 0, 10 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Backoff(c.attempt, c.initial, c.max, c.jitter); got != c.want {
				t.Errorf("Backoff(%d, %s, %s, %v) = %s, want %s", c.attempt, c.initial, c.max, c.jitter, got, c.want)
			}
		})
	}
}

func TestBackoffJitterOnlyShortens(t *testing.T) {
	for attempt := 1; attempt <= 12; attempt++ {
		plain := Backoff(attempt, 30*time.Second, 15*time.Minute, 0)
		for _, j := range []float64{0, 0.1, 0.5, 0.999999, 1, 7} {
			got := Backoff(attempt, 30*time.Second, 15*time.Minute, j)
			if got > plain || float64(got) < float64(plain)*0.8-1 {
				t.Errorf("attempt %d, jitter %v: %s is not within [0.8, 1] of %s", attempt, j, got, plain)
			}
		}
	}
}
