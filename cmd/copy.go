package cmd

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
)

func copyCommand() *cli.Command {
	return &cli.Command{
		Name:      "copy",
		Usage:     "copy snapshots from another repository into this one, re-encrypted and deduplicated (restic's copy)",
		ArgsUsage: "[SNAPSHOT...]",
		Description: "Without SNAPSHOT, every snapshot of the source that the --host, --tag and --path filters let " +
			"through is copied. A snapshot copied before (same time, host, paths and tree) is skipped. " +
			"The destination is the repository of -r; the source is --from-repo.",
		Flags: append(repoFlags(),
			&cli.StringFlag{Name: "from-repo", EnvVars: []string{"NIGHTJAR_FROM_REPOSITORY"}, Usage: "source repository `LOCATION`: a folder, or local:PATH"},
			&cli.StringFlag{Name: "from-password-file", EnvVars: []string{"NIGHTJAR_FROM_PASSWORD_FILE"}, Usage: "read the source repository's password from `FILE`"},
			&cli.StringFlag{Name: "from-password-command", EnvVars: []string{"NIGHTJAR_FROM_PASSWORD_COMMAND"}, Usage: "run `COMMAND` and take the source repository's password from its output"},
			&cli.StringSliceFlag{Name: "host", Usage: "only snapshots of `HOST` (repeatable: any of them)"},
			&cli.StringSliceFlag{Name: "tag", Usage: "only snapshots with `TAG[,TAG...]` (all of a list; repeatable: any of the lists)"},
			&cli.StringSliceFlag{Name: "path", Usage: "only snapshots that include `PATH` (repeatable: all of them)"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "only say what would be copied: change nothing, take no lock"},
			jsonFlag(),
		),
		Action: runCopy,
	}
}

// copyOptions is what copy was asked to do.
type copyOptions struct {
	from   string   // the source repository's location
	refs   []string // snapshots named: IDs, unique prefixes or latest
	filter forgetOptions
	dryRun bool
}

func copyArgs(c *cli.Context) (copyOptions, error) {
	opts := copyOptions{from: c.String("from-repo"), refs: c.Args().Slice(), dryRun: c.Bool("dry-run"),
		filter: forgetOptions{hosts: c.StringSlice("host"), paths: c.StringSlice("path"), tags: tagLists(c.StringSlice("tag"))}}
	if opts.from == "" {
		return copyOptions{}, usageError{errors.New("no source repository given: use --from-repo LOCATION or set NIGHTJAR_FROM_REPOSITORY")}
	}
	for i, q := range opts.filter.paths {
		opts.filter.paths[i] = path.Clean(q)
	}
	return opts, nil
}

// copyJSON is copy's outcome in --json.
type copyJSON struct {
	DryRun      bool         `json:"dry_run"`
	Copied      []copiedJSON `json:"copied"`
	Skipped     []copiedJSON `json:"skipped"` // copied before
	BlobsStored int          `json:"blobs_stored"`
	BytesStored int64        `json:"bytes_stored"` // of packs and index files written
}

// copiedJSON is a source snapshot and its copy in the destination.
type copiedJSON struct {
	Source string `json:"source"`
	Copy   string `json:"copy"` // "" in a dry run, for a snapshot that would be copied
}

func runCopy(c *cli.Context) error { return withRepository(c, copyArgs, copyIn) }

