package cmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/repo"
)

// syncCatalog rebuilds the state database's catalog of the configured
// repository name from r, the truth; a failure is recorded in the
// catalog's status (job show reports it) and returned.
func syncCatalog(ctx context.Context, state *db.DB, name string, r *repo.Repository) (db.CatalogChanges, error) {
	listing, err := readCatalog(ctx, name, r, state.CatalogNow())
	if err != nil {
		err = fmt.Errorf("read repository %s: %w", name, err)
		return db.CatalogChanges{}, recordSyncFailure(ctx, state, name, err)
	}
	ch, err := state.SyncCatalog(ctx, listing)
	if err != nil {
		return ch, recordSyncFailure(ctx, state, name, err)
	}
	return ch, nil
}

// recordSyncFailure records a failed sync and returns its cause (with the
// recording's own failure, if any). A sync stopped because ctx ended
// (serve or the run is stopping) did not fail, and is not recorded.
func recordSyncFailure(ctx context.Context, state *db.DB, name string, cause error) error {
	if ctx.Err() != nil {
		return cause
	}
	if err := state.CatalogSyncFailed(context.WithoutCancel(ctx), name, cause); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// readCatalog lists every snapshot record of r for the catalog: readable
// ones with what they say and whether they are pinned, damaged ones as
// manifest_invalid.
func readCatalog(ctx context.Context, name string, r *repo.Repository, readAt time.Time) (db.CatalogListing, error) {
	l := db.CatalogListing{Repository: name, RepositoryID: r.ID(), ReadAt: readAt}
	snaps, unreadable, err := jobs.ReadSnapshots(ctx, r)
	if err != nil {
		return l, err
	}
	pinned, err := r.PinnedIDs(ctx)
	if err != nil {
		return l, err
	}
	verified, err := catalogVerifications(ctx, r)
	if err != nil {
		return l, err
	}
	for _, s := range snaps {
		v := verified[s.ID]
		l.Snapshots = append(l.Snapshots, db.CatalogSnapshot{ID: s.ID, Time: s.Time, Host: s.Hostname, Paths: s.Paths, Tags: s.Tags,
			Job: jobs.JobOf(s.Tags), Run: jobs.RunOf(s), Pinned: slices.Contains(pinned, s.ID), State: db.CatalogPresent, VerifyState: v.VerifyState, VerifiedAt: v.VerifiedAt})
	}
	for _, u := range unreadable {
		v := verified[u.ID]
		l.Snapshots = append(l.Snapshots, db.CatalogSnapshot{ID: u.ID, State: db.CatalogManifestInvalid, Problem: u.Err.Error(),
			VerifyState: v.VerifyState, VerifiedAt: v.VerifiedAt})
	}
	return l, nil
}

// catalogVerifications reads the repository's verification records as the
// catalog keeps them, by snapshot ID: a damaged record is verify_failed,
// as it is for retention (repo.VerifyFailed).
func catalogVerifications(ctx context.Context, r *repo.Repository) (map[string]db.CatalogSnapshot, error) {
	ids, err := r.VerifiedIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]db.CatalogSnapshot{}
	for _, id := range ids {
		v, err := r.Verification(ctx, id)
		switch {
		case errors.Is(err, repo.ErrVerificationNotFound):
		case errors.Is(err, repo.ErrIntegrity), errors.Is(err, repo.ErrUnsupportedVersion):
			out[id] = db.CatalogSnapshot{VerifyState: db.VerifyFailed}
		case err != nil:
			return nil, err
		case !v.OK:
			out[id] = db.CatalogSnapshot{VerifyState: db.VerifyFailed, VerifiedAt: v.Time}
		case v.Deep:
			out[id] = db.CatalogSnapshot{VerifyState: db.VerifyOKDeep, VerifiedAt: v.Time}
		default:
			out[id] = db.CatalogSnapshot{VerifyState: db.VerifyOK, VerifiedAt: v.Time}
		}
	}
	return out, nil
}

// catalogHook is the executor's CatalogSync: syncs around retention runs,
// whose failures the catalog's status records.
func catalogHook(state *db.DB) jobs.CatalogSync {
	return func(ctx context.Context, name string, r *repo.Repository) {
		_, _ = syncCatalog(ctx, state, name, r)
	}
}

