package cmd

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/repo"
)

func snapshotsCommand() *cli.Command {
	return &cli.Command{
		Name:      "snapshots",
		Usage:     "list snapshots",
		ArgsUsage: " ",
		Flags: append(readRepoFlags(),
			&cli.StringSliceFlag{Name: "tag", Usage: "only snapshots with `TAG[,TAG...]` (all of a list; repeatable: any of the lists)"},
			&cli.StringSliceFlag{Name: "path", Usage: "only snapshots of `PATH` (repeatable: any of them)"},
			&cli.StringSliceFlag{Name: "host", Usage: "only snapshots taken on `HOST` (repeatable: any of them)"},
			&cli.StringSliceFlag{Name: "job", Usage: "only snapshots the backups of job `NAME` made: those tagged job:NAME (repeatable: any of them)"},
			&cli.Int64SliceFlag{Name: "run", Usage: "only snapshots scheduled run `N` made (repeatable: any of them; nightjar runs lists them)"},
			&cli.BoolFlag{Name: "verify-failed", Usage: "only snapshots whose verification failed"},
			jsonFlag(),
		),
		Action: runSnapshots,
	}
}

// snapshotJSON is one snapshot in snapshots --json.
type snapshotJSON struct {
	ID        string               `json:"id"`
	Time      time.Time            `json:"time"`
	Hostname  string               `json:"hostname"`
	Username  string               `json:"username"`
	Paths     []string             `json:"paths"`
	Tags      []string             `json:"tags"`
	Job       string               `json:"job,omitempty"` // the job its tag job:NAME names
	Run       int64                `json:"run,omitempty"` // the scheduled run that made it
	Parent    string               `json:"parent,omitempty"`
	Tree      string               `json:"tree"`
	Summary   repo.SnapshotSummary `json:"summary"`
	Pinned    bool                 `json:"pinned"`
	PinReason string               `json:"pin_reason"`
	// Forgetting: an interrupted forget marked it; the next forget removes it unless it is pinned.
	Forgetting bool `json:"forgetting"`
	// Verification is its latest verification (null: none yet);
	// VerifyFailed says that it failed.
	Verification *repo.Verification `json:"verification"`
	VerifyFailed bool               `json:"verify_failed"`
}

