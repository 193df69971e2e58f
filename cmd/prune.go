package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

func pruneCommand() *cli.Command {
	return &cli.Command{
		Name:      "prune",
		Usage:     "remove the data no snapshot uses, and repack packs that are partly unused (restic's flags)",
		ArgsUsage: " ",
		Flags: append(append(repoFlags(), pruneFlags()...),
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "only say what would be deleted, repacked and freed: change nothing, take no lock"},
			jsonFlag(),
		),
		Action: runPrune,
	}
}

// pruneFlags are prune's limits, which forget --prune takes too.
func pruneFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "max-unused", Value: repo.DefaultMaxUnused.String(), Usage: "leave at most `LIMIT` of unused data in packs: a share of the repository (10%), a size (5G) or unlimited"},
		&cli.StringFlag{Name: "max-repack-size", Usage: "repack at most `SIZE` of packs in this run (500M, 2G; 0: none); unset: no limit"},
	}
}

// pruneArgs reads prune's limits from the command line; every problem is
// a usage error, found before the repository is opened.
func pruneArgs(c *cli.Context) (repo.PruneOptions, error) {
	opts := repo.PruneOptions{DryRun: c.Bool("dry-run")}
	limit, err := repo.ParseUnusedLimit(c.String("max-unused"))
	if err != nil {
		return opts, usageError{fmt.Errorf("--%w", err)}
	}
	opts.MaxUnused = limit
	if c.IsSet("max-repack-size") {
		size, err := parseRepackSize(c.String("max-repack-size"))
		if err != nil {
			return opts, usageError{err}
		}
		opts.MaxRepackSize = size
	}
	return opts, nil
}

// parseRepackSize reads --max-repack-size: a size in bytes with K, M, G
// or T (powers of 1024), as restic. 0 repacks nothing, as restic: it is
// passed as a budget of one byte, which no pack fits, because
// PruneOptions.MaxRepackSize takes 0 for no limit.
func parseRepackSize(s string) (int64, error) {
	size, err := repo.ParseUnusedLimit(s)
	if err != nil || size.Unlimited || size.Fraction > 0 {
		return 0, fmt.Errorf("--max-repack-size %q: want a size such as 500M or 2G (K, M, G, T: powers of 1024), or 0 to repack nothing", s)
	}
	if size.Bytes == 0 {
		return 1, nil
	}
	return size.Bytes, nil
}

// pruneJSON is prune's outcome in --json; the text output says the same.
type pruneJSON struct {
	DryRun        bool   `json:"dry_run"`
	MaxUnused     string `json:"max_unused"`
	MaxRepackSize int64  `json:"max_repack_size"` // 0: no limit; 1: nothing repacked (--max-repack-size 0)
	LeftoverAge   string `json:"leftover_age"`    // how old a pack no index lists must be to go
	*repo.PruneResult
}

// pruneFailureJSON is what prune --json prints when prune fails (and
// forget --prune, in its document), beside the one-line message on stderr.
type pruneFailureJSON struct {
	ErrorCode string `json:"error_code"` // invalid_manifest, busy or failed
	Error     string `json:"error"`      // the message; for invalid_manifest it names the snapshot
}

// codeInvalidManifest is the error code of a prune stopped by a snapshot
// or tree that cannot be read; ErrInvalidManifest's message starts with it.
const codeInvalidManifest = "invalid_manifest"

func runPrune(c *cli.Context) error { return withRepository(c, pruneArgs, pruneIn) }

// pruneIn is prune on the open repository r.
func pruneIn(c *cli.Context, p *printer, r *repo.Repository, opts repo.PruneOptions) error {
	if !opts.DryRun { // a dry run changes nothing, in the temporary folder too
		sweepSortRuns(p)
	}
	out, err := prune(c.Context, r, opts)
	if err != nil {
		err = explainPruneError(err)
		if jerr := p.JSON(pruneFailure(err)); jerr != nil {
			return jerr
		}
		return err
	}
	if p.jsonOut {
		return p.JSON(out)
	}
	printPrune(p, out)
	return nil
}

// prune runs repo.Prune with opts.
func prune(ctx context.Context, r *repo.Repository, opts repo.PruneOptions) (*pruneJSON, error) {
	res, err := r.Prune(ctx, opts)
	if err != nil {
		return nil, busyHint(err)
	}
	res.ForgetsCompleted = nonNil(res.ForgetsCompleted)
	age := opts.LeftoverAge
	if age == 0 {
		age = repo.DefaultLeftoverAge
	}
	return &pruneJSON{DryRun: opts.DryRun, MaxUnused: opts.MaxUnused.String(), MaxRepackSize: opts.MaxRepackSize, LeftoverAge: durationText(age), PruneResult: res}, nil
}

