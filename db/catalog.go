package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// States of a snapshot in the catalog.
const (
	CatalogPresent         = "present"          // in the repository at the last sync
	CatalogForgotten       = "forgotten"        // gone from the repository
	CatalogManifestInvalid = "manifest_invalid" // its record is in the repository but cannot be read
)

// Verification states of a snapshot in the catalog, from the repository's
// verification records; "" is none yet.
const (
	VerifyOK     = "ok"            // verified structurally
	VerifyOKDeep = "ok_deep"       // verified by reading every chunk
	VerifyFailed = "verify_failed" // its verification failed, or its record is damaged
)

// CatalogSnapshot is a snapshot as the catalog keeps it: a copy of what the
// repository said at the last sync.
type CatalogSnapshot struct {
	Repository   string    // the repository's name in the config
	RepositoryID string    // the repository's ID
	ID           string    // the snapshot's ID
	Time         time.Time // zero for a record never read
	Host         string
	Paths        []string
	Tags         []string
	Job          string // the job its tag job:NAME names; "" for none
	Run          int64  // the scheduled run the snapshot records (jobs.RunOf); 0 for none
	Pinned       bool
	State        string    // CatalogPresent, CatalogForgotten or CatalogManifestInvalid
	Problem      string    // why its record cannot be read (manifest_invalid)
	VerifyState  string    // VerifyOK, VerifyOKDeep, VerifyFailed, or "" when not verified
	VerifiedAt   time.Time // when that verification ended; zero when unknown
	FirstSeen    time.Time // the first sync that found it
	LastSeen     time.Time // the last sync that found it in the repository
}

// CatalogListing is what a sync read from one repository: every snapshot
// record in it, each CatalogPresent or CatalogManifestInvalid. A record
// that cannot be read needs only its ID and Problem.
type CatalogListing struct {
	Repository   string // the repository's name in the config
	RepositoryID string
	// ReadAt is when reading the listing began. A listing read before the
	// one the catalog holds is older than it, and changes nothing (two
	// syncs of one repository may overlap: serve's start and a retention
	// run's). Zero: now.
	ReadAt    time.Time
	Snapshots []CatalogSnapshot
}

// CatalogChanges counts what a sync changed in the catalog.
type CatalogChanges struct {
	Added     int // new to the catalog, or back after being forgotten
	Updated   int // known, with something changed (pinned, state, ...)
	Forgotten int // gone from the repository since the last sync
	Total     int // in the repository now
	// Stale: the listing was read before the one the catalog holds, and
	// was dropped; nothing changed.
	Stale bool
}

// CatalogStatus says how fresh the catalog of one repository is.
type CatalogStatus struct {
	Repository   string
	RepositoryID string    // the ID the last good sync read
	SyncedAt     time.Time // when the listing of the last good sync was read; zero: never
	AttemptedAt  time.Time // the last sync, good or not; zero: never
	Error        string    // why the last sync failed; "" when it did not
}

// CatalogFilter selects catalog rows. Empty fields select everything.
type CatalogFilter struct {
	Repository    string
	Job           string
	WithForgotten bool // also the snapshots gone from the repository
}

// CatalogNow is the time on the catalog's clock, for a
// listing's ReadAt: the database's (the --at clock of tick and serve).
func (d *DB) CatalogNow() time.Time { return d.now() }