func runSnapshots(c *cli.Context) error {
	p := newPrinter(c)
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	snaps, err := r.Snapshots(c.Context)
	if err != nil {
		return err
	}
	pins, err := snapshotPins(c.Context, r, p)
	if err != nil {
		return err
	}
	forgetting, err := r.ForgettingIDs(c.Context)
	if err != nil {
		return err
	}
	verifications, err := snapshotVerifications(c.Context, r, p)
	if err != nil {
		return err
	}
	tags, paths, jobNames, runs := tagLists(c.StringSlice("tag")), c.StringSlice("path"), c.StringSlice("job"), c.Int64Slice("run")
	hosts := c.StringSlice("host")
	for _, run := range runs {
		if run <= 0 {
			return usageError{fmt.Errorf("invalid --run %d: want a positive run number (nightjar runs lists them)", run)}
		}
	}
	out := []snapshotJSON{}
	var shown []*repo.Snapshot
	for _, s := range snaps {
		if len(tags) > 0 && !hasAllTagsOfAny(s.Tags, tags) {
			continue
		}
		if len(paths) > 0 && !slices.ContainsFunc(paths, func(q string) bool { return slices.Contains(s.Paths, path.Clean(q)) }) {
			continue
		}
		if len(hosts) > 0 && !slices.Contains(hosts, s.Hostname) {
			continue
		}
		if len(jobNames) > 0 && !slices.ContainsFunc(jobNames, func(name string) bool { return slices.Contains(s.Tags, jobs.JobTag(name)) }) {
			continue
		}
		if len(runs) > 0 && !slices.Contains(runs, jobs.RunOf(s)) {
			continue
		}
		v := verifications[s.ID]
		if c.Bool("verify-failed") && (v == nil || v.OK) {
			continue
		}
		shown = append(shown, s)
		j := snapshotJSON{
			ID: s.ID, Time: s.Time, Hostname: s.Hostname, Username: s.Username, Paths: s.Paths,
			Tags: nonNil(s.Tags), Job: jobs.JobOf(s.Tags), Run: jobs.RunOf(s), Parent: s.Parent, Tree: s.Tree.String(), Summary: s.Summary,
		}
		if pin, ok := pins[s.ID]; ok {
			j.Pinned, j.PinReason = true, pin.Reason
		}
		j.Forgetting = slices.Contains(forgetting, s.ID)
		j.Verification, j.VerifyFailed = v, v != nil && !v.OK
		out = append(out, j)
	}
	if p.jsonOut {
		return p.JSON(out)
	}
	width, runWidth := len("ID"), len("Run")
	for i, s := range shown {
		width = max(width, len(shortID(s.ID)))
		runWidth = max(runWidth, len(runColumn(out[i].Run)))
	}
	p.Printf("%-*s  %-20s %-12s %-10s %-9s %-13s %-6s %-*s %s\n", width, "ID", "Time", "Host", "Size", "Status", "Verified", "Pin", runWidth, "Run", "Paths / Tags")
	for i, s := range shown {
		status := "complete"
		if s.Summary.Partial {
			status = "partial"
		}
		if out[i].Forgetting {
			status = "forgetting"
		}
		pin := ""
		line := strings.Join(s.Paths, ", ")
		if len(s.Tags) > 0 {
			line += "  [" + strings.Join(s.Tags, ",") + "]"
		}
		if out[i].Pinned {
			pin = "pinned"
			if out[i].PinReason != "" {
				line += fmt.Sprintf("  (pinned: %s)", out[i].PinReason)
			}
		}
		verified := verifyState(out[i].Verification)
		if out[i].VerifyFailed && len(out[i].Verification.Problems) > 0 {
			line += "  (verify_failed: " + out[i].Verification.Problems[0] + ")"
		}
		p.Printf("%-*s  %-20s %-12s %-10s %-9s %-13s %-6s %-*s %s\n", width, shortID(s.ID), humanTime(s.Time),
			s.Hostname, humanize.IBytes(uint64(s.Summary.TotalSize)), status, verified, pin, runWidth, runColumn(out[i].Run), line)
	}
	p.Printf("%d snapshots\n", len(shown))
	return nil
}

// runColumn is the scheduled run that made a snapshot, as snapshots shows
// it: its number, or "-" for none. The run's job is the snapshot's tag
// job:NAME, among its tags.
func runColumn(run int64) string {
	if run == 0 {
		return "-"
	}
	return strconv.FormatInt(run, 10)
}

// verifyState is a snapshot's verification in one word: "-" (none yet),
// "ok", "ok (deep)" or "verify_failed".
func verifyState(v *repo.Verification) string {
	switch {
	case v == nil:
		return "-"
	case !v.OK:
		return "verify_failed"
	case v.Deep:
		return "ok (deep)"
	}
	return "ok"
}

// snapshotVerifications loads the verification records by snapshot ID. A
// record that cannot be read is shown as failed (as retention treats it),
// with a warning.
func snapshotVerifications(ctx context.Context, r *repo.Repository, p *printer) (map[string]*repo.Verification, error) {
	ids, err := r.VerifiedIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*repo.Verification, len(ids))
	for _, id := range ids {
		v, err := r.Verification(ctx, id)
		switch {
		case errors.Is(err, repo.ErrVerificationNotFound):
			continue
		case errors.Is(err, repo.ErrIntegrity), errors.Is(err, repo.ErrUnsupportedVersion):
			p.Warnf("%v: shown as verify_failed (run nightjar check)", err)
			v = &repo.Verification{Snapshot: id, Problems: []string{"verification record cannot be read"}, ProblemsTotal: 1}
		case err != nil:
			return nil, err
		}
		out[id] = v
	}
	return out, nil
}

