package cmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/restore"
)

func restoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "bring back a snapshot, or part of it, into a folder",
		ArgsUsage: "SNAPSHOT",
		Flags: append(append(readRepoFlags(),
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

func runRestore(c *cli.Context) (err error) {
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
	lock, err := readLockRepo(c, p, r, "restore")
	if err != nil {
		return err
	}
	defer lock.Release(&err)
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	warnIndexDamage(p, r)
	snap, err := findSnapshot(c.Context, r, c.Args().First(), snapshotFilterFrom(c))
	if err != nil {
		return err
	}
	opts.Progress = &restore.Progress{}
	elapsed := sinceStart()
	progress := startRestoreProgress(c, p, opts.Progress)
	res, err := restore.Run(c.Context, r, snap, opts)
	progress.Stop()
	if res == nil {
		// Nothing to report: the target could not be made, or the
		// restore was interrupted (exit 130).
		return fmt.Errorf("restore: %w", err)
	}
	// The storage failed after its retries (an S3 server down): the
	// restore stopped there, and what it did not reach is neither skipped
	// nor damaged, but not restored all the same.
	stopped := errors.Is(err, repo.ErrStorageUnavailable)
	if jerr := p.JSONLine(newRestoreSummary(snap.ID, res, stopped, elapsed())); jerr != nil {
		return jerr
	}
	p.Printf("restored snapshot %s into %s: %d files (%s), %d folders, %d other entries\n",
		shortID(snap.ID), opts.Target, res.Files, humanize.IBytes(uint64(res.Bytes)), res.Dirs, res.Others)
	if opts.Verify {
		p.Printf("verified %d files against the repository\n", res.Verified)
	}
	if !res.OwnershipKept && !res.HasLack(restore.LackOwners) {
		p.Warnf("owners and groups were not restored: that needs root")
	}
	for _, l := range res.Lacks {
		if l.Entries > 0 {
			p.Warnf("%s not restored (%d): %s", l.What, l.Entries, l.Reason)
		} else {
			p.Warnf("%s not restored: %s", l.What, l.Reason)
		}
	}
	reportSkips(p, "restore", "not restored", res.Skipped)
	reportSkips(p, "verify", "verify", res.VerifyFailures)
	return restoreOutcome(res, err)
}

// restoreOutcome is the error a restore that returned its result exits
// with: a verify that found a difference, damage that left nothing
// restored, or a read that the storage failed after its retries (an S3
// server down or throttling every try, which stops the restore) fail
// (exit 1, as the README gives a server's failure); anything else not
// restored makes it partial (exit 3). The storage's failure is no damage:
// its message names the server's answer and sends no one to check for
// damage.
func restoreOutcome(res *restore.Result, err error) error {
	var damaged *restore.DamagedError
	errors.As(err, &damaged)
	switch {
	case errors.Is(err, repo.ErrStorageUnavailable):
		return codedError{code: ExitFailure, err: fmt.Errorf("%w (%d files restored before it)", err, res.Files)}
	case errors.Is(err, restore.ErrVerifyFailed):
		return codedError{code: ExitFailure, err: fmt.Errorf("restore: %w", err)}
	case damaged != nil && res.Files+res.Others == 0:
		return codedError{code: ExitFailure, err: fmt.Errorf("restore: nothing could be restored: %w (nightjar check --read-data tells more)", err)}
	case err != nil && damaged == nil:
		return fmt.Errorf("restore: %w", err)
	case damaged != nil:
		return codedError{code: ExitPartial, err: fmt.Errorf("restore incomplete: %d entries were not restored, %d of them because the repository is damaged (nightjar check --read-data tells more)",
			len(res.Skipped), damaged.Entries)}
	case len(res.Skipped) > 0:
		return codedError{code: ExitPartial, err: fmt.Errorf("restore incomplete: %d entries were not restored", len(res.Skipped))}
	}
	return nil
}

// restoreSummaryJSON is the summary restore --json prints last, on one
// line, after its status objects (restoreStatusJSON), as restic does:
// restic's fields first, then nightjar's own.
type restoreSummaryJSON struct {
	MessageType    string `json:"message_type"` // "summary"
	SecondsElapsed int64  `json:"seconds_elapsed"`
	TotalFiles     int64  `json:"total_files"`    // regular files selected: restored or skipped
	FilesRestored  int64  `json:"files_restored"` // hard links included
	FilesSkipped   int64  `json:"files_skipped"`  // regular files not restored, for any reason (each in skipped)
	TotalBytes     int64  `json:"total_bytes"`
	BytesRestored  int64  `json:"bytes_restored"` // content written (a hard link's bytes once)
	BytesSkipped   int64  `json:"bytes_skipped"`

	SnapshotID        string         `json:"snapshot_id"`
	Partial           bool           `json:"partial"` // something was not restored (skipped, or not reached when the storage failed)
	Dirs              int64          `json:"dirs"`    // folders made (or found)
	Others            int64          `json:"others"`  // symlinks, FIFOs, devices
	Damaged           int64          `json:"damaged"` // entries lost to damage in the repository (never to the storage's failure)
	Skipped           []repo.Skip    `json:"skipped"` // every entry not restored, with its reason
	FilesVerified     int64          `json:"files_verified"`
	BytesVerified     int64          `json:"bytes_verified"`
	VerifyFailures    []repo.Skip    `json:"verify_failures"`
	OwnershipRestored bool           `json:"ownership_restored"` // false when not run as root
	PlatformLacks     []restore.Lack `json:"platform_lacks"`     // what this platform cannot restore, each named once
}

// newRestoreSummary is the summary of a restore that returned res; stopped:
// the storage's failure stopped it.
func newRestoreSummary(snapshotID string, res *restore.Result, stopped bool, elapsed time.Duration) restoreSummaryJSON {
	return restoreSummaryJSON{
		MessageType: "summary", SecondsElapsed: int64(elapsed / time.Second),
		TotalFiles: res.Files + res.FilesSkipped, FilesRestored: res.Files, FilesSkipped: res.FilesSkipped,
		TotalBytes: res.Bytes + res.BytesSkipped, BytesRestored: res.Bytes, BytesSkipped: res.BytesSkipped,
		SnapshotID: snapshotID, Partial: stopped || len(res.Skipped) > 0, Dirs: res.Dirs, Others: res.Others,
		Damaged: res.Damaged, Skipped: nonNil(res.Skipped), FilesVerified: res.Verified, BytesVerified: res.BytesVerified,
		VerifyFailures: nonNil(res.VerifyFailures), OwnershipRestored: res.OwnershipKept,
		PlatformLacks: nonNil(res.Lacks),
	}
}
