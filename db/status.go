package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Modes of a pass, for PassBeat.Mode.
const (
	PassTick  = "tick"
	PassServe = "serve"
)

// PassBeat is the runtime heartbeat of a pass of tick or serve: the newest
// pass of each host and mode is kept.
type PassBeat struct {
	Host    string
	Mode    string // PassTick or PassServe
	PID     int
	Version string
	At      time.Time // when the pass began
}

// RecordPass stores b as the newest pass of its host and mode.
func (d *DB) RecordPass(ctx context.Context, b PassBeat) error {
	return d.write(ctx, "record pass", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO scheduler_passes (host, mode, pid, version, at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (host, mode) DO UPDATE SET pid = excluded.pid, version = excluded.version, at = excluded.at
			WHERE excluded.at >= scheduler_passes.at`,
			b.Host, b.Mode, b.PID, b.Version, b.At.UnixNano())
		return err
	})
}

func passes(ctx context.Context, q querier) ([]PassBeat, error) {
	rows, err := q.QueryContext(ctx, `SELECT host, mode, pid, version, at FROM scheduler_passes ORDER BY at DESC, host, mode`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []PassBeat
	for rows.Next() {
		var b PassBeat
		var at int64
		if err := rows.Scan(&b.Host, &b.Mode, &b.PID, &b.Version, &at); err != nil {
			return nil, err
		}
		b.At = time.Unix(0, at).UTC()
		out = append(out, b)
	}
	return out, rows.Err()
}

// RepositoryProbe is what a probe of a configured repository found.
type RepositoryProbe struct {
	Name      string // the repository's name in the config
	Location  string // where it is, as printed: no credential
	At        time.Time
	Reachable bool   // opened with its password and took a write
	Error     string // why not: one line, no secret
	// EncryptionKnown: its config was read, and Encrypted says whether it
	// is encrypted.
	EncryptionKnown bool
	Encrypted       bool
	// SpaceKnown: FreeBytes and TotalBytes of its file system were read.
	SpaceKnown bool
	FreeBytes  int64
	TotalBytes int64
	// SizeKnown: SizeBytes, the bytes of the repository's objects, were
	// listed.
	SizeKnown bool
	SizeBytes int64
}

// ClaimProbe takes on the probe of repository name for a pass at now: it
// reports true, and records the claim, when no pass claimed it within
// every before now, so that the passes of several processes probe it once
// per every.
func (d *DB) ClaimProbe(ctx context.Context, name string, now time.Time, every time.Duration) (bool, error) {
	var claimed bool
	err := d.write(ctx, "claim probe of repository "+name, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO repository_probes (name, claimed_at) VALUES (?, ?)
			ON CONFLICT (name) DO UPDATE SET claimed_at = excluded.claimed_at
			WHERE repository_probes.claimed_at <= ? OR repository_probes.claimed_at > excluded.claimed_at`,
			name, now.UnixNano(), now.Add(-every).UnixNano())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		claimed = n > 0
		return err
	})
	return claimed, err
}

