package cmd

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule"
)

func forgetCommand() *cli.Command {
	count := func(name, what string) cli.Flag {
		return &cli.IntFlag{Name: name, Usage: "keep " + what + " (`N`; -1: all)"}
	}
	return &cli.Command{
		Name:      "forget",
		Usage:     "remove snapshots by a retention policy (restic's flags), or the snapshots named",
		ArgsUsage: "[SNAPSHOT...]",
		Flags: append(append(repoFlags(), pruneFlags()...),
			count("keep-last", "the N newest snapshots"),
			count("keep-hourly", "the newest snapshot of each of the N newest hours that have one"),
			count("keep-daily", "the newest snapshot of each of the N newest days that have one"),
			count("keep-weekly", "the newest snapshot of each of the N newest ISO weeks that have one"),
			count("keep-monthly", "the newest snapshot of each of the N newest months that have one"),
			count("keep-yearly", "the newest snapshot of each of the N newest years that have one"),
			&cli.StringFlag{Name: "keep-within", Usage: "keep every snapshot newer than `DURATION` (such as 30d, 1y2m) before its group's newest"},
			&cli.StringSliceFlag{Name: "keep-tag", Usage: "keep every snapshot with `TAG[,TAG...]` (all of a list; repeatable: any of the lists)"},
			&cli.StringSliceFlag{Name: "host", Usage: "only consider snapshots of `HOST` (repeatable: any of them)"},
			&cli.StringSliceFlag{Name: "tag", Usage: "only consider snapshots with `TAG[,TAG...]` (all of a list; repeatable: any of the lists)"},
			&cli.StringSliceFlag{Name: "path", Usage: "only consider snapshots that include `PATH` (repeatable: all of them)"},
			&cli.StringFlag{Name: "group-by", Value: schedule.DefaultGroupBy.String(), Usage: "group snapshots by `FIELDS` (host, paths, tags; empty: one group)"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "only say what would be removed: change nothing, take no lock"},
			&cli.BoolFlag{Name: "prune", Usage: "then run prune: remove the data no snapshot uses (with --max-unused and --max-repack-size)"},
			jsonFlag(),
		),
		Action: runForget,
	}
}

// forgetOptions is what forget was asked to do.
type forgetOptions struct {
	policy  schedule.RetentionPolicy
	ids     []string // explicit snapshots: forget exactly those, no policy
	hosts   []string
	tags    [][]string // each a list of tags that must all be there
	paths   []string
	groupBy schedule.GroupBy
	dryRun  bool
	zone    *time.Location
	only    func(*repo.Snapshot) bool // set: the snapshots considered, instead of hosts, tags and paths
	prune   *repo.PruneOptions        // set: prune after the forget (--prune)
}

// forgetArgs reads and checks forget's command line; every problem is a
// usage error, found before the repository is opened.
func forgetArgs(c *cli.Context) (forgetOptions, error) {
	opts := forgetOptions{
		ids:    c.Args().Slice(),
		hosts:  c.StringSlice("host"),
		paths:  c.StringSlice("path"),
		dryRun: c.Bool("dry-run"),
		zone:   time.Local,
	}
	for i, q := range opts.paths {
		opts.paths[i] = path.Clean(q)
	}
	opts.tags = tagLists(c.StringSlice("tag"))
	by, err := schedule.ParseGroupBy(c.String("group-by"))
	if err != nil {
		return forgetOptions{}, usageError{err}
	}
	opts.groupBy = by
	if err := opts.pruneArgs(c); err != nil {
		return forgetOptions{}, err
	}
	p := schedule.RetentionPolicy{
		Last: c.Int("keep-last"), Hourly: c.Int("keep-hourly"), Daily: c.Int("keep-daily"),
		Weekly: c.Int("keep-weekly"), Monthly: c.Int("keep-monthly"), Yearly: c.Int("keep-yearly"),
		Tags: tagLists(c.StringSlice("keep-tag")),
	}
	if w := c.String("keep-within"); w != "" {
		if p.Within, err = schedule.ParseCalendarDuration(w); err != nil {
			return forgetOptions{}, usageError{fmt.Errorf("--keep-within: %w", err)}
		}
	}
	opts.policy = p
	if len(opts.ids) > 0 {
		for _, name := range []string{"keep-last", "keep-hourly", "keep-daily", "keep-weekly", "keep-monthly", "keep-yearly", "keep-within", "keep-tag", "host", "tag", "path"} {
			if c.IsSet(name) {
				return forgetOptions{}, usageError{fmt.Errorf("--%s cannot be combined with snapshot IDs: name snapshots or give a policy, not both", name)}
			}
		}
		return opts, nil
	}
	if err := p.Validate(); err != nil {
		return forgetOptions{}, usageError{err}
	}
	return opts, nil
}

