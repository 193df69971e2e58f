package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// SeeRepository records that the configured repository name holds the
// repository id (encrypted or not) now, and returns the ID recorded for
// name: id itself, unless another repository was recorded under name
// before, whose ID it returns without changing anything (the caller tells
// of a replaced repository).
func (d *DB) SeeRepository(ctx context.Context, name, id string, encrypted bool) (recorded string, err error) {
	if name == "" || id == "" {
		return "", errors.New("record repository identity: no name or no ID given")
	}
	now := d.now().UnixNano()
	err = d.write(ctx, "record identity of repository "+name, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO repository_identities (name, repository_id, encrypted, first_seen_at, last_seen_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET encrypted = excluded.encrypted, last_seen_at = excluded.last_seen_at
			WHERE repository_id = excluded.repository_id`, name, id, encrypted, now, now); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT repository_id FROM repository_identities WHERE name = ?`, name).Scan(&recorded)
	})
	return recorded, err
}

// RecordedRepositoryID returns the ID recorded for the configured
// repository name; "" when none is.
func (d *DB) RecordedRepositoryID(ctx context.Context, name string) (string, error) {
	var id string
	err := d.sql.QueryRowContext(ctx, `SELECT repository_id FROM repository_identities WHERE name = ?`, name).Scan(&id)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read identity of repository %s: %w", name, err)
	}
	return id, nil
}

// ForgetRepositoryIdentity drops the ID recorded for the configured
// repository name, so that the next scheduled run takes the repository it
// finds there as the one (after the operator replaced it on purpose). It
// reports whether one was recorded.
func (d *DB) ForgetRepositoryIdentity(ctx context.Context, name string) (bool, error) {
	var n int64
	err := d.write(ctx, "forget identity of repository "+name, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM repository_identities WHERE name = ?`, name)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n > 0, err
}

// UnencryptedRepositories names the configured repositories last found
// unencrypted, by a scheduled run or by a probe, in name order.
func (d *DB) UnencryptedRepositories(ctx context.Context) ([]string, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT name FROM repository_identities WHERE encrypted = 0
		UNION SELECT name FROM repository_probes WHERE encrypted = 0 ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("read unencrypted repositories: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("read unencrypted repositories: %w", err)
		}
		names = append(names, name)
	}
	return names, rows.Err()
}