func lsCommand() *cli.Command {
	return &cli.Command{
		Name:      "ls",
		Usage:     "list the files in a snapshot",
		ArgsUsage: "SNAPSHOT [SUBPATH]",
		Flags:     append(append(readRepoFlags(), jsonFlag()), snapshotFilterFlags()...),
		Action:    runLs,
	}
}

// lsJSON is one entry in ls --json.
type lsJSON struct {
	Path       string    `json:"path"`               // with U+FFFD for bytes that are not UTF-8
	PathRaw    []byte    `json:"path_raw,omitempty"` // the exact bytes, base64, when Path is not valid UTF-8
	Type       string    `json:"type"`
	Mode       string    `json:"mode"`
	Size       uint64    `json:"size"`
	MTime      time.Time `json:"mtime"`
	User       string    `json:"user,omitempty"`
	Group      string    `json:"group,omitempty"`
	LinkTarget string    `json:"link_target,omitempty"`
}

func runLs(c *cli.Context) error {
	p := newPrinter(c)
	if c.NArg() < 1 || c.NArg() > 2 {
		return usageError{errors.New("ls needs SNAPSHOT and at most one SUBPATH")}
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	snap, err := findSnapshot(c.Context, r, c.Args().Get(0), snapshotFilterFrom(c))
	if err != nil {
		return err
	}
	sub := "/"
	if c.NArg() == 2 {
		sub = path.Clean("/" + c.Args().Get(1))
	}
	out := []lsJSON{}
	found := sub == "/"
	err = r.Walk(c.Context, snap.Tree, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
		p, n := e.Path, e.Node
		if p == sub {
			found = true
		}
		if p != sub && !strings.HasPrefix(p, strings.TrimSuffix(sub, "/")+"/") {
			// Descend only along the way to sub.
			if strings.HasPrefix(sub, p+"/") {
				return nil
			}
			return repo.SkipTree
		}
		entry := lsJSON{Path: p, Type: n.Type, Mode: modeString(n), Size: n.Size, MTime: n.MTime,
			User: n.User, Group: n.Group, LinkTarget: n.LinkTarget}
		if !utf8.ValidString(p) {
			entry.PathRaw = []byte(p)
		}
		out = append(out, entry)
		return nil
	}})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%s is not in snapshot %s", terminalSafe(sub), shortID(snap.ID))
	}
	if p.jsonOut {
		return p.JSON(out)
	}
	for _, e := range out {
		line := fmt.Sprintf("%s %8s %s %s", e.Mode, humanize.IBytes(e.Size), humanTime(e.MTime), terminalSafe(e.Path))
		if e.LinkTarget != "" {
			line += " -> " + terminalSafe(e.LinkTarget)
		}
		p.Printf("%s\n", line)
	}
	return nil
}

func modeString(n *repo.Node) string {
	kind := map[string]byte{repo.NodeDir: 'd', repo.NodeSymlink: 'l', repo.NodeFIFO: 'p',
		repo.NodeCharDev: 'c', repo.NodeBlockDev: 'b', repo.NodeSocket: 's'}[n.Type]
	if kind == 0 {
		kind = '-'
	}
	const rwx = "rwxrwxrwx"
	b := []byte{kind}
	for i := 0; i < 9; i++ {
		if n.Mode&(1<<(8-i)) != 0 {
			b = append(b, rwx[i])
		} else {
			b = append(b, '-')
		}
	}
	// setuid, setgid and sticky show in the execute places, as ls does.
	special := []struct {
		bit       uint32
		at        int
		set, bare byte
	}{{0o4000, 3, 's', 'S'}, {0o2000, 6, 's', 'S'}, {0o1000, 9, 't', 'T'}}
	for _, sp := range special {
		if n.Mode&sp.bit == 0 {
			continue
		}
		if b[sp.at] == 'x' {
			b[sp.at] = sp.set
		} else {
			b[sp.at] = sp.bare
		}
	}
	return string(b)
}
