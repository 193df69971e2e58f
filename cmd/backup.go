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
// its status objects (backupStatusJSON), as restic does.
type backupJSON struct {
	MessageType    string      `json:"message_type"` // "summary"
	SnapshotID     string      `json:"snapshot_id"`
	Parent         string      `json:"parent,omitempty"`
	Partial        bool        `json:"partial"`
	FilesNew       int64       `json:"files_new"`
	FilesChanged   int64       `json:"files_changed"`
	FilesUnchanged int64       `json:"files_unchanged"`
	Dirs           int64       `json:"dirs"`
	OtherEntries   int64       `json:"other_entries"`
	BytesRead      int64       `json:"bytes_read"`
	BytesAdded     int64       `json:"bytes_added"`
	TotalSize      int64       `json:"total_size"`
	FilesSkipped   int64       `json:"files_skipped"`
	Skipped        []repo.Skip `json:"skipped"`
	ChangedDuring  []string    `json:"changed_during_read"`
	AdoptedPacks   int         `json:"adopted_packs"`
	Seconds        float64     `json:"duration_seconds"`
}

func runBackup(c *cli.Context) error {
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
	defer lock.Unlock()
	if err := r.LoadIndex(c.Context); err != nil {
		return err
	}
	var res *backup.Result
	if stream != nil {
		sopts := backup.StreamOptions{Name: streamName, Tags: opts.Tags, Limiter: opts.Limiter, Time: opts.Time, Version: version,
			Progress: &backup.Progress{}}
		// No scan: a stream's size is known only at its end.
		progress, _ := startBackupProgress(c, p, sopts.Progress)
		res, err = backupStream(c, r, stream, sopts)
		progress.Stop()
	} else {
		opts.Progress = &backup.Progress{}
		progress, scan := startBackupProgress(c, p, opts.Progress)
		opts.Scan = scan
		res, err = backup.Backup(c.Context, r, opts)
		progress.Stop()
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	s := res.Snapshot.Summary
	if err := p.JSONLine(backupJSON{
		MessageType: "summary", SnapshotID: res.Snapshot.ID, Parent: res.Parent, Partial: s.Partial,
		FilesNew: s.FilesNew, FilesChanged: s.FilesChanged, FilesUnchanged: s.FilesUnchanged,
		Dirs: s.Dirs, OtherEntries: s.OtherEntries, BytesRead: s.BytesRead, BytesAdded: s.BytesAdded,
		TotalSize: s.TotalSize, FilesSkipped: s.FilesSkipped, Skipped: nonNil(s.Skipped),
		ChangedDuring: nonNil(s.ChangedDuring), AdoptedPacks: res.AdoptedPacks,
		Seconds: s.Finished.Sub(s.Started).Seconds(),
	}); err != nil {
		return err
	}
	if res.Parent != "" {
		p.Printf("parent snapshot %s\n", shortID(res.Parent))
	}
	if res.AdoptedPacks > 0 {
		p.Printf("reused %d packs left by an interrupted backup\n", res.AdoptedPacks)
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
	for _, sk := range s.Skipped {
		p.Warnf("skipped %s: %s", sk.Path, sk.Reason)
	}
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