// pruneArgs reads --prune and prune's limits, which need it.
func (o *forgetOptions) pruneArgs(c *cli.Context) error {
	if !c.Bool("prune") {
		for _, name := range []string{"max-unused", "max-repack-size"} {
			if c.IsSet(name) {
				return usageError{fmt.Errorf("--%s is a limit of prune: give it with --prune", name)}
			}
		}
		return nil
	}
	po, err := pruneArgs(c)
	if err != nil {
		return err
	}
	po.DryRun = o.dryRun
	o.prune = &po
	return nil
}

// considered reports whether the filters let forget consider s at all.
func (o forgetOptions) considered(s *repo.Snapshot) bool {
	if len(o.hosts) > 0 && !slices.Contains(o.hosts, s.Hostname) {
		return false
	}
	if len(o.tags) > 0 && !hasAllTagsOfAny(s.Tags, o.tags) {
		return false
	}
	for _, q := range o.paths {
		if !slices.Contains(s.Paths, q) {
			return false
		}
	}
	return true
}

// plan is the policy as jobs.RetentionPlan applies it.
func (o forgetOptions) plan() jobs.RetentionPlan {
	consider := o.only
	if consider == nil {
		consider = o.considered
	}
	return jobs.RetentionPlan{Policy: o.policy, GroupBy: o.groupBy, Zone: o.zone, Consider: consider}
}

// forgetSnapshotJSON is one snapshot in forget's output.
type forgetSnapshotJSON struct {
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Host    string    `json:"hostname"`
	Paths   []string  `json:"paths"`
	Tags    []string  `json:"tags"`
	Reasons []string  `json:"reasons"` // why it stays; empty for one that goes
}

// forgetGroupJSON is the decisions on one group.
type forgetGroupJSON struct {
	Key    string               `json:"group"`
	Keep   []forgetSnapshotJSON `json:"keep"`
	Remove []forgetSnapshotJSON `json:"remove"`
}

// forgetJSON is forget's outcome in --json; the text output says the same.
type forgetJSON struct {
	DryRun     bool              `json:"dry_run"`
	Policy     string            `json:"policy"` // "" for explicit snapshots
	GroupBy    string            `json:"group_by"`
	Groups     []forgetGroupJSON `json:"groups"`
	Forgotten  []string          `json:"forgotten"`             // removed by this run (with --dry-run: would be)
	Completed  []string          `json:"completed"`             // removed to complete an interrupted forget
	KeptPinned []string          `json:"kept_pinned"`           // chosen, but found pinned after marking, and kept
	Prune      *pruneJSON        `json:"prune,omitempty"`       // with --prune: what prune then did
	PruneError *pruneFailureJSON `json:"prune_error,omitempty"` // with --prune: why prune failed after the forget
	zone       *time.Location    // where calendar buckets were counted
}

func runForget(c *cli.Context) error { return withRepository(c, forgetArgs, forgetIn) }

