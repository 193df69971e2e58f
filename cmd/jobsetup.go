package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/chunker"
)

// configFlags are taken by every command that reads the job config.
func configFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", EnvVars: []string{"NIGHTJAR_CONFIG"}, Usage: "config `FILE` (default $XDG_CONFIG_HOME/nightjar/config.toml, or /etc/nightjar/config.toml for root)"},
		&cli.StringFlag{Name: "state", EnvVars: []string{"NIGHTJAR_STATE"}, Usage: "state database `FILE` (default: the config's scheduler.state, else $XDG_STATE_HOME/nightjar/state.db, or /var/lib/nightjar/state.db for root)"},
	}
}

func defaultConfigPath() string {
	if os.Geteuid() == 0 {
		return "/etc/nightjar/config.toml"
	}
	if dir := os.Getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "nightjar", "config.toml")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".config", "nightjar", "config.toml")
}

func defaultStatePath() string {
	if os.Geteuid() == 0 {
		return "/var/lib/nightjar/state.db"
	}
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "nightjar", "state.db")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "nightjar", "state.db")
}

// loadConfig reads and validates the config named by the flags. A broken
// config is a usage error: nothing was touched.
func loadConfig(c *cli.Context, now time.Time) (*config.Config, error) {
	path := c.String("config")
	if path == "" {
		path = defaultConfigPath()
	}
	cfg, err := config.Load(path, now)
	if err != nil {
		return nil, usageError{err}
	}
	rememberSecrets(c.App, cfg)
	return cfg, nil
}

// statePath picks the state database: --state, then the config, then the
// default.
func statePath(c *cli.Context, cfg *config.Config) string {
	if p := c.String("state"); p != "" {
		return p
	}
	if cfg != nil && cfg.StatePath != "" {
		return cfg.StatePath
	}
	return defaultStatePath()
}

// repositoryPassword reads a configured repository's password. Its
// errors name the repository and the key of its password source, never a
// password file's path or a password command: they reach run messages,
// hooks, notifications and logs.
func repositoryPassword(ctx context.Context, rc config.Repository) ([]byte, error) {
	var pw []byte
	var err error
	switch {
	case rc.Password.File != "":
		pw, err = readPasswordFile(rc.Password.File, "its password_file")
	case rc.Password.Command != "":
		pw, err = readPasswordCommand(ctx, rc.Password.Command, "its password_command")
	case rc.Password.Env != "":
		env, ok := os.LookupEnv(rc.Password.Env)
		if !ok {
			return nil, fmt.Errorf("repository %s: its password_env %s is not set", rc.Name, rc.Password.Env)
		}
		pw, err = checkPassword([]byte(env), "its password_env "+rc.Password.Env)
	default:
		return nil, fmt.Errorf("repository %s has no password source", rc.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", rc.Name, err)
	}
	return pw, nil
}

// checkKeyMaterial makes sure that every repository a job uses has a
// readable password now, so that a missing file is found when the
// scheduler starts, not at 2 a.m.
func checkKeyMaterial(ctx context.Context, cfg *config.Config) error {
	used := map[string]bool{}
	for _, def := range cfg.JobDefs() {
		used[def.Repository] = true
	}
	for name := range used {
		if _, err := repositoryPassword(ctx, cfg.Repositories[name]); err != nil {
			return usageError{err}
		}
	}
	return nil
}

// repositoryOpener opens configured repositories for the executor,
// creating one on first use when create_if_missing says so.
func repositoryOpener(cfg *config.Config) jobs.RepositoryOpener {
	var creating sync.Mutex // runs of one pass create a repository once
	return func(ctx context.Context, name string) (*repo.Repository, error) {
		rc, ok := cfg.Repositories[name]
		if !ok {
			return nil, fmt.Errorf("unknown repository %q", name)
		}
		password := func() ([]byte, error) { return repositoryPassword(ctx, rc) }
		var r *repo.Repository
		be, err := backend.OpenWith(ctx, configLocation(rc), rc.Options)
		if notCreatedYet(err) && rc.CreateIfMissing {
			creating.Lock()
			r, err = createRepository(ctx, rc, password)
			creating.Unlock()
		} else if err == nil {
			r, err = repo.Open(ctx, be, repo.OpenOptions{Password: password})
		}
		if err != nil {
			return nil, err
		}
		if err := r.SetCompression(rc.Compression); err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
}

// notCreatedYet reports whether err says that no repository is at a
// location that create_if_missing may create: nothing there, or, on S3, no
// bucket yet (creating the repository makes the bucket, as init does).
func notCreatedYet(err error) bool {
	return errors.Is(err, repo.ErrNoRepository) || errors.Is(err, s3.ErrNoBucket)
}

// createRepository creates a configured repository, or opens it when
// another process created it first: the folder's flock makes concurrent
// creators take turns, so that two never write two master keys; on object
// storage the loser of the conditional config save opens the winner's.
func createRepository(ctx context.Context, rc config.Repository, password func() ([]byte, error)) (*repo.Repository, error) {
	pw, err := password()
	if err != nil {
		return nil, err
	}
	unlock, err := backend.LockCreation(ctx, configLocation(rc), rc.Options)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if be, err := backend.OpenWith(ctx, configLocation(rc), rc.Options); err == nil {
		return repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return pw, nil }})
	}
	be, err := backend.CreateWith(ctx, configLocation(rc), rc.Options)
	if err != nil {
		return nil, err
	}
	cp := chunker.DefaultParams
	r, err := repo.Init(ctx, be, pw, repo.InitOptions{Chunker: repo.ChunkerParams{Min: cp.Min, Avg: cp.Avg, Max: cp.Max}})
	if errors.Is(err, repo.ErrAlreadyExists) {
		// Another host created it between our look and our config (object
		// storage has no creation lock; its config save is conditional):
		// Init removed its own key, and the other's repository is opened.
		return repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return pw, nil }})
	}
	return r, err
}

