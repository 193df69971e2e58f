package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/chunker"
	"github.com/nightjar-backup/nightjar/schedule/pass"
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
// password file's path or a password command, nor what the command
// printed on standard error: they reach run messages, hooks,
// notifications and logs. They carry class auth (PASSWORD_UNAVAILABLE),
// so that a scheduled run fails for its own repository's password alone.
func repositoryPassword(ctx context.Context, rc config.Repository) ([]byte, error) {
	var pw []byte
	var err error
	switch {
	case rc.Password.File != "":
		// A file others can read is told by config validate and by the
		// passes that use it (passWarnings), not by each run.
		pw, err = readPasswordFile(rc.Password.File, "its password_file", nil)
	case rc.Password.Command != "":
		pw, err = readPasswordCommand(ctx, rc.Password.Command, rc.Password.CommandTimeout, "its password_command")
	case rc.Password.Env != "":
		env, ok := os.LookupEnv(rc.Password.Env)
		if !ok {
			err = fmt.Errorf("its password_env %s is not set", rc.Password.Env)
		} else {
			pw, err = checkPassword([]byte(env), "its password_env "+rc.Password.Env)
		}
	default:
		err = errors.New("it has no password source")
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("repository %s: %w", rc.Name, err)
		}
		return nil, &pass.ClassError{Class: pass.ClassAuth, Code: jobs.CodePasswordUnavailable, Err: fmt.Errorf("repository %s: %w", rc.Name, err)}
	}
	return pw, nil
}

// repositoryOpeners open configured repositories for the executor, one
// run at a time and only when a run needs one (a password_command runs
// then), so that one repository that cannot be set up fails only the runs
// of its own jobs. The repository found must be the one recorded under
// its name in state (readyForRun), and must take a write before any
// work is done. A repository is created on first use when
// create_if_missing says so and its name never had one.
//
// open reads a remote repository through the local cache (unless
// NIGHTJAR_NO_CACHE says otherwise); fresh never does, for the runs that
// judge the repository (verify, drill).
func repositoryOpeners(cfg *config.Config, state *db.DB) (open, fresh jobs.RepositoryOpener) {
	var creating sync.Mutex // runs of one pass create a repository once
	return repositoryOpener(cfg, state, &creating, scheduledCache()), repositoryOpener(cfg, state, &creating, false)
}

// scheduledCache reports whether scheduled runs that may use the local
// cache do: NIGHTJAR_NO_CACHE, as on the command line, turns it off.
func scheduledCache() bool {
	off, _ := strconv.ParseBool(os.Getenv("NIGHTJAR_NO_CACHE"))
	return !off
}

// repositoryOpener is one of repositoryOpeners, with the cache or without;
// creating is shared by both.
func repositoryOpener(cfg *config.Config, state *db.DB, creating *sync.Mutex, useCache bool) jobs.RepositoryOpener {
	return func(ctx context.Context, name string) (*repo.Repository, error) {
		rc, ok := cfg.Repositories[name]
		if !ok {
			return nil, fmt.Errorf("unknown repository %q", name)
		}
		password := func() ([]byte, error) { return repositoryPassword(ctx, rc) }
		var r *repo.Repository
		be, err := backend.OpenWith(ctx, configLocation(rc), rc.Options)
		if notCreatedYet(err) {
			if err := missingRepository(ctx, state, rc, err); err != nil {
				return nil, err
			}
			creating.Lock()
			r, err = createRepository(ctx, rc, password)
			creating.Unlock()
		} else if err == nil {
			r, err = openCached(ctx, be, configLocation(rc), useCache, repo.OpenOptions{Password: password}, logCacheWarning)
		}
		if err != nil {
			return nil, err
		}
		if err := readyForRun(ctx, state, rc, r); err != nil {
			r.Close()
			return nil, err
		}
		if err := r.SetCompression(rc.Compression); err != nil {
			r.Close()
			return nil, err
		}
		return r, nil
	}
}

// lookupOpener opens configured repositories only to look into them (the
// snapshots of an orphaned run): it never creates one, whatever
// create_if_missing says, so that a look at an unmounted disk's empty
// mount point writes nothing there.
func lookupOpener(cfg *config.Config) jobs.RepositoryOpener {
	return func(ctx context.Context, name string) (*repo.Repository, error) {
		rc, ok := cfg.Repositories[name]
		if !ok {
			return nil, fmt.Errorf("unknown repository %q", name)
		}
		be, err := backend.OpenWith(ctx, configLocation(rc), rc.Options)
		if err != nil {
			return nil, err
		}
		return openCached(ctx, be, configLocation(rc), scheduledCache(), repo.OpenOptions{Password: func() ([]byte, error) { return repositoryPassword(ctx, rc) }}, logCacheWarning)
	}
}

