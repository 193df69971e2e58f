package cmd

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

// snapshotFilter narrows the snapshots that "latest" (and find and stats
// without IDs) may name, with restic's meaning: every --path must be one
// of the snapshot's paths, one of the --tag lists must be among its tags
// (all of that list), and its host must be one of the --host values.
type snapshotFilter struct {
	paths []string
	tags  [][]string
	hosts []string
}

// snapshotFilterFlags are the flags snapshotFilterFrom reads, for a
// command whose "latest" they narrow.
func snapshotFilterFlags() []cli.Flag { return filterFlags("for latest: only snapshots") }

// snapshotSelectFlags are the flags snapshotFilterFrom reads, for a command
// that works on every snapshot they select (find, stats).
func snapshotSelectFlags() []cli.Flag { return filterFlags("only snapshots") }

func filterFlags(only string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "path", Usage: only + " of `PATH` (repeatable: of all of them)"},
		&cli.StringSliceFlag{Name: "tag", Usage: only + " with `TAG[,TAG...]` (all of a list; repeatable: any of the lists)"},
		&cli.StringSliceFlag{Name: "host", Usage: only + " of `HOST` (repeatable: any of them)"},
	}
}

func snapshotFilterFrom(c *cli.Context) snapshotFilter {
	f := snapshotFilter{tags: tagLists(c.StringSlice("tag"))}
	for _, p := range c.StringSlice("path") {
		f.paths = append(f.paths, path.Clean(p))
	}
	for _, h := range c.StringSlice("host") {
		if h = strings.TrimSpace(h); h != "" {
			f.hosts = append(f.hosts, h)
		}
	}
	return f
}

func (f snapshotFilter) empty() bool {
	return len(f.paths) == 0 && len(f.tags) == 0 && len(f.hosts) == 0
}

func (f snapshotFilter) matches(s *repo.Snapshot) bool {
	if len(f.hosts) > 0 && !slices.Contains(f.hosts, s.Hostname) {
		return false
	}
	if len(f.tags) > 0 && !hasAllTagsOfAny(s.Tags, f.tags) {
		return false
	}
	return !slices.ContainsFunc(f.paths, func(p string) bool { return !slices.Contains(s.Paths, p) })
}

// String names the filter as it was given: "--host h --path /a".
func (f snapshotFilter) String() string {
	var parts []string
	for _, h := range f.hosts {
		parts = append(parts, "--host "+h)
	}
	for _, p := range f.paths {
		parts = append(parts, "--path "+p)
	}
	for _, list := range f.tags {
		parts = append(parts, "--tag "+strings.Join(list, ","))
	}
	return strings.Join(parts, " ")
}

// selectFrom returns the snapshots the filter matches, oldest first.
func (f snapshotFilter) selectFrom(snaps []*repo.Snapshot) []*repo.Snapshot {
	var out []*repo.Snapshot
	for _, s := range snaps {
		if f.matches(s) {
			out = append(out, s)
		}
	}
	return out
}

// findSnapshot resolves ref as repo.FindSnapshot does; "latest" is the
// newest snapshot the filter matches. An ID or prefix names its snapshot
// whatever the filter, as in restic.
func findSnapshot(ctx context.Context, r *repo.Repository, ref string, f snapshotFilter) (*repo.Snapshot, error) {
	if ref != "latest" || f.empty() {
		return r.FindSnapshot(ctx, ref, nil)
	}
	snaps, err := r.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	if match := f.selectFrom(snaps); len(match) > 0 {
		return match[len(match)-1], nil
	}
	return nil, fmt.Errorf("latest: no snapshot matches %s: %w", f, repo.ErrSnapshotNotFound)
}

// selectSnapshots returns the snapshots a command that reads several works
// on: those refs name ("latest" narrowed by the filter flags), or, without
// refs, every snapshot the filter flags select, oldest first. A filter that
// selects none is an error naming it.
func selectSnapshots(c *cli.Context, r *repo.Repository, refs []string) ([]*repo.Snapshot, error) {
	f := snapshotFilterFrom(c)
	if len(refs) > 0 {
		var out []*repo.Snapshot
		for _, ref := range refs {
			s, err := findSnapshot(c.Context, r, ref, f)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(out, func(o *repo.Snapshot) bool { return o.ID == s.ID }) {
				out = append(out, s)
			}
		}
		return out, nil
	}
	snaps, err := r.Snapshots(c.Context)
	if err != nil {
		return nil, err
	}
	if f.empty() {
		return snaps, nil
	}
	out := f.selectFrom(snaps)
	if len(out) == 0 {
		return nil, fmt.Errorf("no snapshot matches %s: %w", f, repo.ErrSnapshotNotFound)
	}
	return out, nil
}