// RecordProbe stores p as the newest probe of its repository (a claim too).
func (d *DB) RecordProbe(ctx context.Context, p RepositoryProbe) error {
	if !p.Reachable && p.Error == "" {
		return fmt.Errorf("record probe of repository %s: an unreachable repository needs its reason", p.Name)
	}
	var encrypted, free, total, size any
	if p.EncryptionKnown {
		encrypted = p.Encrypted
	}
	if p.SpaceKnown {
		free, total = p.FreeBytes, p.TotalBytes
	}
	if p.SizeKnown {
		size = p.SizeBytes
	}
	at := p.At.UnixNano()
	return d.write(ctx, "record probe of repository "+p.Name, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO repository_probes
				(name, location, claimed_at, probed_at, reachable, error, encrypted, free_bytes, total_bytes, size_bytes)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET location = excluded.location, claimed_at = max(claimed_at, excluded.claimed_at),
				probed_at = excluded.probed_at, reachable = excluded.reachable, error = excluded.error,
				encrypted = excluded.encrypted, free_bytes = excluded.free_bytes, total_bytes = excluded.total_bytes,
				size_bytes = excluded.size_bytes`,
			p.Name, p.Location, at, at, p.Reachable, p.Error, encrypted, free, total, size)
		return err
	})
}

func probes(ctx context.Context, q querier) ([]RepositoryProbe, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, location, probed_at, reachable, error, encrypted, free_bytes, total_bytes, size_bytes
		FROM repository_probes WHERE probed_at IS NOT NULL ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []RepositoryProbe
	for rows.Next() {
		var p RepositoryProbe
		var at int64
		var encrypted sql.NullBool
		var free, total, size sql.NullInt64
		if err := rows.Scan(&p.Name, &p.Location, &at, &p.Reachable, &p.Error, &encrypted, &free, &total, &size); err != nil {
			return nil, err
		}
		p.At = time.Unix(0, at).UTC()
		p.EncryptionKnown, p.Encrypted = encrypted.Valid, encrypted.Bool
		p.SpaceKnown, p.FreeBytes, p.TotalBytes = free.Valid, free.Int64, total.Int64
		p.SizeKnown, p.SizeBytes = size.Valid, size.Int64
		out = append(out, p)
	}
	return out, rows.Err()
}

// JobFacts is what the state database knows of a live job for status.
type JobFacts struct {
	JobInfo
	// LastRuns are the newest ended run of each kind the job ran that
	// succeeded, partially failed or failed (cancelled and interrupted
	// runs did not decide anything), by kind.
	LastRuns []pass.Run
	// LastGoodSnapshot is the newer of the end of the newest succeeded or
	// partial backup run that made a snapshot, and the time of the newest
	// snapshot of the job the catalog has in its repository (which is what
	// is left when the runs were lost with an older state database).
	LastGoodSnapshot time.Time
	// LastVerify is the newest ended verify run that succeeded, partially
	// failed or failed; nil: none.
	LastVerify *pass.Run
	// VerifyFailedSnapshots are the snapshots of the job still in the
	// repository whose verification failed, as the catalog says.
	VerifyFailedSnapshots []string
	// LastDeepVerify is the newer of the end of the newest succeeded deep
	// verify run (counter deep = 1) and the newest ok_deep verification
	// the catalog has of a snapshot of the job; zero: none.
	LastDeepVerify time.Time
}

// StatusFacts is everything nightjar status reads from the state database,
// in one consistent view.
type StatusFacts struct {
	Jobs    []JobFacts // live jobs by name, scheduled work included
	Queued  []pass.Run // oldest first
	Running []pass.Run
	Passes  []PassBeat
	Probes  []RepositoryProbe
	// LastBackupAdded is, by repository name, what the newest succeeded or
	// partial backup run into it added.
	LastBackupAdded map[string]int64
}

// StatusFacts reads the facts of nightjar status.
func (d *DB) StatusFacts(ctx context.Context) (StatusFacts, error) {
	var f StatusFacts
	err := d.read(ctx, "read status", func(tx *sql.Tx) error {
		var err error
		f, err = statusFacts(ctx, tx)
		return err
	})
	return f, err
}

// statusFacts reads the facts of nightjar status in the transaction of q.
func statusFacts(ctx context.Context, q querier) (StatusFacts, error) {
	var f StatusFacts
	var err error
	if f.Jobs, err = jobFacts(ctx, q); err != nil {
		return f, err
	}
	if f.Queued, err = queryRuns(ctx, q, false, `WHERE r.status = 'queued' ORDER BY r.queued_at, r.id`); err != nil {
		return f, err
	}
	if f.Running, err = queryRuns(ctx, q, false, `WHERE r.status = 'running' ORDER BY r.started_at, r.id`); err != nil {
		return f, err
	}
	if f.Passes, err = passes(ctx, q); err != nil {
		return f, err
	}
	if f.Probes, err = probes(ctx, q); err != nil {
		return f, err
	}
	f.LastBackupAdded, err = lastBackupAdded(ctx, q)
	return f, err
}

// decided lists the statuses of runs that ended and decided something.
const decided = `('succeeded', 'partial_failure', 'failed')`

func jobFacts(ctx context.Context, q querier) ([]JobFacts, error) {
	infos, err := queryJobs(ctx, q, "ORDER BY name")
	if err != nil {
		return nil, err
	}
	facts := make([]JobFacts, len(infos))
	byID := make(map[int64]*JobFacts, len(infos))
	for i, info := range infos {
		facts[i].JobInfo = info
		byID[info.ID] = &facts[i]
	}
	last, err := queryRuns(ctx, q, false, `WHERE r.id IN (
			SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY job_id, kind ORDER BY ended_at DESC, id DESC) AS n
				FROM runs WHERE status IN `+decided+`) WHERE n = 1)
		AND j.deleted_at IS NULL ORDER BY j.name, r.kind`)
	if err != nil {
		return nil, err
	}
	for _, r := range last {
		f := byID[r.JobID]
		if f == nil {
			continue
		}
		f.LastRuns = append(f.LastRuns, r)
	}
	for i := range facts {
		f := &facts[i]
		for k := range f.LastRuns {
			if f.LastRuns[k].Kind == pass.KindVerify {
				f.LastVerify = &f.LastRuns[k]
			}
		}
	}
	perJob := []struct {
		query string
		set   func(f *JobFacts, t time.Time)
	}{
		{`SELECT r.job_id, max(r.ended_at) FROM runs r
			WHERE r.kind = 'backup' AND r.status IN ('succeeded', 'partial_failure')
			AND EXISTS (SELECT 1 FROM run_snapshots s WHERE s.run_id = r.id) GROUP BY r.job_id`,
			func(f *JobFacts, t time.Time) { f.LastGoodSnapshot = later(f.LastGoodSnapshot, t) }},
		{`SELECT j.id, max(c.time) FROM catalog_snapshots c JOIN jobs j ON j.name = c.job AND j.deleted_at IS NULL
			WHERE c.state = 'present' GROUP BY j.id`,
			func(f *JobFacts, t time.Time) { f.LastGoodSnapshot = later(f.LastGoodSnapshot, t) }},
		{`SELECT r.job_id, max(r.ended_at) FROM runs r
			WHERE r.kind = 'verify' AND r.status = 'succeeded' AND json_extract(r.counters, '$.deep') = 1 GROUP BY r.job_id`,
			func(f *JobFacts, t time.Time) { f.LastDeepVerify = later(f.LastDeepVerify, t) }},
		{`SELECT j.id, max(c.verified_at) FROM catalog_snapshots c JOIN jobs j ON j.name = c.job AND j.deleted_at IS NULL
			WHERE c.verify_state = 'ok_deep' GROUP BY j.id`,
			func(f *JobFacts, t time.Time) { f.LastDeepVerify = later(f.LastDeepVerify, t) }},
	}
	for _, p := range perJob {
		if err := eachJobTime(ctx, q, p.query, func(id int64, t time.Time) {
			if f := byID[id]; f != nil {
				p.set(f, t)
			}
		}); err != nil {
			return nil, err
		}
	}
	rows, err := q.QueryContext(ctx, `SELECT j.id, c.snapshot_id FROM catalog_snapshots c
		JOIN jobs j ON j.name = c.job AND j.deleted_at IS NULL
		WHERE c.verify_state = 'verify_failed' AND c.state <> 'forgotten' ORDER BY c.time, c.snapshot_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var snapshot string
		if err := rows.Scan(&id, &snapshot); err != nil {
			return nil, err
		}
		if f := byID[id]; f != nil {
			f.VerifyFailedSnapshots = append(f.VerifyFailedSnapshots, snapshot)
		}
	}
	return facts, rows.Err()
}