// logCacheWarning logs that a scheduled run reads its remote repository
// without the local cache (which costs requests, never data).
func logCacheWarning(format string, args ...any) {
	slog.Warn(fmt.Sprintf(format, args...))
}

// notCreatedYet reports whether err says that no repository is at a
// location that create_if_missing may create: nothing there, or, on S3, no
// bucket yet (creating the repository makes the bucket, as init does).
func notCreatedYet(err error) bool {
	return errors.Is(err, repo.ErrNoRepository) || errors.Is(err, s3.ErrNoBucket)
}

// missingRepository is the error of a run that finds no repository where
// rc is configured (cause): NO_REPOSITORY, or S3_NO_BUCKET when its
// bucket is missing, retried since a disk may come back (or a bucket be
// restored), unless create_if_missing may create it, which it may only
// when no repository was ever recorded under the name (nil then).
func missingRepository(ctx context.Context, state *db.DB, rc config.Repository, cause error) error {
	known, err := state.RecordedRepositoryID(ctx, rc.Name)
	if err != nil {
		return err
	}
	code := jobs.CodeNoRepository
	if errors.Is(cause, s3.ErrNoBucket) {
		code = jobs.CodeS3NoBucket
	}
	switch {
	case known != "" && code == jobs.CodeS3NoBucket:
		return &pass.ClassError{Class: pass.ClassRepository, Code: code, Err: fmt.Errorf(
			"%w, where repository %s (ID %s) was: was the bucket removed, or is the location wrong? nothing was created (create_if_missing creates only a repository never seen)",
			cause, rc.Name, idPrefix(known))}
	case known != "":
		return &pass.ClassError{Class: pass.ClassRepository, Code: code, Err: fmt.Errorf(
			"no repository at %s, where repository %s (ID %s) was: is its disk mounted? nothing was created there (create_if_missing creates only a repository never seen)",
			rc.Location(), rc.Name, idPrefix(known))}
	case !rc.CreateIfMissing:
		return &pass.ClassError{Class: pass.ClassRepository, Code: code, Err: cause}
	}
	return nil
}

// readyForRun checks that r, just opened for a run under the configured
// name rc.Name, is the repository recorded under that name (recording it
// when none is) and takes a write now: a repository that another replaced
// fails the run (REPOSITORY_REPLACED) before anything is written into it,
// and one on read-only or full storage fails it before any work.
func readyForRun(ctx context.Context, state *db.DB, rc config.Repository, r *repo.Repository) error {
	recorded, err := state.SeeRepository(ctx, rc.Name, r.ID(), !r.Insecure())
	if err != nil {
		return err
	}
	if recorded != r.ID() {
		return &pass.ClassError{Class: pass.ClassRepository, Code: jobs.CodeRepositoryReplaced, Err: fmt.Errorf(
			"the repository at %s has ID %s, but repository %s is recorded with ID %s: it was replaced, and nothing is written into it; "+
				"put the right disk back, or if the new one is meant to be used run nightjar repository forget-id %s",
			rc.Location(), idPrefix(r.ID()), rc.Name, idPrefix(recorded), rc.Name)}
	}
	if wp, ok := repo.Capability[interface{ WriteProbe(context.Context) error }](r.Backend()); ok {
		if err := wp.WriteProbe(ctx); err != nil {
			return &pass.ClassError{Class: pass.ClassRepository, Code: jobs.CodeRepositoryUnwritable,
				Err: fmt.Errorf("repository %s cannot be written, so nothing was done: %w", rc.Name, err)}
		}
	}
	return nil
}

// idPrefix is the first 8 characters of a repository ID, as messages show
// it.
func idPrefix(id string) string { return id[:min(8, len(id))] }

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
	problems, warnings := passwordSourceChecks(cfg)
	if len(problems) > 0 {
		if p.jsonOut {
			_ = p.JSON(map[string]any{"valid": false, "problems": problems, "warnings": nonNil(warnings)})
		} else {
			for _, pr := range append(problems, warnings...) {
				fmt.Fprintln(c.App.ErrWriter, pr)
			}
		}
		return codedError{code: ExitUsage, err: fmt.Errorf("%d password sources cannot give a password", len(problems)), silent: true}
	}
	if p.jsonOut {
		return p.JSON(map[string]any{"valid": true, "problems": []string{}, "warnings": nonNil(warnings), "jobs": len(cfg.Jobs), "scheduled_work": len(cfg.ScheduledWork()), "repositories": len(cfg.Repositories)})
	}
	for _, w := range warnings {
		fmt.Fprintln(c.App.ErrWriter, "warning: "+w)
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
