package db

import (
	"context"
	"database/sql"
	"time"
)

// ReleaseProbe gives back the claim a pass took with ClaimProbe at
// claimedAt when its probe recorded nothing (cut short by a shutdown, or
// skipped for a repository not made yet), so that the next pass probes
// at once instead of up to probe_every later. A claim another pass took
// since, or a probe recorded since, is left as it is.
func (d *DB) ReleaseProbe(ctx context.Context, name string, claimedAt time.Time) error {
	return d.write(ctx, "release probe of repository "+name, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE repository_probes SET claimed_at = coalesce(probed_at, 0)
			WHERE name = ? AND claimed_at = ? AND (probed_at IS NULL OR probed_at < claimed_at)`,
			name, claimedAt.UnixNano())
		return err
	})
}