// syncAllCatalogs rebuilds the catalog of every configured repository, as
// serve does when it starts, and tells report how each went. It never
// creates a repository: one that create_if_missing has not made yet has
// nothing to list.
func syncAllCatalogs(ctx context.Context, cfg *config.Config, state *db.DB, report func(line string, failed bool)) {
	for _, name := range slices.Sorted(maps.Keys(cfg.Repositories)) {
		r, err := openJobRepository(ctx, cfg, name)
		switch {
		case ctx.Err() != nil:
			return // serve is stopping: nothing failed
		case notCreatedYet(err) && cfg.Repositories[name].CreateIfMissing:
			report(fmt.Sprintf("catalog of repository %s: not created yet (create_if_missing), nothing to list", name), false)
			continue
		case err != nil:
			err = recordSyncFailure(ctx, state, name, err)
			report(fmt.Sprintf("catalog of repository %s not synced, job show lists what the last sync found: %s", name, errorMessage(err)), true)
			continue
		}
		if known, err := state.RecordedRepositoryID(ctx, name); err == nil && known != "" && known != r.ID() {
			// A replaced repository's listing would mark every snapshot
			// of the one recorded forgotten: scheduled runs refuse it too.
			r.Close()
			err = recordSyncFailure(ctx, state, name, fmt.Errorf("the repository found has ID %s, not the recorded %s: it was replaced (%s)",
				idPrefix(r.ID()), idPrefix(known), jobs.CodeRepositoryReplaced))
			report(fmt.Sprintf("catalog of repository %s not synced: %s", name, errorMessage(err)), true)
			continue
		}
		ch, err := syncCatalog(ctx, state, name, r)
		r.Close()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			report(fmt.Sprintf("catalog of repository %s not synced, job show lists what the last sync found: %s", name, errorMessage(err)), true)
			continue
		}
		report(fmt.Sprintf("catalog of repository %s synced: %d snapshots (%d added, %d updated, %d forgotten)",
			name, ch.Total, ch.Added, ch.Updated, ch.Forgotten), false)
	}
}

// catalogJSON is the catalog's part of job show --json: the job's
// snapshots in its repository as the last sync found them.
type catalogJSON struct {
	Repository string                `json:"repository"`
	SyncedAt   *time.Time            `json:"synced_at"`       // the last good sync; null: never
	SyncError  string                `json:"sync_error"`      // why the last sync failed; "" when it did not
	Snapshots  []catalogSnapshotJSON `json:"snapshots"`       // present and manifest_invalid, oldest first
	Forgotten  int                   `json:"forgotten_count"` // the job's snapshots gone from the repository
}

type catalogSnapshotJSON struct {
	ID      string     `json:"id"`
	Time    *time.Time `json:"time"`
	Host    string     `json:"hostname"`
	Paths   []string   `json:"paths"`
	Tags    []string   `json:"tags"`
	Run     int64      `json:"run,omitempty"` // the scheduled run that made it
	Pinned  bool       `json:"pinned"`
	State   string     `json:"state"`
	Problem string     `json:"problem,omitempty"`
	// Verified is the repository's verification record of the snapshot:
	// "" (none yet), "ok", "ok_deep" or "verify_failed".
	Verified   string     `json:"verified"`
	VerifiedAt *time.Time `json:"verified_at"`
}

// jobCatalog reads the job's snapshots from the catalog of its repository.
func jobCatalog(ctx context.Context, state *db.DB, job, repository string) (catalogJSON, error) {
	out := catalogJSON{Repository: repository, Snapshots: []catalogSnapshotJSON{}}
	st, err := state.CatalogStatus(ctx, repository)
	if err != nil {
		return out, err
	}
	out.SyncedAt, out.SyncError = timePtr(st.SyncedAt), st.Error
	rows, err := state.CatalogSnapshots(ctx, db.CatalogFilter{Repository: repository, Job: job, WithForgotten: true})
	if err != nil {
		return out, err
	}
	for _, s := range rows {
		if s.State == db.CatalogForgotten {
			out.Forgotten++
			continue
		}
		out.Snapshots = append(out.Snapshots, catalogSnapshotJSON{ID: s.ID, Time: timePtr(s.Time), Host: s.Host,
			Paths: nonNil(s.Paths), Tags: nonNil(s.Tags), Run: s.Run, Pinned: s.Pinned, State: s.State, Problem: s.Problem,
			Verified: s.VerifyState, VerifiedAt: timePtr(s.VerifiedAt)})
	}
	return out, nil
}

// printJobCatalog writes the catalog's part of job show.
func printJobCatalog(p *printer, c catalogJSON) {
	switch {
	case c.SyncedAt == nil:
		p.Printf("  catalog:    no snapshots known yet: the catalog of repository %s was never synced (serve's start and retention runs sync it)\n", c.Repository)
	default:
		p.Printf("  catalog:    %d snapshots in repository %s, as synced at %s\n", len(c.Snapshots), c.Repository, humanTime(*c.SyncedAt))
	}
	if c.SyncError != "" {
		p.Printf("  last sync failed: %s\n", c.SyncError)
	}
	for _, s := range c.Snapshots {
		when := "-"
		if s.Time != nil {
			when = humanTime(*s.Time)
		}
		extra := ""
		if s.Run != 0 {
			extra = fmt.Sprintf(" run %d", s.Run)
		}
		if s.Verified != "" {
			extra += " " + s.Verified
		}
		if s.Pinned {
			extra += " pinned"
		}
		if s.State != db.CatalogPresent {
			extra += " " + s.State + ": " + s.Problem
		}
		p.Printf("    %-20s %s %s %v%s\n", shortID(s.ID), when, s.Host, s.Paths, extra)
	}
	if c.Forgotten > 0 {
		p.Printf("    (and %d forgotten)\n", c.Forgotten)
	}
}
