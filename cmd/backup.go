package cmd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/backup/limit"
	"github.com/nightjar-backup/nightjar/repo"
)

func backupCommand() *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "make a snapshot of files and folders",
		ArgsUsage: "PATH... | --stdin | --stdin-from-command -- COMMAND [ARG...]",
		Flags: append(append(repoFlags(),
			&cli.StringSliceFlag{Name: "tag", Usage: "add `TAG[,TAG...]` to the snapshot (repeatable)"},
			&cli.StringSliceFlag{Name: "exclude", Usage: "leave out paths matching `PATTERN` (repeatable)"},
			&cli.StringSliceFlag{Name: "exclude-file", Usage: "read exclude patterns from `FILE`, one per line"},
			&cli.StringFlag{Name: "bandwidth", Usage: "limit reading to `RATE` such as 50MB, 50MB/s, 400Mbit or 512KiB"},
			&cli.StringFlag{Name: "compression", Value: string(repo.DefaultCompression), Usage: "compress new data at `LEVEL`: off, fastest, default or better"},
			&cli.StringFlag{Name: "time", Usage: "record the snapshot at `RFC3339` time instead of now"},
			&cli.StringFlag{Name: "parent", Usage: "compare with `SNAPSHOT` instead of the latest of the same paths"},
			jsonFlag(),
			quietFlag(),
		), stdinFlags()...),
		Action: runBackup,
	}
}

// backupJSON is the summary backup --json prints last, on one line, after
// its status objects (backupStatusJSON), as restic does: restic's fields
// first, then nightjar's own.
type backupJSON struct {
	MessageType         string    `json:"message_type"` // "summary"
	FilesNew            int64     `json:"files_new"`
	FilesChanged        int64     `json:"files_changed"`
	FilesUnmodified     int64     `json:"files_unmodified"`
	DirsNew             int64     `json:"dirs_new"`
	DirsChanged         int64     `json:"dirs_changed"`
	DirsUnmodified      int64     `json:"dirs_unmodified"`
	DataBlobs           int       `json:"data_blobs"`
	TreeBlobs           int       `json:"tree_blobs"`
	DataAdded           int64     `json:"data_added"`        // plaintext bytes of the new blobs, before compression
	DataAddedPacked     int64     `json:"data_added_packed"` // bytes of packs and index files written
	TotalFilesProcessed int64     `json:"total_files_processed"`
	TotalBytesProcessed int64     `json:"total_bytes_processed"` // size of all files in the snapshot
	BackupStart         time.Time `json:"backup_start"`
	BackupEnd           time.Time `json:"backup_end"`
	TotalDuration       float64   `json:"total_duration"` // seconds
	SnapshotID          string    `json:"snapshot_id"`

	Parent        string      `json:"parent,omitempty"`
	Partial       bool        `json:"partial"`
	Dirs          int64       `json:"dirs"`
	OtherEntries  int64       `json:"other_entries"` // symlinks, FIFOs, devices, sockets
	BytesRead     int64       `json:"bytes_read"`    // read from the sources (unchanged files are not)
	FilesSkipped  int64       `json:"files_skipped"`
	Skipped       []repo.Skip `json:"skipped"` // each with its reason
	ChangedDuring []string    `json:"changed_during_read"`
	AdoptedPacks  int         `json:"adopted_packs"`
	LostPacks     int         `json:"lost_packs"` // indexed packs found missing or cut short; their data was stored again where met

	TempSwept *repo.TempSweep `json:"temp_swept,omitempty"` // temporary files of interrupted writes, swept before the backup
}

// newBackupSummary is the summary of the backup that made res, with the
// last figures of its progress.
func newBackupSummary(res *backup.Result, f backup.ProgressFigures) backupJSON {
	s := res.Snapshot.Summary
	return backupJSON{
		MessageType: "summary", FilesNew: s.FilesNew, FilesChanged: s.FilesChanged, FilesUnmodified: s.FilesUnchanged,
		DirsNew: f.DirsNew, DirsChanged: f.DirsChanged, DirsUnmodified: f.DirsUnmodified,
		DataBlobs: f.DataBlobs, TreeBlobs: f.TreeBlobs, DataAdded: f.RawBytesAdded, DataAddedPacked: s.BytesAdded,
		TotalFilesProcessed: s.FilesNew + s.FilesChanged + s.FilesUnchanged, TotalBytesProcessed: s.TotalSize,
		BackupStart: s.Started, BackupEnd: s.Finished, TotalDuration: s.Finished.Sub(s.Started).Seconds(),
		SnapshotID: res.Snapshot.ID, Parent: res.Parent, Partial: s.Partial, Dirs: s.Dirs, OtherEntries: s.OtherEntries,
		BytesRead: s.BytesRead, FilesSkipped: s.FilesSkipped, Skipped: nonNil(s.Skipped),
		ChangedDuring: nonNil(s.ChangedDuring), AdoptedPacks: res.AdoptedPacks, LostPacks: res.LostPacks,
	}
}