// explainPruneError adds to the error of a prune stopped by a damaged
// snapshot or tree that it deleted nothing; its exit code is
// ExitInvalidManifest.
func explainPruneError(err error) error {
	if errors.Is(err, repo.ErrInvalidManifest) {
		return fmt.Errorf("%w (nothing was deleted; nightjar check names the damage)", err)
	}
	return err
}

// pruneFailure is a failed prune in JSON.
func pruneFailure(err error) *pruneFailureJSON {
	code := "failed"
	switch {
	case errors.Is(err, repo.ErrInvalidManifest):
		code = codeInvalidManifest
	case errors.Is(err, repo.ErrBusy):
		code = "busy"
	}
	return &pruneFailureJSON{ErrorCode: code, Error: errorMessage(err)}
}

func printPrune(p *printer, out *pruneJSON) {
	res := out.PruneResult
	verb := func(done, would string) string {
		if out.DryRun {
			return would
		}
		return done
	}
	if len(res.ForgetsCompleted) > 0 {
		p.Printf("%s an interrupted forget: %d snapshots (%s)\n", verb("completed", "would complete"), len(res.ForgetsCompleted), shortIDs(res.ForgetsCompleted))
	}
	p.Printf("snapshots:   %d, whose data stays\n", res.Snapshots)
	p.Printf("used data:   %s in %d blobs\n", bytesText(res.BytesUsed), res.BlobsUsed)
	p.Printf("unused data: %s in %d blobs\n", bytesText(res.BytesUnused), res.BlobsUnused)
	p.Printf("%s %d packs wholly unused (%s)\n", verb("deleted:    ", "would delete:"), res.PacksDeleted, bytesText(res.BytesDeleted))
	p.Printf("%s %d packs partly unused (%s), copying %s of used data in %d blobs\n",
		verb("repacked:   ", "would repack:"), res.PacksRepacked, bytesText(res.BytesRepacked), bytesText(res.BytesCopied), res.BlobsCopied)
	if res.PacksKeptYoung > 0 {
		p.Printf("kept young:  %d packs (%s) prune would free, younger than %s or of unknown age: the storage's locks are leases, so a backup may still be writing them\n",
			res.PacksKeptYoung, bytesText(res.BytesKeptYoung), out.LeftoverAge)
	}
	if res.TempFilesForeign > 0 {
		p.Printf("foreign:     %d files in tmp/ that nightjar did not make, left alone\n", res.TempFilesForeign)
	}
	if res.PacksMissing > 0 {
		p.Printf("unlisted:    %d wholly unused packs that were already gone\n", res.PacksMissing)
	}
	p.Printf("leftovers:   %s %d packs no index lists (%s), older than %s\n", verb("deleted", "would delete"), res.LeftoversDeleted, bytesText(res.LeftoverBytesDeleted), out.LeftoverAge)
	if res.LeftoversKept > 0 {
		p.Printf("             kept %d packs no index lists (%s): younger than %s, or of unknown age, so a backup may still be writing them\n",
			res.LeftoversKept, bytesText(res.LeftoverBytesKept), out.LeftoverAge)
	}
	if res.TempFilesDeleted > 0 || res.TempFilesKept > 0 {
		p.Printf("temporary files of killed writes: %s %d (%s), kept %d of live writers or younger than %s\n",
			verb("deleted", "would delete"), res.TempFilesDeleted, bytesText(res.TempBytesDeleted), res.TempFilesKept, out.LeftoverAge)
	}
	p.Printf("%s %s in %d packs\n", verb("freed:      ", "would free: "), bytesText(res.BytesFreed), res.PacksDeleted+res.PacksRepacked+res.LeftoversDeleted)
	limit := out.MaxUnused
	switch {
	case out.MaxRepackSize == 1:
		limit += ", repacking nothing"
	case out.MaxRepackSize > 0:
		limit += ", repacking at most " + bytesText(out.MaxRepackSize)
	}
	p.Printf("left:        %d packs (%s), %s of it unused (max-unused %s)\n", res.PacksLeft, bytesText(res.BytesLeft), bytesText(res.UnusedLeft), limit)
	if out.DryRun {
		p.Printf("dry run: nothing was changed\n")
	} else if res.PacksWritten > 0 || res.IndexFilesReplaced > 0 {
		p.Printf("written:     %d packs and %d index files replaced (%s)\n", res.PacksWritten, res.IndexFilesReplaced, bytesText(res.BytesWritten))
	}
}

// bytesText gives a byte count as people read it; --json has the exact
// number.
func bytesText(n int64) string { return humanize.IBytes(uint64(n)) }

// durationText gives a duration without zero minutes and seconds: 2h, 1h30m.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