// eachJobTime runs a query of (job ID, time) rows and calls fn for each
// row with a time.
func eachJobTime(ctx context.Context, q querier, query string, fn func(id int64, t time.Time)) error {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var t sql.NullInt64
		if err := rows.Scan(&id, &t); err != nil {
			return err
		}
		if t.Valid {
			fn(id, timeOf(t))
		}
	}
	return rows.Err()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func lastBackupAdded(ctx context.Context, q querier) (map[string]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT repository, bytes_added FROM (
			SELECT j.repository, r.bytes_added,
				row_number() OVER (PARTITION BY j.repository ORDER BY r.ended_at DESC, r.id DESC) AS n
			FROM runs r JOIN jobs j ON j.id = r.job_id
			WHERE r.kind = 'backup' AND r.status IN ('succeeded', 'partial_failure'))
		WHERE n = 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var added int64
		if err := rows.Scan(&name, &added); err != nil {
			return nil, err
		}
		out[name] = added
	}
	return out, rows.Err()
}

// RepositoryUsed reports whether repository name ever held a backup: a
// backup run into it succeeded or partially failed, or a probe found it
// reachable. A repository with create_if_missing that is missing and was
// never used is not created yet; one that was used is lost (a disk not
// mounted).
func (d *DB) RepositoryUsed(ctx context.Context, name string) (bool, error) {
	var used bool
	err := d.sql.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs r JOIN jobs j ON j.id = r.job_id
			WHERE j.repository = ? AND r.kind = 'backup' AND r.status IN ('succeeded', 'partial_failure'))
		OR EXISTS (SELECT 1 FROM repository_probes WHERE name = ? AND reachable = 1)`, name, name).Scan(&used)
	if err != nil {
		return false, fmt.Errorf("read whether repository %s was used: %w", name, err)
	}
	return used, nil
}
