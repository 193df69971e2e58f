package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/redact"
)

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"before the command", []string{"nj", "--log-format", "json", "tick"}, []string{"nj", "--log-format", "json", "tick"}},
		{"after the command", []string{"nj", "serve", "-v", "--log-format", "json"}, []string{"nj", "--log-format", "json", "serve", "-v"}},
		{"with =", []string{"nj", "job", "run", "x", "--log-level=debug", "--wait"}, []string{"nj", "--log-level=debug", "job", "run", "--wait", "x"}},
		{"both", []string{"nj", "tick", "--log-level", "info", "--json", "-log-format", "json"},
			[]string{"nj", "--log-level", "info", "-log-format", "json", "tick", "--json"}},
		{"flags after arguments still move", []string{"nj", "--log-format", "json", "restore", "latest", "--target", "/x"},
			[]string{"nj", "--log-format", "json", "restore", "--target", "/x", "latest"}},
		{"after -- stays", []string{"nj", "backup", "--", "--log-format", "json"}, []string{"nj", "backup", "--", "--log-format", "json"}},
		{"none", []string{"nj", "runs", "--limit", "5"}, []string{"nj", "runs", "--limit", "5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commandLine(tc.args, commands()); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// No log line shows a password file's path or a password command, in the
// message, in a string or in an error.
func TestLogRedactsSecrets(t *testing.T) {
	const file, command = "/etc/nightjar/offsite.pass", "pass show backup/offsite"
	cfg := &config.Config{Repositories: map[string]config.Repository{
		"main":    {Name: "main", Password: config.PasswordSource{File: file}},
		"offsite": {Name: "offsite", Password: config.PasswordSource{Command: command}},
		"env":     {Name: "env", Password: config.PasswordSource{Env: "NJ_PASSWORD"}},
	}}
	for _, format := range logFormats {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			log := slog.New(logHandler(format, &out, slog.LevelInfo, func() redact.Redactor { return redact.New(configSecrets(cfg)...) }))
			log.Info("run ended", "run", 3, "job", "a",
				"message", "repository main: read password file: open "+file+": permission denied",
				"err", errors.New("password command failed: "+command+": exit status 1"))
			log.Warn("could not read " + file)
			text := out.String()
			if strings.Contains(text, file) || strings.Contains(text, command) {
				t.Errorf("a secret is in the log:\n%s", text)
			}
			if n := strings.Count(text, redact.Marker); n != 3 {
				t.Errorf("%d secrets redacted, want 3:\n%s", n, text)
			}
		})
	}
}

// With --log-format json a command's warnings and its last error are JSON
// records on stderr, one a line.
func TestJSONLogFormatWarningsAndErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	p := &printer{stdout: &out, stderr: &errOut, warnLog: slog.New(logHandler(logFormatJSON, &errOut, slog.LevelWarn, nil))}
	p.Warnf("job %s is paused", "a")
	p.WarnRunf(7, "a", "run %d of job %s was given up", 7, "a")
	code := Main([]string{"nightjar", "runs", "--limit", "-1", "--log-format", "json"}, &out, &errOut)
	if code != ExitUsage {
		t.Errorf("exit %d, want %d", code, ExitUsage)
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("stderr has %d lines, want two warnings and an error:\n%s", len(lines), errOut.String())
	}
	for i, want := range []struct {
		level, msg string
		run        int64
	}{
		{"WARN", "job a is paused", 0},
		{"WARN", "run 7 of job a was given up", 7},
		{"ERROR", "nightjar: invalid --limit -1: want 0 (all) or more", 0},
	} {
		var rec struct {
			Level    string `json:"level"`
			Msg      string `json:"msg"`
			Run      int64  `json:"run"`
			Job      string `json:"job"`
			ExitCode *int   `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, lines[i])
		}
		if rec.Level != want.level || rec.Msg != want.msg {
			t.Errorf("line %d: %s %q, want %s %q", i+1, rec.Level, rec.Msg, want.level, want.msg)
		}
		if want.run != 0 && (rec.Run != want.run || rec.Job != "a") {
			t.Errorf("line %d: a warning about run %d does not name it and its job: %s", i+1, want.run, lines[i])
		}
		if want.level == "ERROR" && (rec.ExitCode == nil || *rec.ExitCode != ExitUsage) {
			t.Errorf("the error record has no exit_code %d: %s", ExitUsage, lines[i])
		}
	}
}
