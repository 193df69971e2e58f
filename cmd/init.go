package cmd

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/chunker"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create a repository in an empty or missing folder",
		ArgsUsage: " ",
		Flags: append(repoFlags(),
			&cli.BoolFlag{Name: "insecure-no-encryption", Usage: "store everything unencrypted (anyone who can read the repository can read the data)"},
			jsonFlag(),
		),
		Action: runInit,
	}
}

func runInit(c *cli.Context) error {
	p := newPrinter(c)
	location, err := repoLocation(c)
	if err != nil {
		return err
	}
	insecure := c.Bool("insecure-no-encryption")
	var password []byte
	if !insecure {
		if password, err = newRepositoryPassword(c); err != nil {
			return err
		}
	}
	opts, err := flagOptions(c)
	if err != nil {
		return err
	}
	be, err := backend.CreateWith(c.Context, location, opts)
	if errors.Is(err, repo.ErrNotEmpty) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	cp := chunker.DefaultParams
	r, err := repo.Init(c.Context, be, password, repo.InitOptions{
		Insecure: insecure,
		Chunker:  repo.ChunkerParams{Min: cp.Min, Avg: cp.Avg, Max: cp.Max},
	})
	if err != nil {
		return err
	}
	defer r.Close()
	rememberRepo(be.Location(), r.ID())
	if insecure {
		p.Warnf("repository %s is NOT ENCRYPTED: anyone who can read it can read your data", be.Location())
	}
	p.Printf("created repository %s at %s\n", r.ID()[:8], be.Location())
	return p.JSON(map[string]any{"id": r.ID(), "location": be.Location(), "encrypted": !insecure})
}

// newRepositoryPassword reads the password of a new repository from
// --password-file, --password-command or NIGHTJAR_PASSWORD (once), or has
// it typed twice at a terminal.
func newRepositoryPassword(c *cli.Context) ([]byte, error) {
	if pw, given, err := passwordFromSource(c); given {
		return pw, err
	}
	return askNewPassword(c, "enter password for new repository: ", passwordSources)
}
