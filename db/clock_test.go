package db

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// The first clock that drives a database is recorded, survives a reopen,
// and the other clock is refused from then on.
func TestUseClock(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, then string
		refused     bool
	}{
		{"real, then real", ClockReal, ClockReal, false},
		{"simulated, then simulated", ClockSimulated, ClockSimulated, false},
		{"real, then simulated", ClockReal, ClockSimulated, true},
		{"simulated, then real", ClockSimulated, ClockReal, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "state.db")
			d := openAt(t, path, newClock())
			if err := d.UseClock(ctx, tc.first, time.Now()); err != nil {
				t.Fatal(err)
			}
			d.Close()
			d = openAt(t, path, newClock())
			err := d.UseClock(ctx, tc.then, time.Now())
			var mixed *ClockModeError
			if got := errors.As(err, &mixed); got != tc.refused {
				t.Fatalf("UseClock(%s) after %s: %v, want refused %v", tc.then, tc.first, err, tc.refused)
			}
			if tc.refused && (mixed.Have != tc.first || mixed.Want != tc.then || mixed.Since.IsZero()) {
				t.Errorf("refusal %+v, want have %s, want %s, a time", mixed, tc.first, tc.then)
			}
		})
	}
	d, _ := newDB(t)
	if err := d.UseClock(context.Background(), "fake", time.Now()); err == nil {
		t.Error("UseClock accepted an unknown mode")
	}
}
