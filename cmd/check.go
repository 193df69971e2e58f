package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "verify the repository's structure and, optionally, its data",
		ArgsUsage: " ",
		Flags: append(repoFlags(),
			&cli.BoolFlag{Name: "read-data", Usage: "also read, decrypt and hash every blob"},
			&cli.StringFlag{Name: "read-data-subset", Usage: "read a random `PERCENT` of the packs, such as 10%"},
			jsonFlag(),
		),
		Action: runCheck,
	}
}

// parsePercent reads "10%" or "10" as 0.10.
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v <= 0 || v > 100 {
		return 0, fmt.Errorf("invalid --read-data-subset %q: want a percentage above 0 and at most 100, such as 10%%", s)
	}
	return v / 100, nil
}

func runCheck(c *cli.Context) error {
	p := newPrinter(c)
	var opts repo.CheckOptions
	if c.Bool("read-data") {
		opts.ReadDataFraction = 1
	}
	if s := c.String("read-data-subset"); s != "" {
		if c.Bool("read-data") {
			return usageError{fmt.Errorf("use either --read-data or --read-data-subset, not both")}
		}
		f, err := parsePercent(s)
		if err != nil {
			return usageError{err}
		}
		opts.ReadDataFraction = f
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	lock, err := lockRepo(c.Context, r, false, "check")
	if err != nil {
		return err
	}
	defer lock.Unlock()
	report, err := r.Check(c.Context, opts)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if p.jsonOut {
		out := struct {
			OK bool `json:"ok"`
			*repo.CheckReport
		}{report.OK(), report}
		if out.Problems == nil {
			out.Problems = []repo.Problem{}
		}
		if out.DanglingPins == nil {
			out.DanglingPins = []string{}
		}
		if out.Forgetting == nil {
			out.Forgetting = []string{}
		}
		if err := p.JSON(out); err != nil {
			return err
		}
	}
	p.Printf("%d index files, %d packs, %d blobs, %d snapshots, %d trees\n",
		report.IndexFiles, report.Packs, report.Blobs, report.Snapshots, report.Trees)
	if opts.ReadDataFraction > 0 {
		p.Printf("read %d packs (%s)\n", report.PacksRead, humanize.IBytes(uint64(report.BytesRead)))
	}
	if report.UnindexedPacks > 0 {
		p.Printf("%d packs are not indexed yet (left by an interrupted backup; the next backup reuses them)\n", report.UnindexedPacks)
	}
	if n := len(report.Forgetting); n > 0 {
		p.Warnf("%d snapshots are marked by a forget that was interrupted: the next nightjar forget removes them (or keeps those pinned since)", n)
	}
	for _, id := range report.DanglingPins {
		p.Warnf("pin of snapshot %s: the snapshot no longer exists (remove the pin with nightjar unpin %s)", id, id)
	}
	for _, pr := range report.Problems {
		p.Printf("damaged: %s: %s\n", pr.Object, pr.Error)
		for _, a := range pr.Affected {
			p.Printf("  affects snapshot %s: %s\n", shortID(a.Snapshot), a.Path)
		}
		if pr.Total > len(pr.Affected) {
			p.Printf("  and %d more paths\n", pr.Total-len(pr.Affected))
		}
	}
	if !report.OK() {
		return codedError{code: ExitFailure, err: fmt.Errorf("check found %d damaged objects", len(report.Problems))}
	}
	p.Printf("no errors were found\n")
	return nil
}
