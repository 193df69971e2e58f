package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Clock modes: which clock drives a state database's passes.
const (
	ClockReal      = "real"      // the real time: a live scheduler
	ClockSimulated = "simulated" // --at: a test, or a config being tried
)

// ClockModeError is UseClock's refusal: the database is driven by the
// other clock.
type ClockModeError struct {
	Want, Have string    // the mode asked for, and the one recorded
	Since      time.Time // when Have was recorded
}

func (e *ClockModeError) Error() string {
	return fmt.Sprintf("the state database is driven by the %s clock (since %s), not the %s one", e.Have,
		e.Since.UTC().Format(time.RFC3339), e.Want)
}

// UseClock records that mode (ClockReal or ClockSimulated) drives the
// database, at the real time at (not d's clock, which --at may set), the
// first time it is asked; from then on it fails with a *ClockModeError for
// the other mode.
func (d *DB) UseClock(ctx context.Context, mode string, at time.Time) error {
	if mode != ClockReal && mode != ClockSimulated {
		return fmt.Errorf("use clock: unknown mode %q", mode)
	}
	return d.write(ctx, "record the clock mode", func(tx *sql.Tx) error {
		var have string
		var since int64
		err := tx.QueryRowContext(ctx, `SELECT mode, since_at FROM clock WHERE id = 1`).Scan(&have, &since)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO clock (id, mode, since_at) VALUES (1, ?, ?)`, mode, at.UnixNano())
			return err
		case err != nil:
			return err
		case have != mode:
			return &ClockModeError{Want: mode, Have: have, Since: time.Unix(0, since)}
		}
		return nil
	})
}
