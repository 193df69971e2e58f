package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// CatalogSync brings the state database's catalog of the repository named
// name in the config up to date with r, what that repository holds now;
// a sync that fails is recorded in the catalog's status, where job show
// reports it. cmd wires it; the executor calls it around each retention
// run.
type CatalogSync func(ctx context.Context, name string, r *repo.Repository)

// UnreadableSnapshot is a snapshot record that is in the repository but
// cannot be read: damaged, stray, or written by a newer nightjar.
type UnreadableSnapshot = repo.UnreadableSnapshot

// ReadSnapshots reads every snapshot record of r, oldest first, by the
// repository's one rule (repo.Repository.ReadSnapshots): an unreadable one
// is returned in unreadable, not as an error.
func ReadSnapshots(ctx context.Context, r *repo.Repository) (snaps []*repo.Snapshot, unreadable []UnreadableSnapshot, err error) {
	return r.ReadSnapshots(ctx)
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

// legacyRunPrefix begins the IDs the scheduler gave its snapshots before
// they recorded their run (run-N-SOURCE).
const legacyRunPrefix = "run-"

// RunOf returns the number of the scheduled run that made s: its Run, or,
// for a snapshot written before snapshots recorded it, the N of its ID
// run-N-SOURCE; 0 when no run made it.
func RunOf(s *repo.Snapshot) int64 {
	if s.Run != 0 {
		return s.Run
	}
	rest, ok := strings.CutPrefix(s.ID, legacyRunPrefix)
	if !ok {
		return 0
	}
	digits, _, ok := strings.Cut(rest, "-")
	n, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || n <= 0 {
		return 0
	}
	return n
}

// RunSnapshot returns the snapshot of source that run made, among snaps,
// or nil. It finds the snapshot by what it records (RunOf, its one path,
// its time) rather than by its ID, which a rewrite of the record changes.
// Run numbers start again with a new state database, so only a snapshot
// made while the run ran counts; of several, the newest.
func RunSnapshot(snaps []*repo.Snapshot, run pass.Run, source string) *repo.Snapshot {
	var found *repo.Snapshot
	for _, s := range snaps {
		if RunOf(s) == run.ID && len(s.Paths) == 1 && s.Paths[0] == source && during(s, run) &&
			(found == nil || !s.Time.Before(found.Time)) {
			found = s
		}
	}
	return found
}

// during reports whether s was made while run ran.
func during(s *repo.Snapshot, run pass.Run) bool {
	return !run.StartedAt.IsZero() && !s.Time.Before(run.StartedAt) && (run.EndedAt.IsZero() || !s.Time.After(run.EndedAt))
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

var _ pass.RunSnapshotFinder = (*Executor)(nil)

// RunSnapshots finds the snapshots that run, a backup run of job that its
// runner did not record, wrote into the job's repository: one per source
// (RunSnapshot, among the snapshots of this job made on the runner's host),
// with the figures their summaries give. It opens the repository with
// Lookup, which never creates one. complete is false when a source has
// none; res then holds the snapshots that were found. A job with after or
// on_success hooks gets a skipped entry for each: they did not run to
// their end, so the run cannot be called succeeded.
func (e *Executor) RunSnapshots(ctx context.Context, job pass.JobDef, run pass.Run) (pass.Result, bool, error) {
	var res pass.Result
	sources, _ := e.Sources(job.Name)
	if len(sources) == 0 {
		return res, false, nil
	}
	if e.Lookup == nil {
		return res, false, errors.New("no opener for lookups is wired")
	}
	host, err := runnerHost(run.Runner)
	if err != nil {
		return res, false, err
	}
	r, err := e.Lookup(ctx, job.Repository)
	if err != nil {
		return res, false, fmt.Errorf("open repository %s: %w", job.Repository, err)
	}
	defer r.Close()
	all, err := r.Snapshots(ctx)
	if err != nil {
		return res, false, fmt.Errorf("list snapshots of repository %s: %w", job.Repository, err)
	}
	var snaps []*repo.Snapshot
	for _, s := range all {
		if s.Hostname == host && JobOf(s.Tags) == job.Name {
			snaps = append(snaps, s)
		}
	}
	complete := true
	for _, src := range sources {
		s := RunSnapshot(snaps, run, src.Path)
		if s == nil {
			complete = false
			continue
		}
		sum := s.Summary
		res.Figures.BytesRead += sum.BytesRead
		res.Figures.BytesAdded += sum.BytesAdded
		res.Figures.Files += sum.FilesNew + sum.FilesChanged + sum.FilesUnchanged
		res.Figures.FilesSkipped += sum.FilesSkipped
		for _, sk := range sum.Skipped {
			res.Figures.Skipped = append(res.Figures.Skipped, pass.Skipped{Object: sk.Path, Reason: sk.Reason})
		}
		res.Snapshots = append(res.Snapshots, pass.SnapshotRef{RepositoryID: r.ID(), SnapshotID: s.ID, Source: src.Path})
	}
	if e.Hooks != nil {
		hooks := e.Hooks(job.Name)
		for _, h := range []struct {
			name string
			argv []string
		}{{HookAfter, hooks.After}, {HookOnSuccess, hooks.OnSuccess}} {
			if h.argv != nil {
				res.Figures.Skipped = append(res.Figures.Skipped, pass.Skipped{Object: "hook " + h.name, Reason: "the runner stopped before it ended"})
			}
		}
	}
	return res, complete, nil
}

// runnerHost returns the host name a runner's snapshots carry: the host
// part of its identity ("host:pid..."), or this host's name for a run
// without a runner.
func runnerHost(runner string) (string, error) {
	if host, _, ok := strings.Cut(runner, ":"); ok && host != "" {
		return host, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("host name: %w", err)
	}
	return host, nil
}
