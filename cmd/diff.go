package cmd

import (
	"errors"
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:  "diff",
		Usage: "show what changed between two snapshots",
		Description: "One line per entry that differs, then a summary:\n" +
			"  +  added    -  removed    M  content changed\n" +
			"  U  metadata only (mode, owner, times, xattrs)    T  type changed\n" +
			"Folders end with a slash.",
		ArgsUsage: "SNAPSHOT1 SNAPSHOT2",
		Flags:     append(readRepoFlags(), jsonFlag()),
		Action:    runDiff,
	}
}

// diffChangeJSON is one line of diff --json before the statistics, as
// restic writes it.
type diffChangeJSON struct {
	MessageType string `json:"message_type"` // "change"
	Path        string `json:"path"`
	Modifier    string `json:"modifier"`
}

// diffStatsJSON is the last line of diff --json, as restic writes it.
type diffStatsJSON struct {
	MessageType    string `json:"message_type"` // "statistics"
	SourceSnapshot string `json:"source_snapshot"`
	TargetSnapshot string `json:"target_snapshot"`
	repo.DiffStats
}

func runDiff(c *cli.Context) error {
	p := newPrinter(c)
	if c.NArg() != 2 {
		return usageError{errors.New("diff needs exactly two snapshots: SNAPSHOT1 SNAPSHOT2 (IDs, prefixes of them, or latest)")}
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	var snaps [2]*repo.Snapshot
	for i := range snaps {
		if snaps[i], err = r.FindSnapshot(c.Context, c.Args().Get(i), nil); err != nil {
			return err
		}
	}
	p.Printf("comparing snapshot %s to %s:\n\n", shortID(snaps[0].ID), shortID(snaps[1].ID))
	stats, err := r.Diff(c.Context, snaps[0].Tree, snaps[1].Tree, func(ch *repo.Change) error {
		name := ch.Path
		if (ch.New != nil && ch.New.Type == repo.NodeDir) || (ch.New == nil && ch.Old.Type == repo.NodeDir) {
			name += "/"
		}
		if p.jsonOut {
			return p.JSONLine(diffChangeJSON{MessageType: "change", Path: name, Modifier: string(ch.Kind)})
		}
		p.Printf("%c    %s\n", ch.Kind, terminalSafe(name))
		return nil
	})
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if p.jsonOut {
		return p.JSONLine(diffStatsJSON{MessageType: "statistics", SourceSnapshot: snaps[0].ID, TargetSnapshot: snaps[1].ID, DiffStats: stats})
	}
	p.Printf("\nFiles:  %5d new, %5d removed, %5d changed\n", stats.Added.Files, stats.Removed.Files, stats.ChangedFiles)
	p.Printf("Dirs:   %5d new, %5d removed\n", stats.Added.Dirs, stats.Removed.Dirs)
	p.Printf("Others: %5d new, %5d removed\n", stats.Added.Others, stats.Removed.Others)
	p.Printf("Added:   %s\n", humanize.IBytes(uint64(stats.Added.Bytes)))
	p.Printf("Removed: %s\n", humanize.IBytes(uint64(stats.Removed.Bytes)))
	return nil
}