// copyIn copies into dst, the repository of -r, from the source opts names.
func copyIn(c *cli.Context, p *printer, dst *repo.Repository, opts copyOptions) error {
	src, err := openSourceRepo(c, p, opts.from)
	if err != nil {
		return err
	}
	defer src.Close()
	snaps, err := src.Snapshots(c.Context)
	if err != nil {
		return fmt.Errorf("source repository: %w", err)
	}
	var chosen []*repo.Snapshot
	if len(opts.refs) == 0 {
		for _, s := range snaps {
			if opts.filter.considered(s) {
				chosen = append(chosen, s)
			}
		}
	}
	for _, ref := range opts.refs {
		s, err := matchSnapshot(snaps, ref, opts.filter.considered)
		if err != nil {
			return fmt.Errorf("source repository: %w", err)
		}
		if !slices.Contains(chosen, s) {
			chosen = append(chosen, s)
		}
	}
	copySnapshots := repo.Copy
	if opts.dryRun {
		copySnapshots = repo.PreviewCopy
	}
	res, err := copySnapshots(c.Context, src, dst, chosen)
	if errors.Is(err, repo.ErrSameRepository) {
		return usageError{fmt.Errorf("--from-repo %s is the destination repository itself: copy needs two repositories", opts.from)}
	}
	if res != nil {
		printCopied(p, res, opts.dryRun)
	}
	if err != nil {
		return busyHint(err)
	}
	out := copyJSON{DryRun: opts.dryRun, Copied: []copiedJSON{}, Skipped: []copiedJSON{}, BlobsStored: res.Stats.Blobs, BytesStored: res.Stats.Bytes}
	for _, cs := range res.Copied {
		cj := copiedJSON{Source: cs.Source.ID}
		if cs.Copy != nil {
			cj.Copy = cs.Copy.ID
		}
		out.Copied = append(out.Copied, cj)
	}
	for _, cs := range res.Skipped {
		out.Skipped = append(out.Skipped, copiedJSON{Source: cs.Source.ID, Copy: cs.Copy.ID})
	}
	if opts.dryRun {
		p.Printf("dry run: would copy %d snapshots, skip %d copied before; nothing was changed\n", len(res.Copied), len(res.Skipped))
	} else {
		p.Printf("copied %d snapshots, skipped %d copied before; stored %d blobs, %s\n", len(res.Copied), len(res.Skipped),
			res.Stats.Blobs, humanize.IBytes(uint64(res.Stats.Bytes)))
	}
	return p.JSON(out)
}

// printCopied says what became of each snapshot copy was given.
func printCopied(p *printer, res *repo.CopyResult, dryRun bool) {
	for _, cs := range res.Skipped {
		p.Printf("skipped snapshot %s: copied before, as %s\n", shortID(cs.Source.ID), shortID(cs.Copy.ID))
	}
	for _, cs := range res.Copied {
		if dryRun {
			p.Printf("would copy snapshot %s\n", shortID(cs.Source.ID))
			continue
		}
		p.Printf("copied snapshot %s as %s\n", shortID(cs.Source.ID), shortID(cs.Copy.ID))
	}
}

// openSourceRepo opens copy's source repository with its own password
// flags.
func openSourceRepo(c *cli.Context, p *printer, location string) (*repo.Repository, error) {
	be, err := backend.Open(c.Context, location)
	if err != nil {
		return nil, usageError{fmt.Errorf("--from-repo: %w", err)}
	}
	r, err := repo.Open(c.Context, be, repo.OpenOptions{Password: func() ([]byte, error) { return sourcePassword(c) }})
	if err != nil {
		return nil, fmt.Errorf("open source repository %s: %w", be.Location(), err)
	}
	if r.Insecure() {
		p.Warnf("source repository %s is NOT ENCRYPTED", be.Location())
	}
	return r, nil
}

// sourcePassword reads the source repository's password from, in this
// order, --from-password-file, --from-password-command,
// NIGHTJAR_FROM_PASSWORD, or a terminal prompt.
func sourcePassword(c *cli.Context) ([]byte, error) {
	if file := c.String("from-password-file"); file != "" {
		return readPasswordFile(file, "the --from-password-file", newPrinter(c).Warnf)
	}
	if command := c.String("from-password-command"); command != "" {
		return readPasswordCommand(c.Context, command, 0, "the --from-password-command")
	}
	if pw, ok := os.LookupEnv("NIGHTJAR_FROM_PASSWORD"); ok {
		return checkPassword([]byte(pw), "NIGHTJAR_FROM_PASSWORD")
	}
	if term.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprint(c.App.ErrWriter, "enter password for source repository: ")
		pw, err := term.ReadPassword(int(os.Stdin.Fd()))
		fmt.Fprintln(c.App.ErrWriter)
		if err != nil {
			return nil, fmt.Errorf("read password: %w", err)
		}
		return checkPassword(pw, "the password typed")
	}
	return nil, usageError{errors.New("no password for the source repository: use --from-password-file, --from-password-command, NIGHTJAR_FROM_PASSWORD_FILE or NIGHTJAR_FROM_PASSWORD")}
}
