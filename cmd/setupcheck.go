package cmd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/cmd/internal/secret"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// passwordSourceChecks checks, without running any command, that each
// configured repository's password source can give a password: its file
// exists, others cannot write it and it holds a first line; its variable
// is set and not empty; its command's program is found. It returns the
// problems, which config validate reports as errors, and the warnings (a
// file others can read), each naming its repository; config validate
// shows them to the operator alone, so they name the file.
func passwordSourceChecks(cfg *config.Config) (problems, warnings []string) {
	for _, name := range sortedKeys(cfg.Repositories) {
		src := cfg.Repositories[name].Password
		switch {
		case src.File != "":
			pw, warning, err := secret.ReadFile(src.File)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("repository %s: its password_file %s %v", name, src.File, err))
			case len(pw) == 0:
				problems = append(problems, fmt.Sprintf("repository %s: its password_file %s has an empty first line: want the password there", name, src.File))
			case warning != "":
				warnings = append(warnings, fmt.Sprintf("repository %s: its password_file %s %s", name, src.File, warning))
			}
			clear(pw)
		case src.Env != "":
			if v, ok := os.LookupEnv(src.Env); !ok || v == "" {
				problems = append(problems, fmt.Sprintf("repository %s: its password_env %s is not set or empty here: set it where nightjar runs (tick, serve)", name, src.Env))
			}
		case src.Command != "":
			if err := findProgram(src.Command); err != nil {
				problems = append(problems, fmt.Sprintf("repository %s: its password_command %v", name, err))
			}
		}
	}
	return problems, warnings
}

// findProgram finds the program a shell command line starts, without
// running it: its first word after any VAR=value assignments, looked up as
// the shell would. A line that starts with shell syntax (a quote, a
// subshell, a variable) is not judged.
func findProgram(line string) error {
	words := strings.Fields(line)
	// Assignments, and the builtins that run the word after them.
	for len(words) > 0 && (strings.Contains(words[0], "=") || words[0] == "exec" || words[0] == "command") {
		words = words[1:]
	}
	if len(words) == 0 || strings.ContainsAny(words[0][:1], "\"'$`({!\\") || shellWords[words[0]] {
		return nil
	}
	program := words[0]
	// With a slash in it, LookPath tries the file itself, as the shell does.
	if _, err := exec.LookPath(program); err != nil {
		return fmt.Errorf("starts %s, which is not an executable found in PATH (%s): give its full path, or install it", program, os.Getenv("PATH"))
	}
	return nil
}

// shellWords are the shell's keywords and builtins that a password
// command may start with but that no PATH holds.
var shellWords = map[string]bool{".": true, "source": true, "eval": true, "if": true, "case": true, "for": true,
	"while": true, "until": true, "set": true, "export": true, "cd": true, "read": true, "umask": true}

// passWarnings are a pass's warnings about the repositories its started
// runs use, one line per repository: one that is not encrypted (for
// backup runs, which write data into it), and one whose password file
// others can read. They are said by the passes that use the repository,
// not by every pass, so that tick under cron does not mail them every few
// minutes. They never name a password file: they reach logs.
func passWarnings(ctx context.Context, cfg *config.Config, state *db.DB, defs map[string]pass.JobDef, started []pass.Run) []string {
	writers := map[string][]string{} // repository: the jobs whose backups wrote into it
	used := map[string]bool{}
	for _, r := range started {
		def, ok := defs[r.Job]
		if !ok {
			continue
		}
		used[def.Repository] = true
		if r.Kind == pass.KindBackup && !slices.Contains(writers[def.Repository], r.Job) {
			writers[def.Repository] = append(writers[def.Repository], r.Job)
		}
	}
	var out []string
	if len(writers) > 0 {
		insecure, err := state.UnencryptedRepositories(ctx)
		if err != nil {
			out = append(out, fmt.Sprintf("whether the repositories are encrypted is not known: %s", errorMessage(err)))
		}
		for _, name := range insecure {
			if jobs := writers[name]; len(jobs) > 0 {
				slices.Sort(jobs)
				out = append(out, fmt.Sprintf("repository %s is NOT ENCRYPTED (made with --insecure-no-encryption), and job %s wrote into it: anyone who can read it can read the backups",
					name, strings.Join(jobs, ", ")))
			}
		}
	}
	for _, name := range sortedKeys(cfg.Repositories) {
		file := cfg.Repositories[name].Password.File
		if !used[name] || file == "" {
			continue
		}
		fi, err := os.Stat(file)
		if err != nil {
			continue // the run that read it says why
		}
		if warning, _ := secret.CheckFileMode(fi); warning != "" {
			out = append(out, fmt.Sprintf("repository %s: its password_file %s", name, warning))
		}
	}
	return out
}

// jobWarnings are job show's warnings about the job's repository: that it
// is not encrypted, as the last scheduled run or probe found it.
func jobWarnings(ctx context.Context, state *db.DB, job, repository string) ([]string, error) {
	insecure, err := state.UnencryptedRepositories(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{}
	if slices.Contains(insecure, repository) {
		out = append(out, fmt.Sprintf("job %s writes into repository %s, which is NOT ENCRYPTED (made with --insecure-no-encryption): anyone who can read it can read the backups", job, repository))
	}
	return out, nil
}