// forgetIn is forget on the open repository r.
func forgetIn(c *cli.Context, p *printer, r *repo.Repository, opts forgetOptions) error {
	out, err := forget(c.Context, r, opts)
	if err != nil {
		return err
	}
	var pruneErr error
	if opts.prune != nil {
		if out.Prune, pruneErr = prune(c.Context, r, *opts.prune); pruneErr != nil {
			pruneErr = explainPruneError(pruneErr)
			out.PruneError = pruneFailure(pruneErr)
		}
	}
	if p.jsonOut {
		if err := p.JSON(out); err != nil {
			return err
		}
		return pruneErr
	}
	printForget(p, out)
	if out.Prune != nil {
		p.Printf("\nprune:\n")
		if out.DryRun {
			p.Printf("(before the forget: the snapshots it would forget still count as using their data)\n")
		}
		printPrune(p, out.Prune)
	}
	return pruneErr
}

// forget applies opts to r (or, with dryRun, says what it would do) and
// returns the outcome.
func forget(ctx context.Context, r *repo.Repository, opts forgetOptions) (*forgetJSON, error) {
	out := &forgetJSON{DryRun: opts.dryRun, GroupBy: opts.groupBy.String(), Groups: []forgetGroupJSON{}, zone: opts.zone}
	plan := opts.retentionPlan(ctx, r, out)
	if len(opts.ids) > 0 {
		plan = opts.namedPlan(r, out)
	} else {
		out.Policy = opts.policy.String()
	}
	fo := repo.ForgetOptions{Plan: plan, GroupKey: opts.plan().GroupKey}
	var res *repo.ForgetResult
	var err error
	if opts.dryRun {
		res, err = r.PreviewForget(ctx, fo)
	} else {
		res, err = r.Forget(ctx, fo)
	}
	if err != nil {
		return nil, busyHint(err)
	}
	out.Forgotten, out.Completed, out.KeptPinned = nonNil(res.Forgotten), nonNil(res.Completed), nonNil(res.KeptPinned)
	return out, nil
}

// retentionPlan decides by the policy, group by group, and records the
// decisions in out. Snapshots whose verification failed take no part.
func (o forgetOptions) retentionPlan(ctx context.Context, r *repo.Repository, out *forgetJSON) repo.ForgetPlan {
	return func(snaps []*repo.Snapshot, pinned map[string]bool) ([]string, error) {
		failed, err := r.VerifyFailed(ctx)
		if err != nil {
			return nil, err
		}
		plan := o.plan()
		plan.VerifyFailed = failed
		groups, victims, err := plan.Decide(snaps, pinned)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			gj := forgetGroupJSON{Key: g.Key, Keep: []forgetSnapshotJSON{}, Remove: []forgetSnapshotJSON{}}
			for _, d := range g.Decisions {
				sj := forgetSnapshot(d.Snapshot)
				for _, reason := range d.Reasons {
					sj.Reasons = append(sj.Reasons, string(reason))
				}
				if d.Keep {
					gj.Keep = append(gj.Keep, sj)
					continue
				}
				gj.Remove = append(gj.Remove, sj)
			}
			out.Groups = append(out.Groups, gj)
		}
		return victims, nil
	}
}

// namedPlan forgets exactly the snapshots named by ID or unique prefix; a
// pinned one refuses the whole forget. A snapshot file that cannot be read
// may be named too (this is how one is removed: its record says nothing a
// policy could decide on); it is listed in the group "unreadable".
func (o forgetOptions) namedPlan(r *repo.Repository, out *forgetJSON) repo.ForgetPlan {
	return func(snaps []*repo.Snapshot, pinned map[string]bool) ([]string, error) {
		byGroup := map[string]int{}
		var victims, pinnedNamed []string
		// The files the plan's caller skipped just now, as records with
		// nothing but their ID.
		unreadable := map[string]bool{}
		candidates := snaps
		for _, u := range r.UnreadableSnapshots() {
			unreadable[u.ID] = true
			candidates = append(slices.Clip(candidates), &repo.Snapshot{ID: u.ID})
		}
		for _, ref := range o.ids {
			var match []*repo.Snapshot
			for _, s := range candidates {
				if s.ID == ref {
					match = []*repo.Snapshot{s}
					break
				}
				if strings.HasPrefix(s.ID, ref) {
					match = append(match, s)
				}
			}
			switch len(match) {
			case 0:
				return nil, fmt.Errorf("%q: %w", ref, repo.ErrSnapshotNotFound)
			case 1:
			default:
				return nil, fmt.Errorf("snapshot prefix %q is ambiguous: %d snapshots start with it", ref, len(match))
			}
			s := match[0]
			if slices.Contains(victims, s.ID) {
				continue
			}
			if pinned[s.ID] {
				pinnedNamed = append(pinnedNamed, shortID(s.ID))
				continue
			}
			victims = append(victims, s.ID)
			key := unreadableGroup
			if !unreadable[s.ID] {
				key = o.plan().GroupKey(s)
			}
			i, ok := byGroup[key]
			if !ok {
				i = len(out.Groups)
				byGroup[key] = i
				out.Groups = append(out.Groups, forgetGroupJSON{Key: key, Keep: []forgetSnapshotJSON{}, Remove: []forgetSnapshotJSON{}})
			}
			out.Groups[i].Remove = append(out.Groups[i].Remove, forgetSnapshot(jobs.RetentionSnapshot(s, pinned)))
		}
		if len(pinnedNamed) > 0 {
			return nil, fmt.Errorf("snapshot %s is pinned: unpin it first to forget it (nothing was forgotten)", strings.Join(pinnedNamed, ", "))
		}
		return victims, nil
	}
}

