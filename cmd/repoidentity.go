package cmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/db"
)

// repositoryForgetIDCommand is repository forget-id: the way out of
// REPOSITORY_REPLACED when the new repository is meant to stay.
func repositoryForgetIDCommand() *cli.Command {
	return &cli.Command{
		Name: "forget-id",
		Usage: "forget the repository ID recorded for the configured repository NAME, so that the next scheduled run " +
			"takes the repository it finds there (after replacing it on purpose)",
		ArgsUsage: "NAME",
		Flags:     configFlags(),
		Action:    runRepositoryForgetID,
	}
}

func runRepositoryForgetID(c *cli.Context) error {
	p := newPrinter(c)
	if c.NArg() != 1 {
		return usageError{errors.New("repository forget-id takes one NAME: a [repository.NAME] of the config")}
	}
	name := c.Args().First()
	cfg, err := loadConfig(c, time.Now())
	if err != nil {
		return err
	}
	if _, ok := cfg.Repositories[name]; !ok {
		return usageError{fmt.Errorf("unknown repository %q: want one of the config's [repository.NAME] tables", name)}
	}
	state, err := db.Open(c.Context, statePath(c, cfg), time.Now)
	if err != nil {
		return err
	}
	defer state.Close()
	forgot, err := state.ForgetRepositoryIdentity(c.Context, name)
	if err != nil {
		return err
	}
	if !forgot {
		p.Printf("no repository ID was recorded for repository %s: the next scheduled run records the one it finds\n", name)
		return nil
	}
	p.Printf("the repository ID recorded for repository %s is forgotten: the next scheduled run records the one it finds\n", name)
	return nil
}
