package cmd

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/repo"
)

func tagCommand() *cli.Command {
	return &cli.Command{
		Name:      "tag",
		Usage:     "change the tags of snapshots (restic's tag); a changed snapshot keeps its ID",
		ArgsUsage: "[SNAPSHOT...]",
		Description: "Without SNAPSHOT, every snapshot that the --host, --tag and --path filters let through " +
			"changes, as in restic. --set replaces the tags (--set \"\" removes them all) and cannot be " +
			"combined with --add or --remove. Takes the exclusive lock, as forget does.",
		Flags: append(repoFlags(),
			&cli.StringSliceFlag{Name: "add", Usage: "add `TAG[,TAG...]` (repeatable)"},
			&cli.StringSliceFlag{Name: "remove", Usage: "remove `TAG[,TAG...]` (repeatable)"},
			&cli.StringSliceFlag{Name: "set", Usage: "replace the tags with `TAG[,TAG...]` (repeatable)"},
			&cli.StringSliceFlag{Name: "host", Usage: "only snapshots of `HOST` (repeatable: any of them)"},
			&cli.StringSliceFlag{Name: "tag", Usage: "only snapshots with `TAG[,TAG...]` (all of a list; repeatable: any of the lists)"},
			&cli.StringSliceFlag{Name: "path", Usage: "only snapshots that include `PATH` (repeatable: all of them)"},
			jsonFlag(),
		),
		Action: runTag,
	}
}

// tagOptions is what tag was asked to do.
type tagOptions struct {
	change repo.TagChange
	refs   []string // snapshots named: IDs, unique prefixes or latest
	filter forgetOptions
}

func tagArgs(c *cli.Context) (tagOptions, error) {
	flat := func(name string) ([]string, error) {
		tags := slices.Concat(tagLists(c.StringSlice(name))...)
		for _, t := range tags {
			if strings.ContainsAny(t, "\r\n") {
				return nil, usageError{fmt.Errorf("invalid tag %q in --%s: want a tag on one line", t, name)}
			}
		}
		return tags, nil
	}
	var opts tagOptions
	var err error
	if opts.change.Add, err = flat("add"); err != nil {
		return tagOptions{}, err
	}
	if opts.change.Remove, err = flat("remove"); err != nil {
		return tagOptions{}, err
	}
	if opts.change.Set, err = flat("set"); err != nil {
		return tagOptions{}, err
	}
	opts.change.SetTags = c.IsSet("set")
	switch {
	case opts.change.SetTags && (c.IsSet("add") || c.IsSet("remove")):
		return tagOptions{}, usageError{errors.New("--set cannot be combined with --add or --remove: give --set alone, or --add and --remove")}
	case !opts.change.SetTags && len(opts.change.Add) == 0 && len(opts.change.Remove) == 0:
		return tagOptions{}, usageError{errors.New("tag needs --add, --remove or --set with at least one tag (--set \"\" removes all tags)")}
	}
	opts.refs = c.Args().Slice()
	opts.filter = forgetOptions{hosts: c.StringSlice("host"), paths: c.StringSlice("path"), tags: tagLists(c.StringSlice("tag"))}
	for i, q := range opts.filter.paths {
		opts.filter.paths[i] = path.Clean(q)
	}
	return opts, nil
}

// tagJSON is tag's outcome in --json.
type tagJSON struct {
	Changed    []tagSnapshotJSON `json:"changed"`
	Unchanged  []tagSnapshotJSON `json:"unchanged"`  // had the tags asked for already
	Forgetting []string          `json:"forgetting"` // marked by an interrupted forget: not changed
}

// tagSnapshotJSON is one snapshot and its tags now.
type tagSnapshotJSON struct {
	ID   string   `json:"id"`
	Tags []string `json:"tags"`
}

func runTag(c *cli.Context) error { return withRepository(c, tagArgs, tagIn) }