// unreadableGroup is the group forget lists the unreadable snapshot files
// named to it in.
const unreadableGroup = "unreadable"

func forgetSnapshot(s schedule.RetentionSnapshot) forgetSnapshotJSON {
	return forgetSnapshotJSON{ID: s.ID, Time: s.Time, Host: s.Host, Paths: nonNil(s.Paths), Tags: nonNil(s.Tags), Reasons: []string{}}
}

func printForget(p *printer, out *forgetJSON) {
	if out.Policy != "" {
		zone, _ := time.Now().In(out.zone).Zone()
		p.Printf("policy: %s, grouped by %s, calendar buckets in time zone %s\n", out.Policy, groupByText(out.GroupBy), zone)
	}
	if len(out.Completed) > 0 {
		verb := "completed"
		if out.DryRun {
			verb = "would complete"
		}
		p.Printf("%s an interrupted forget: %d snapshots (%s)\n", verb, len(out.Completed), shortIDs(out.Completed))
	}
	for _, g := range out.Groups {
		key := g.Key
		if key == "" {
			key = "all snapshots"
		}
		if out.Policy == "" {
			p.Printf("\n%s: forget %d\n", key, len(g.Remove))
		} else {
			p.Printf("\n%s: keep %d, forget %d\n", key, len(g.Keep), len(g.Remove))
		}
		p.Printf("%-8s  %-19s  %-6s  %s\n", "ID", "Time", "Action", "Reasons")
		rows := append(slices.Clone(g.Keep), g.Remove...)
		slices.SortStableFunc(rows, func(a, b forgetSnapshotJSON) int { return b.Time.Compare(a.Time) })
		for _, s := range rows {
			action := "forget"
			if len(s.Reasons) > 0 {
				action = "keep"
			}
			p.Printf("%-8s  %-19s  %-6s  %s\n", shortID(s.ID), humanTime(s.Time), action, strings.Join(s.Reasons, ", "))
		}
	}
	if len(out.KeptPinned) > 0 {
		p.Printf("\nkept, pinned while being forgotten: %s\n", shortIDs(out.KeptPinned))
	}
	switch {
	case out.DryRun:
		p.Printf("\ndry run: would forget %d snapshots; nothing was changed\n", len(out.Forgotten))
	case out.Prune != nil || out.PruneError != nil:
		p.Printf("\nforgot %d snapshots\n", len(out.Forgotten))
	default:
		p.Printf("\nforgot %d snapshots; their data stays in the repository until nightjar prune\n", len(out.Forgotten))
	}
}

func groupByText(by string) string {
	if by == "" {
		return "nothing (one group)"
	}
	return by
}

func shortIDs(ids []string) string {
	short := make([]string, len(ids))
	for i, id := range ids {
		short[i] = shortID(id)
	}
	return strings.Join(short, ", ")
}
