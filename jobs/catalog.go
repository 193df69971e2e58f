package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nightjar-backup/nightjar/repo"
)

// CatalogSync brings the state database's catalog of the repository named
// name in the config up to date with r, what that repository holds now;
// a sync that fails is recorded in the catalog's status, where job show
// reports it. cmd wires it; the executor calls it around each retention
// run.
type CatalogSync func(ctx context.Context, name string, r *repo.Repository)

// UnreadableSnapshot is a snapshot record that is in the repository but
// cannot be read: damaged, or written by a newer nightjar.
type UnreadableSnapshot struct {
	ID  string
	Err error
}

// ReadSnapshots reads every snapshot record of r, oldest first. A record
// that is damaged or of a newer format is returned in unreadable, not as an
// error; one that vanished since it was listed (a forget completed) is left
// out; any other failure, such as storage that cannot be read, is the error,
// so that an unreachable repository never passes for damaged records.
func ReadSnapshots(ctx context.Context, r *repo.Repository) (snaps []*repo.Snapshot, unreadable []UnreadableSnapshot, err error) {
	ids, err := r.ListSnapshotIDs(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list snapshots: %w", err)
	}
	for _, id := range ids {
		s, err := r.LoadSnapshot(ctx, id)
		switch {
		case err == nil:
			snaps = append(snaps, s)
		case errors.Is(err, repo.ErrSnapshotNotFound):
		case errors.Is(err, repo.ErrIntegrity), errors.Is(err, repo.ErrUnsupportedVersion):
			unreadable = append(unreadable, UnreadableSnapshot{ID: id, Err: err})
		default:
			return nil, nil, fmt.Errorf("read snapshot %s: %w", id, err)
		}
	}
	repo.SortSnapshots(snaps)
	return snaps, unreadable, nil
}

// JobOf returns the job whose backups made a snapshot with these tags (the
// tag job:NAME, see JobTag), or "" when none did.
func JobOf(tags []string) string {
	for _, t := range tags {
		if name, ok := strings.CutPrefix(t, JobTag("")); ok && name != "" {
			return name
		}
	}
	return ""
}

// syncCatalog calls the catalog sync, when one is wired, and returns the
// sync to call when the run ends (skipped when it was cancelled), so that
// the catalog is rebuilt before a run that changes the repository's
// snapshots and shows what the run left. A failed sync does not stop the
// run: the catalog is a cache.
func (e *Executor) syncCatalog(ctx context.Context, name string, r *repo.Repository) (after func()) {
	if e.Catalog == nil {
		return func() {}
	}
	e.Catalog(ctx, name, r)
	return func() {
		if ctx.Err() == nil {
			e.Catalog(ctx, name, r)
		}
	}
}