// jobSources gives the executor each job's sources and tags.
func jobSources(cfg *config.Config) jobs.JobSources {
	return func(name string) ([]jobs.SourceSpec, []string) {
		for _, j := range cfg.Jobs {
			if j.Def.Name != name {
				continue
			}
			var out []jobs.SourceSpec
			for _, s := range j.Sources {
				out = append(out, jobs.SourceSpec{Path: s.Path, Exclude: s.Exclude, Command: s.Command, Timeout: s.Timeout})
			}
			return out, j.Tags
		}
		return nil, nil
	}
}

func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "work with the job config",
		Subcommands: []*cli.Command{{
			Name:      "validate",
			Usage:     "check a config file without touching anything",
			ArgsUsage: " ",
			Flags:     append(configFlags(), jsonFlag()),
			Action:    runConfigValidate,
		}},
	}
}

func runConfigValidate(c *cli.Context) error {
	p := newPrinter(c)
	path := c.String("config")
	if path == "" {
		path = defaultConfigPath()
	}
	cfg, err := config.Load(path, time.Now())
	var invalid *config.ErrInvalid
	if errors.As(err, &invalid) {
		if p.jsonOut {
			_ = p.JSON(map[string]any{"valid": false, "problems": invalid.Problems})
		} else {
			for _, pr := range invalid.Problems {
				fmt.Fprintln(c.App.ErrWriter, pr)
			}
		}
		return codedError{code: ExitUsage, err: err, silent: true}
	}
	if err != nil {
		return usageError{err}
	}
	if p.jsonOut {
		return p.JSON(map[string]any{"valid": true, "problems": []string{}, "jobs": len(cfg.Jobs), "scheduled_work": len(cfg.ScheduledWork()), "repositories": len(cfg.Repositories)})
	}
	p.Printf("%s is valid: %d jobs, %d repositories, %d windows\n", cfg.Path, len(cfg.Jobs), len(cfg.Repositories), len(cfg.Windows))
	for _, j := range cfg.Jobs {
		p.Printf("  %s: %s\n", j.Def.Name, j.Def.Schedule.Description())
	}
	for _, w := range cfg.ScheduledWork() {
		p.Printf("  %s: %s %s\n", w.Name, w.Kind, w.Schedule.Description())
	}
	return nil
}
