package config

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/schedule"
)

// rawHooks is a [job.hooks] table: each hook an argv list or a shell
// string.
type rawHooks struct {
	Before    any    `toml:"before"`
	After     any    `toml:"after"`
	OnSuccess any    `toml:"on_success"`
	OnFailure any    `toml:"on_failure"`
	OnPartial any    `toml:"on_partial"`
	Timeout   string `toml:"timeout"`
}

// hookKeys are the keys of a [job.hooks] table.
var hookKeys = []string{"before", "after", "on_success", "on_failure", "on_partial", "timeout"}

// MaxCommandTimeout bounds the timeout of a hook or a command source.
const MaxCommandTimeout = 7 * 24 * time.Hour

// hooks reads a job's [job.hooks] table (nil: no hooks). The hooks and
// the job's command sources run in the config file's folder, so that a
// relative program or path in them (./dump.sh) is found beside the config
// whatever folder nightjar was started in (cron's is not the config's).
func (l *loader) hooks(key string, raw *rawHooks) jobs.Hooks {
	h := jobs.Hooks{Timeout: jobs.DefaultHookTimeout, Dir: l.dir}
	if raw == nil {
		return h
	}
	h.Before = l.commandLine(key+".before", raw.Before)
	h.After = l.commandLine(key+".after", raw.After)
	h.OnSuccess = l.commandLine(key+".on_success", raw.OnSuccess)
	h.OnFailure = l.commandLine(key+".on_failure", raw.OnFailure)
	h.OnPartial = l.commandLine(key+".on_partial", raw.OnPartial)
	if raw.Timeout != "" {
		h.Timeout = l.commandTimeout(key+".timeout", raw.Timeout)
	}
	return h
}

// commandLine reads a hook or a source's command: a list of strings is the
// argv itself (the first the program, found in PATH when it has no
// slash), a string is a shell command (ShellArgv: /bin/sh -c, or cmd.exe
// /C on Windows). nil: none.
func (l *loader) commandLine(key string, raw any) []string {
	const allowed = `want a list such as ["/usr/local/bin/dump", "db"] (the program and its arguments) or a string run by the shell (/bin/sh -c; cmd.exe /C on Windows)`
	switch v := raw.(type) {
	case nil:
		return nil
	case string:
		if strings.TrimSpace(v) == "" {
			l.addf(key, "empty command: %s", allowed)
			return nil
		}
		return ShellArgv(v)
	case []any:
		if len(v) == 0 {
			l.addf(key, "empty list: %s", allowed)
			return nil
		}
		argv := make([]string, 0, len(v))
		for i, a := range v {
			s, ok := a.(string)
			if !ok {
				l.addf(key, "element %d is not a string: %s", i+1, allowed)
				return nil
			}
			argv = append(argv, s)
		}
		if strings.TrimSpace(argv[0]) == "" {
			l.addf(key, "empty program name: %s", allowed)
			return nil
		}
		return argv
	}
	l.addf(key, "%s", allowed)
	return nil
}

// commandTimeout reads the timeout of hooks or of a command source: a
// duration above 0, at most MaxCommandTimeout.
func (l *loader) commandTimeout(key, text string) time.Duration {
	d, err := schedule.ParseDuration(text)
	if err != nil || d <= 0 || d > MaxCommandTimeout {
		l.addf(key, "%q is not allowed: want a duration such as \"5m\" or \"2h\" (above 0, at most 7d)", text)
		return jobs.DefaultHookTimeout
	}
	return d
}

// source reads one [[job.source]]: a path with its excludes, or a command
// whose standard output is backed up as the file name (at the snapshot's
// root: its path, and the source's key, is "/" + name). It reports false
// for a source with problems.
func (l *loader) source(skey string, src rawSource) (Source, bool) {
	if src.Command == nil {
		switch {
		case src.Path == "":
			l.addf(skey+".path", "missing: the file or folder to back up (or command = [...] with name = \"FILE\")")
			return Source{}, false
		case src.Name != "":
			l.addf(skey+".name", "name is for command sources only: a path source is stored under its path")
			return Source{}, false
		case src.Timeout != "":
			l.addf(skey+".timeout", "timeout is for command sources only")
			return Source{}, false
		}
		return Source{Path: filepath.Clean(l.abs(src.Path)), Exclude: src.Exclude}, true
	}
	ok := true
	if src.Path != "" {
		l.addf(skey, "set either path or command, not both")
		ok = false
	}
	if len(src.Exclude) > 0 {
		l.addf(skey+".exclude", "exclude is for path sources only: a command source is one file")
		ok = false
	}
	argv := l.commandLine(skey+".command", src.Command)
	if argv == nil {
		ok = false
	}
	switch {
	case src.Name == "":
		l.addf(skey+".name", "missing: a command source needs name = \"FILE\", the file its output becomes in the snapshot (such as \"mydb.sql\")")
		ok = false
	default:
		if err := backup.ValidStreamName(src.Name); err != nil {
			l.addf(skey+".name", "%v", err)
			ok = false
		}
	}
	var timeout time.Duration
	if src.Timeout != "" {
		timeout = l.commandTimeout(skey+".timeout", src.Timeout)
	}
	if !ok {
		return Source{}, false
	}
	return Source{Path: backup.StreamPath(src.Name), Command: argv, Timeout: timeout}, true
}

// duplicateSources reports a source named twice in one job: two
// snapshots of one path could not be told apart.
func (l *loader) duplicateSources(key string, sources []Source) {
	seen := map[string]bool{}
	for _, s := range sources {
		if seen[s.Path] {
			what := "path"
			if s.Command != nil {
				what = "command source name"
			}
			l.addf(key, "source %s is named twice (a %s): each source of a job needs its own", s.Path, what)
		}
		seen[s.Path] = true
	}
}
