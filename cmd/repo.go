package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/cmd/internal/crashpoint"
	"github.com/nightjar-backup/nightjar/cmd/internal/secret"
	"github.com/nightjar-backup/nightjar/redact"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/cache"
)

// repoFlags are taken by every command that works on a repository. They
// follow restic's names. There is deliberately no flag for the password.
func repoFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "repo", Aliases: []string{"r"}, EnvVars: []string{"NIGHTJAR_REPOSITORY"}, Usage: "repository `LOCATION`: a folder, local:PATH or s3:https://HOST/BUCKET[/PREFIX]"},
		&cli.StringFlag{Name: "password-file", EnvVars: []string{"NIGHTJAR_PASSWORD_FILE"}, Usage: "read the password from `FILE`"},
		&cli.StringFlag{Name: "password-command", EnvVars: []string{"NIGHTJAR_PASSWORD_COMMAND"}, Usage: "run `COMMAND` and take the password from its output"},
		&cli.BoolFlag{Name: "no-cache", EnvVars: []string{"NIGHTJAR_NO_CACHE"}, Usage: "read everything from the repository, keeping no local copy of a remote one's index and trees nor the index cache of a large one"},
	}, storageFlags()...)
}

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON on stdout and nothing else"}
}

func newPrinter(c *cli.Context) *printer {
	return &printer{stdout: c.App.Writer, stderr: c.App.ErrWriter, jsonOut: c.Bool("json"), warnLog: warningLogger(c, c.App.ErrWriter),
		redactor: func() redact.Redactor { return appRedactor(c.App) }}
}

// repoLocation returns the repository location the flags name.
func repoLocation(c *cli.Context) (string, error) {
	p := c.String("repo")
	if p == "" {
		return "", usageError{errors.New("no repository given: use -r PATH or set NIGHTJAR_REPOSITORY")}
	}
	return p, nil
}

// passwordFrom reads the password from, in this order, --password-file,
// --password-command, NIGHTJAR_PASSWORD, or a terminal prompt.
func passwordFrom(c *cli.Context, prompt string) ([]byte, error) {
	if pw, given, err := passwordFromSource(c); given {
		return pw, err
	}
	t, done, ok := openTerminal(c)
	if !ok {
		return nil, usageError{errors.New("no password given: use " + passwordSources + ", or type it at a terminal")}
	}
	defer done()
	pw, err := t.ReadPassword(prompt)
	if err != nil {
		return nil, fmt.Errorf("read password: %w", err)
	}
	return checkPassword(pw, "the password typed")
}

// passwordSources names the ways to give the password without a terminal.
const passwordSources = "--password-file, --password-command, NIGHTJAR_PASSWORD_FILE, NIGHTJAR_PASSWORD_COMMAND or NIGHTJAR_PASSWORD"

// passwordFromSource reads the password from --password-file,
// --password-command or NIGHTJAR_PASSWORD, whichever comes first; given
// is false when none is set.
func passwordFromSource(c *cli.Context) (pw []byte, given bool, err error) {
	if file := c.String("password-file"); file != "" {
		pw, err = readPasswordFile(file, "the --password-file", newPrinter(c).Warnf)
		return pw, true, err
	}
	if command := c.String("password-command"); command != "" {
		pw, err = readPasswordCommand(c.Context, command, 0, "the --password-command")
		return pw, true, err
	}
	if env, ok := os.LookupEnv("NIGHTJAR_PASSWORD"); ok {
		pw, err = checkPassword([]byte(env), "NIGHTJAR_PASSWORD")
		return pw, true, err
	}
	return nil, false, nil
}

// readPasswordFile takes the first line of file as a password; source
// names the file in messages ("its password_file"), which never show its
// path: the path of a secret is one too. A file others can write is
// refused; one others can read is read, and warn (nil: nobody) is told.
func readPasswordFile(file, source string, warn func(format string, args ...any)) ([]byte, error) {
	pw, warning, err := secret.ReadFile(file)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s %w", source, err)}
	}
	if warning != "" && warn != nil {
		warn("%s %s", source, warning)
	}
	return checkPassword(pw, source)
}

// readPasswordCommand takes the first line a command prints as a password,
// stopping the command after timeout (0: secret.DefaultCommandTimeout);
// source names the command in messages, which never show the command
// itself nor what it printed on standard error: either may hold a secret.
func readPasswordCommand(ctx context.Context, command string, timeout time.Duration, source string) ([]byte, error) {
	pw, err := secret.Command(ctx, config.ShellArgv(command), timeout)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s %w", source, err)}
	}
	return checkPassword(pw, source)
}

func checkPassword(pw []byte, source string) ([]byte, error) {
	if len(pw) == 0 {
		return nil, usageError{fmt.Errorf("empty password from %s", source)}
	}
	return pw, nil
}