// tagIn changes the tags of the snapshots opts selects.
func tagIn(c *cli.Context, p *printer, r *repo.Repository, opts tagOptions) error {
	res, err := r.ChangeTags(c.Context, opts.selection, opts.change)
	var usage usageError
	switch {
	case errors.As(err, &usage):
		return usage
	case err != nil && res != nil:
		printTagged(p, res)
		return err
	case err != nil:
		return busyHint(err)
	}
	out := tagJSON{Changed: []tagSnapshotJSON{}, Unchanged: []tagSnapshotJSON{}, Forgetting: nonNil(res.Forgetting)}
	for _, ch := range res.Changed {
		out.Changed = append(out.Changed, tagSnapshotJSON{ID: ch.Snapshot.ID, Tags: nonNil(ch.Snapshot.Tags)})
	}
	for _, s := range res.Unchanged {
		out.Unchanged = append(out.Unchanged, tagSnapshotJSON{ID: s.ID, Tags: nonNil(s.Tags)})
	}
	printTagged(p, res)
	p.Printf("changed %d snapshots, %d unchanged\n", len(res.Changed), len(res.Unchanged)+len(res.Forgetting))
	return p.JSON(out)
}

// printTagged says what became of each snapshot, and warns about a job's
// tag taken away.
func printTagged(p *printer, res *repo.TagResult) {
	for _, ch := range res.Changed {
		s := ch.Snapshot
		p.Printf("changed tags of snapshot %s: %s\n", shortID(s.ID), tagText(s.Tags))
		for _, t := range ch.Old {
			if job, ok := strings.CutPrefix(t, jobs.JobTag("")); ok && !slices.Contains(s.Tags, t) {
				p.Warnf("snapshot %s lost its tag %s: job %s's retention and verification no longer count it", shortID(s.ID), t, job)
			}
		}
	}
	for _, s := range res.Unchanged {
		p.Printf("snapshot %s has these tags already: %s\n", shortID(s.ID), tagText(s.Tags))
	}
	for _, id := range res.Forgetting {
		p.Printf("snapshot %s is being forgotten (an interrupted forget marked it): not changed\n", shortID(id))
	}
}

// selection chooses the snapshots to change: those named, or without
// names every one the filters let through. A name that matches nothing is
// a usage error.
func (o tagOptions) selection(snaps []*repo.Snapshot) ([]string, error) {
	var ids []string
	if len(o.refs) == 0 {
		for _, s := range snaps {
			if o.filter.considered(s) {
				ids = append(ids, s.ID)
			}
		}
		if len(ids) == 0 {
			return nil, usageError{errors.New("no snapshot matches the filters")}
		}
		return ids, nil
	}
	for _, ref := range o.refs {
		s, err := matchSnapshot(snaps, ref, o.filter.considered)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ids, s.ID) {
			ids = append(ids, s.ID)
		}
	}
	return ids, nil
}

// matchSnapshot resolves ref (a full ID, a unique prefix, or latest: the
// newest snapshot that consider lets through) among snaps, oldest first.
func matchSnapshot(snaps []*repo.Snapshot, ref string, consider func(*repo.Snapshot) bool) (*repo.Snapshot, error) {
	if ref == "latest" {
		for i := len(snaps) - 1; i >= 0; i-- {
			if consider(snaps[i]) {
				return snaps[i], nil
			}
		}
		return nil, usageError{errors.New("no snapshot is latest: none matches the filters")}
	}
	var match []*repo.Snapshot
	for _, s := range snaps {
		if s.ID == ref {
			return s, nil
		}
		if strings.HasPrefix(s.ID, ref) {
			match = append(match, s)
		}
	}
	switch len(match) {
	case 0:
		return nil, usageError{fmt.Errorf("no snapshot %s in the repository", ref)}
	case 1:
		return match[0], nil
	}
	return nil, usageError{fmt.Errorf("snapshot prefix %q is ambiguous: %d snapshots start with it", ref, len(match))}
}

// tagText is a list of tags for a line of text.
func tagText(tags []string) string {
	if len(tags) == 0 {
		return "(no tags)"
	}
	return strings.Join(tags, ", ")
}
