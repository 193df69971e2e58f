package cmd

import (
	"errors"
	"fmt"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/restore"
)

func restoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "bring back a snapshot, or part of it, into a folder",
		ArgsUsage: "SNAPSHOT",
		Flags: append(append(repoFlags(),
			&cli.StringFlag{Name: "target", Usage: "restore into `DIR`", Required: true},
			&cli.StringSliceFlag{Name: "include", Usage: "restore only paths matching `PATTERN` (repeatable)"},
			&cli.StringSliceFlag{Name: "exclude", Usage: "leave out paths matching `PATTERN` (repeatable)"},
			&cli.BoolFlag{Name: "overwrite", Usage: "replace files that exist in the target (folders are never replaced)"},
			&cli.BoolFlag{Name: "verify", Usage: "read back every restored file and compare it with the repository"},
			jsonFlag(),
			quietFlag(),
		), snapshotFilterFlags()...),
		Action: runRestore,
	}
}

func runRestore(c *cli.Context) error {
	p := newPrinter(c)
	p.quiet = c.Bool("quiet")
	if c.NArg() != 1 {
		return usageError{errors.New("restore needs exactly one SNAPSHOT (an ID, a prefix of one, or latest)")}
	}
	opts := restore.Options{Target: c.String("target"), Overwrite: c.Bool("overwrite"), Verify: c.Bool("verify")}
	if inc := c.StringSlice("include"); len(inc) > 0 {
		m, err := filter.Compile(inc)
		if err != nil {
			return usageError{err}
		}
		opts.Include = m
	}
	if exc := c.StringSlice("exclude"); len(exc) > 0 {
		m, err := filter.Compile(exc)
		if err != nil {
			return usageError{err}
		}
		opts.Exclude = m
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	lock, err := lockRepo(c.Context, r, false, "restore")
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	snap, err := findSnapshot(c.Context, r, c.Args().First(), snapshotFilterFrom(c))
	if err != nil {
		return err
	}
	opts.Progress = &restore.Progress{}
	progress := startLine(c, p, restoreFigures(opts.Progress, sinceStart()))
	res, err := restore.Run(c.Context, r, snap, opts)
	progress.Stop()
	if res != nil {
		if jerr := p.JSON(res); jerr != nil {
			return jerr
		}
		for _, f := range res.VerifyFailures {
			p.Warnf("verify %s: %s", f.Path, f.Reason)
		}
	}
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	p.Printf("restored snapshot %s into %s: %d files (%s), %d folders, %d other entries\n",
		shortID(snap.ID), opts.Target, res.Files, humanize.IBytes(uint64(res.Bytes)), res.Dirs, res.Others)
	if opts.Verify {
		p.Printf("verified %d files against the repository\n", res.Verified)
	}
	if !res.OwnershipKept {
		p.Warnf("owners and groups were not restored: that needs root")
	}
	for _, s := range res.Skipped {
		p.Warnf("not restored %s: %s", s.Path, s.Reason)
	}
	if len(res.Skipped) > 0 {
		return codedError{code: ExitPartial, err: fmt.Errorf("restore incomplete: %d entries were not restored", len(res.Skipped))}
	}
	return nil
}