// SyncCatalog makes the catalog of l.Repository what the repository holds:
// the snapshots of l are added or updated, the ones the catalog knows but l
// does not are marked forgotten, and the repository's status records a good
// sync now. It changes nothing when called twice with the same listing.
func (d *DB) SyncCatalog(ctx context.Context, l CatalogListing) (CatalogChanges, error) {
	var ch CatalogChanges
	if l.Repository == "" || l.RepositoryID == "" {
		return ch, errors.New("sync catalog: listing without its repository's name and ID")
	}
	now := d.now()
	readAt := l.ReadAt
	if readAt.IsZero() {
		readAt = now
	}
	err := d.write(ctx, "sync catalog of repository "+l.Repository, func(tx *sql.Tx) error {
		var holds sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT synced_at FROM catalog_repositories WHERE name = ?`, l.Repository).Scan(&holds)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if holds.Valid && readAt.UnixNano() < holds.Int64 {
			ch.Stale = true
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO catalog_repositories (name, repository_id, synced_at, attempted_at, sync_error)
			VALUES (?, ?, ?, ?, '')
			ON CONFLICT (name) DO UPDATE SET repository_id = excluded.repository_id, synced_at = excluded.synced_at,
				attempted_at = excluded.attempted_at, sync_error = ''`,
			l.Repository, l.RepositoryID, readAt.UnixNano(), now.UnixNano()); err != nil {
			return err
		}
		known, err := catalogRows(ctx, tx, CatalogFilter{Repository: l.Repository, WithForgotten: true})
		if err != nil {
			return err
		}
		before := map[string]CatalogSnapshot{}
		for _, s := range known {
			before[s.ID] = s
		}
		seen := map[string]bool{}
		for _, s := range l.Snapshots {
			if err := checkListed(s, seen); err != nil {
				return err
			}
			seen[s.ID] = true
			old, ok := before[s.ID]
			s.Repository, s.RepositoryID, s.FirstSeen, s.LastSeen = l.Repository, l.RepositoryID, now, now
			switch {
			case !ok:
				ch.Added++
			case old.State == CatalogForgotten:
				ch.Added++
				s.FirstSeen = old.FirstSeen
			default:
				s.FirstSeen = old.FirstSeen
				if s.State == CatalogManifestInvalid {
					// What an earlier sync could read stays known:
					// which snapshot it was is what the operator needs.
					s.Time, s.Host, s.Paths, s.Tags, s.Job, s.Run, s.Pinned = old.Time, old.Host, old.Paths, old.Tags, old.Job, old.Run, old.Pinned
				}
				if !sameSnapshot(old, s) {
					ch.Updated++
				}
			}
			if err := putCatalogRow(ctx, tx, s); err != nil {
				return err
			}
		}
		for _, old := range known {
			if seen[old.ID] || old.State == CatalogForgotten {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE catalog_snapshots SET state = 'forgotten' WHERE repository = ? AND snapshot_id = ?`,
				l.Repository, old.ID); err != nil {
				return err
			}
			ch.Forgotten++
		}
		ch.Total = len(l.Snapshots)
		return nil
	})
	return ch, err
}

// checkListed refuses a listed snapshot that is not one a repository holds.
func checkListed(s CatalogSnapshot, seen map[string]bool) error {
	switch {
	case s.ID == "":
		return errors.New("a listed snapshot has no ID")
	case seen[s.ID]:
		return fmt.Errorf("snapshot %s is listed twice", s.ID)
	case s.State == CatalogPresent && s.Time.IsZero():
		return fmt.Errorf("snapshot %s is present but has no time", s.ID)
	case s.State == CatalogManifestInvalid && s.Problem == "":
		return fmt.Errorf("snapshot %s cannot be read but no problem is given", s.ID)
	case s.VerifyState != "" && s.VerifyState != VerifyOK && s.VerifyState != VerifyOKDeep && s.VerifyState != VerifyFailed:
		return fmt.Errorf("snapshot %s has verification state %q", s.ID, s.VerifyState)
	case s.State != CatalogPresent && s.State != CatalogManifestInvalid:
		return fmt.Errorf("snapshot %s has state %q: a listing holds only %s and %s", s.ID, s.State, CatalogPresent, CatalogManifestInvalid)
	}
	return nil
}

// sameSnapshot reports whether a sync found nothing new about a snapshot.
func sameSnapshot(a, b CatalogSnapshot) bool {
	return a.RepositoryID == b.RepositoryID && a.Time.Equal(b.Time) && a.Host == b.Host &&
		slices.Equal(a.Paths, b.Paths) && slices.Equal(a.Tags, b.Tags) && a.Job == b.Job && a.Run == b.Run &&
		a.Pinned == b.Pinned && a.State == b.State && a.Problem == b.Problem &&
		a.VerifyState == b.VerifyState && a.VerifiedAt.Equal(b.VerifiedAt)
}

func putCatalogRow(ctx context.Context, tx *sql.Tx, s CatalogSnapshot) error {
	paths, err := json.Marshal(nonNilStrings(s.Paths))
	if err != nil {
		return err
	}
	tags, err := json.Marshal(nonNilStrings(s.Tags))
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO catalog_snapshots
		(repository, snapshot_id, repository_id, time, host, paths, tags, job, run, pinned, state, problem, verify_state, verified_at,
			first_seen_at, last_seen_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (repository, snapshot_id) DO UPDATE SET repository_id = excluded.repository_id, time = excluded.time,
			host = excluded.host, paths = excluded.paths, tags = excluded.tags, job = excluded.job, run = excluded.run, pinned = excluded.pinned,
			state = excluded.state, problem = excluded.problem, verify_state = excluded.verify_state,
			verified_at = excluded.verified_at, first_seen_at = excluded.first_seen_at, last_seen_at = excluded.last_seen_at`,
		s.Repository, s.ID, s.RepositoryID, ns(s.Time), s.Host, string(paths), string(tags), nullString(s.Job), nullRun(s.Run), s.Pinned,
		s.State, s.Problem, nullString(s.VerifyState), ns(s.VerifiedAt), s.FirstSeen.UnixNano(), s.LastSeen.UnixNano())
	return err
}

// nullRun is a run number as stored: NULL for none.
func nullRun(run int64) any {
	if run == 0 {
		return nil
	}
	return run
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CatalogSyncFailed records that a sync of repository's catalog failed
// now, with its cause; the catalog keeps what the last good sync found.
func (d *DB) CatalogSyncFailed(ctx context.Context, repository string, cause error) error {
	if repository == "" || cause == nil {
		return errors.New("record failed catalog sync: no repository or no cause given")
	}
	now := d.now()
	return d.write(ctx, "record failed catalog sync of repository "+repository, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO catalog_repositories (name, attempted_at, sync_error) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET attempted_at = excluded.attempted_at, sync_error = excluded.sync_error`,
			repository, now.UnixNano(), cause.Error())
		return err
	})
}

// CatalogStatus says when the catalog of repository was last synced and
// whether the last sync failed. A repository never synced has a zero
// status with its name.
func (d *DB) CatalogStatus(ctx context.Context, repository string) (CatalogStatus, error) {
	st := CatalogStatus{Repository: repository}
	var id sql.NullString
	var synced, attempted sql.NullInt64
	err := d.sql.QueryRowContext(ctx, `SELECT repository_id, synced_at, attempted_at, sync_error FROM catalog_repositories WHERE name = ?`,
		repository).Scan(&id, &synced, &attempted, &st.Error)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return st, nil
	case err != nil:
		return st, fmt.Errorf("catalog status of repository %s: %w", repository, err)
	}
	st.RepositoryID, st.SyncedAt, st.AttemptedAt = id.String, timeOf(synced), timeOf(attempted)
	return st, nil
}

// CatalogSnapshots lists the snapshots of the catalog that f selects,
// oldest first (records never read last, by ID).
func (d *DB) CatalogSnapshots(ctx context.Context, f CatalogFilter) ([]CatalogSnapshot, error) {
	var out []CatalogSnapshot
	err := d.read(ctx, "list catalog", func(tx *sql.Tx) error {
		var err error
		out, err = catalogRows(ctx, tx, f)
		return err
	})
	return out, err
}

func catalogRows(ctx context.Context, q querier, f CatalogFilter) ([]CatalogSnapshot, error) {
	rows, err := q.QueryContext(ctx, `SELECT repository, snapshot_id, repository_id, time, host, paths, tags, job, run, pinned,
			state, problem, verify_state, verified_at, first_seen_at, last_seen_at
		FROM catalog_snapshots
		WHERE (? = '' OR repository = ?) AND (? = '' OR job = ?) AND (? OR state <> 'forgotten')
		ORDER BY time IS NULL, time, snapshot_id`,
		f.Repository, f.Repository, f.Job, f.Job, f.WithForgotten)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []CatalogSnapshot
	for rows.Next() {
		var s CatalogSnapshot
		var t sql.NullInt64
		var job, verify sql.NullString
		var verified, run sql.NullInt64
		var paths, tags string
		var first, last int64
		if err := rows.Scan(&s.Repository, &s.ID, &s.RepositoryID, &t, &s.Host, &paths, &tags, &job, &run, &s.Pinned,
			&s.State, &s.Problem, &verify, &verified, &first, &last); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(paths), &s.Paths); err != nil {
			return nil, fmt.Errorf("snapshot %s: paths: %w", s.ID, err)
		}
		if err := json.Unmarshal([]byte(tags), &s.Tags); err != nil {
			return nil, fmt.Errorf("snapshot %s: tags: %w", s.ID, err)
		}
		s.Time, s.Job, s.Run, s.VerifyState, s.VerifiedAt = timeOf(t), job.String, run.Int64, verify.String, timeOf(verified)
		s.FirstSeen, s.LastSeen = time.Unix(0, first).UTC(), time.Unix(0, last).UTC()
		out = append(out, s)
	}
	return out, rows.Err()
}