// withRepository is a repository command: it reads the command's arguments
// with parse (before anything is opened, so a usage error costs nothing),
// opens the repository named by the flags and runs act on it.
func withRepository[O any](c *cli.Context, parse func(*cli.Context) (O, error), act func(c *cli.Context, p *printer, r *repo.Repository, opts O) error) error {
	p := newPrinter(c)
	opts, err := parse(c)
	if err != nil {
		return err
	}
	r, err := openRepo(c, p)
	if err != nil {
		return err
	}
	defer r.Close()
	return act(c, p, r, opts)
}

// openRepo opens the repository named by the flags and warns when it is
// unencrypted or is not the one known at that path before.
func openRepo(c *cli.Context, p *printer) (*repo.Repository, error) {
	return openRepoWith(c, p, !c.Bool("no-cache"))
}

// openUncachedRepo opens the repository as openRepo does, but reads
// everything from the repository itself, never from the local cache: for
// check, which must see damage in the repository, not judge its copies.
func openUncachedRepo(c *cli.Context, p *printer) (*repo.Repository, error) {
	return openRepoWith(c, p, false)
}

// openStorage opens the storage of the repository a command names; a
// variable so that a test can put storage of its own behind a whole
// command (cmd/lostlease_test.go: a lease clock it moves).
var openStorage = backend.OpenWith

// openRepoWith is openRepo, with the local cache of a remote repository
// or without it.
func openRepoWith(c *cli.Context, p *printer, useCache bool) (*repo.Repository, error) {
	location, err := repoLocation(c)
	if err != nil {
		return nil, err
	}
	opts, err := flagOptions(c)
	if err != nil {
		return nil, err
	}
	be, err := openStorage(c.Context, location, opts)
	if err != nil {
		return nil, err
	}
	be = crashpoint.Wrap(be) // the backend itself, but in the crash test's build
	r, err := openCached(c.Context, be, location, useCache, repo.OpenOptions{
		Password: func() ([]byte, error) { return passwordFrom(c, "enter password for repository: ") },
	}, p.Warnf)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", be.Location(), err)
	}
	r.ReportUnreadableSnapshots(func(list []repo.UnreadableSnapshot) { reportUnreadable(c, p, list) })
	if r.Insecure() {
		p.Warnf("repository %s is NOT ENCRYPTED: anyone who can read it can read your data", be.Location())
	}
	if prev := rememberRepo(be.Location(), r.ID()); prev != "" {
		p.Warnf("the repository at %s has ID %s, but a different repository (ID %s) was there before: it was replaced or re-created",
			be.Location(), r.ID()[:8], prev[:8])
	}
	return r, nil
}

// remote reports whether location is not a local folder: only a remote
// repository has a local cache.
func remote(location string) bool {
	name, ok := backend.SchemeOf(location)
	return ok && name != "local"
}

// openCached opens the repository in be, which lives at location. A remote
// one is read through a local cache of its index files and tree packs in
// the user's cache folder, unless useCache is false (--no-cache or
// NIGHTJAR_NO_CACHE, and check, verify and drill runs, which judge the
// repository itself); a big index of any repository is kept there too.
// Without a cache folder the repository is read as without the cache, and
// warn says so.
func openCached(ctx context.Context, be repo.Backend, location string, useCache bool, opts repo.OpenOptions, warn func(format string, args ...any)) (*repo.Repository, error) {
	var local *cache.Backend
	if useCache && remote(location) {
		local = cache.Wrap(be)
		be = local
	}
	r, err := repo.Open(ctx, be, opts)
	if err != nil {
		return nil, err
	}
	if useCache {
		// A big index is kept sorted and sealed in the same folder, for
		// local repositories too (repo/indexcache.go).
		if dir, err := os.UserCacheDir(); err == nil {
			r.UseIndexCache(filepath.Join(dir, "nightjar"), warn)
		}
	}
	if local == nil {
		return r, nil
	}
	dir, err := os.UserCacheDir()
	if err == nil {
		err = local.Attach(filepath.Join(dir, "nightjar"), r.ID())
	}
	if err != nil {
		warn("no local cache (%v): every read goes to the repository", err)
	}
	return r, nil
}

// rememberRepo records which repository ID lives at a path, in the user's
// cache, and returns the ID recorded there before if it differs. Failing to
// read or write the cache costs only the warning.
func rememberRepo(location, id string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	file := filepath.Join(dir, "nightjar", "known-repositories.json")
	known := map[string]string{}
	if data, err := os.ReadFile(file); err == nil {
		_ = json.Unmarshal(data, &known)
	}
	prev := known[location]
	if prev == id {
		return ""
	}
	known[location] = id
	if data, err := json.MarshalIndent(known, "", "  "); err == nil {
		if os.MkdirAll(filepath.Dir(file), 0o700) == nil {
			tmp := file + ".tmp"
			if os.WriteFile(tmp, data, 0o600) == nil {
				_ = os.Rename(tmp, file)
			}
		}
	}
	return prev
}

// lockRepo takes a lock, mapping a busy repository to a clear message.
func lockRepo(ctx context.Context, r *repo.Repository, exclusive bool, purpose string) (*repo.Lock, error) {
	l, err := r.Lock(ctx, exclusive, purpose)
	if err != nil {
		return nil, fmt.Errorf("%w (try again when it is done)", err)
	}
	return l, nil
}