func runBackup(c *cli.Context) (err error) {
	p := newPrinter(c)
	p.quiet = c.Bool("quiet")
	stream, streamName, err := streamSource(c)
	if err != nil {
		return usageError{err}
	}
	if c.NArg() == 0 && stream == nil {
		return usageError{errors.New("backup needs at least one PATH (or --stdin, or --stdin-from-command with a command)")}
	}
	opts := backup.Options{Paths: c.Args().Slice(), Tags: slices.Concat(tagLists(c.StringSlice("tag"))...), Parent: c.String("parent"), Version: version}
	// Everything the user typed is checked before the repository is opened.
	patterns := c.StringSlice("exclude")
	for _, file := range c.StringSlice("exclude-file") {
		more, err := filter.ReadPatternFile(file)
		if err != nil {
			return usageError{err}
		}
		patterns = append(patterns, more...)
	}
	if len(patterns) > 0 {
		m, err := filter.Compile(patterns)
		if err != nil {
			return usageError{err}
		}
		opts.Exclude, opts.Excludes = m, patterns
	}
	if bw := c.String("bandwidth"); bw != "" {
		rate, err := limit.ParseRate(bw)
		if err != nil {
			return usageError{err}
		}
		opts.Limiter = limit.New(rate)
	}
	compression, err := repo.ParseCompression(c.String("compression"))
	if err != nil {
		return usageError{err}
	}
	if t := c.String("time"); t != "" {
		parsed, err := time.Parse(time.RFC3339Nano, t)
		if err != nil {
			return usageError{fmt.Errorf("invalid --time %q: want RFC3339 such as 2026-01-31T02:00:00Z", t)}
		}
		opts.Time = parsed
	}
	for _, tag := range opts.Tags {
		if tag == "" || strings.ContainsAny(tag, ",\n") {
			return usageError{fmt.Errorf("invalid tag %q: want a non-empty word without commas", tag)}
		}
	}

	tuneGCForBackup()
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.SetCompression(compression); err != nil {
		return err
	}
	lock, err := lockRepo(c.Context, r, false, "backup")
	if err != nil {
		return err
	}
	// A lock lost while the backup ran fails it: a prune may have run
	// beside it (SaveSnapshot refuses to save then).
	defer lock.Release(&err)
	swept := sweepTemp(c.Context, p, r)
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	warnIndexDamage(p, r)
	var res *backup.Result
	prog := &backup.Progress{}
	if stream != nil {
		sopts := backup.StreamOptions{Name: streamName, Tags: opts.Tags, Limiter: opts.Limiter, Time: opts.Time, Version: version,
			Progress: prog}
		// No scan: a stream's size is known only at its end.
		progress, _ := startBackupProgress(c, p, prog)
		res, err = backupStream(c, r, stream, sopts)
		progress.Stop()
	} else {
		opts.Progress = prog
		progress, scan := startBackupProgress(c, p, prog)
		opts.Scan = scan
		res, err = backup.Backup(c.Context, r, opts)
		progress.Stop()
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	s := res.Snapshot.Summary
	summary := newBackupSummary(res, prog.Read())
	summary.TempSwept = swept
	if err := p.JSONLine(summary); err != nil {
		return err
	}
	if res.Parent != "" {
		p.Printf("parent snapshot %s\n", shortID(res.Parent))
	}
	if res.AdoptedPacks > 0 {
		p.Printf("reused %d packs left by an interrupted backup\n", res.AdoptedPacks)
	}
	if res.LostPacks > 0 {
		p.Warnf("%d packs the index lists are missing or cut short: what they held was stored again where this backup met it (run nightjar repair index, then check)", res.LostPacks)
	}
	p.Printf("files:       %d new, %d changed, %d unchanged\n", s.FilesNew, s.FilesChanged, s.FilesUnchanged)
	p.Printf("folders:     %d\n", s.Dirs)
	if s.OtherEntries > 0 {
		p.Printf("other:       %d (symlinks, FIFOs, devices)\n", s.OtherEntries)
	}
	p.Printf("read:        %s of %s\n", humanize.IBytes(uint64(s.BytesRead)), humanize.IBytes(uint64(s.TotalSize)))
	p.Printf("added:       %s to the repository\n", humanize.IBytes(uint64(s.BytesAdded)))
	p.Printf("duration:    %s\n", s.Finished.Sub(s.Started).Round(time.Millisecond))
	for _, path := range s.ChangedDuring {
		p.Warnf("%s changed while it was read: the snapshot holds what was read", path)
	}
	reportSkips(p, "backup", "skipped", s.Skipped)
	if extra := s.FilesSkipped - int64(len(s.Skipped)); extra > 0 {
		p.Warnf("and %d more skipped entries", extra)
	}
	for _, l := range res.Lacks {
		p.Warnf("%s not saved on this platform: %s", l.What, l.Reason)
	}
	p.Printf("snapshot %s saved\n", shortID(res.Snapshot.ID))
	if s.Partial {
		return codedError{code: ExitPartial, err: fmt.Errorf("snapshot %s is partial: %d entries could not be read", shortID(res.Snapshot.ID), s.FilesSkipped)}
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func shortID(id string) string {
	if len(id) == 32 && !strings.ContainsAny(id, "-_.") {
		return id[:8]
	}
	return id
}
