package cmd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/redact"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// A password source's error names the repository and its key, never a
// password file's path or a password command: it reaches run messages,
// hooks, webhooks, status and logs.
func TestRepositoryPasswordErrorsShowNoSecret(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty-secret.pass")
	if err := os.WriteFile(empty, []byte("\nsecond line"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "moved-away-secret.pass")
	t.Setenv("NJ_TEST_EMPTY_PW", "")
	tests := []struct {
		name    string
		source  config.PasswordSource
		want    string
		secrets []string
	}{
		{"a password file that is gone", config.PasswordSource{File: unreadable},
			"repository demo: its password_file cannot be read: no such file or directory", []string{unreadable, "moved-away"}},
		{"a password file with an empty first line", config.PasswordSource{File: empty},
			"repository demo: empty password from its password_file", []string{empty, "empty-secret"}},
		{"a password command that fails says its exit status alone", config.PasswordSource{Command: "nonexistent-tool-XYZZY --vault offsite"},
			"repository demo: its password_command failed: exit status 127 (its standard error is not shown, as it may hold the password: run the command by hand to see why)",
			[]string{"XYZZY", "offsite", "not found"}},
		{"a password command that prints its token on stderr and fails", config.PasswordSource{Command: "echo s.TOKEN-XYZZY >&2; exit 2"},
			"repository demo: its password_command failed: exit status 2 (its standard error is not shown, as it may hold the password: run the command by hand to see why)",
			[]string{"XYZZY"}},
		{"a password command that prints nothing", config.PasswordSource{Command: "printf '' # token-XYZZY"},
			"repository demo: empty password from its password_command", []string{"XYZZY", "printf"}},
		{"a password variable not set", config.PasswordSource{Env: "NJ_TEST_UNSET_PW"},
			"repository demo: its password_env NJ_TEST_UNSET_PW is not set", nil},
		{"a password variable empty", config.PasswordSource{Env: "NJ_TEST_EMPTY_PW"},
			"repository demo: empty password from its password_env NJ_TEST_EMPTY_PW", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := repositoryPassword(context.Background(), config.Repository{Name: "demo", Password: tc.source})
			if err == nil {
				t.Fatal("no error")
			}
			if got := errorMessage(err); got != tc.want {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
			if ce := (*pass.ClassError)(nil); !errors.As(err, &ce) || ce.Class != pass.ClassAuth || ce.Code != jobs.CodePasswordUnavailable {
				t.Errorf("error %v is not of class auth, PASSWORD_UNAVAILABLE", err)
			}
			for _, s := range tc.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("error %q shows %q", err, s)
				}
			}
		})
	}
}

// Once a config is loaded, every warning and the last error line are
// redacted of its password file paths and commands, in both log formats.
func TestWarningsAndLastErrorRedactConfigSecrets(t *testing.T) {
	const file, command = "/etc/nightjar/offsite.pass", "pass show backup/offsite"
	cfg := &config.Config{Repositories: map[string]config.Repository{
		"main":    {Name: "main", Password: config.PasswordSource{File: file}},
		"offsite": {Name: "offsite", Password: config.PasswordSource{Command: command}},
	}}
	for _, format := range logFormats {
		t.Run(format, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			app := newApp(&stdout, &stderr)
			app.Metadata[logFormatKey] = format
			rememberSecrets(app, cfg)
			p := &printer{stdout: &stdout, stderr: &stderr, redactor: func() redact.Redactor { return appRedactor(app) }}
			if format == logFormatJSON {
				p.warnLog = slog.New(logHandler(logFormatJSON, &stderr, slog.LevelWarn, func() redact.Redactor { return appRedactor(app) }))
			}
			p.Warnf("could not read %s", file)
			p.WarnRunf(3, "db", "run %d: %s failed", 3, command)
			printError(app, &stderr, "open "+file+": hook https://hc-ping.com/UUID-SECRET failed", ExitUsage)
			out := stderr.String()
			for _, secret := range []string{file, command, "UUID-SECRET"} {
				if strings.Contains(out, secret) {
					t.Errorf("%q is in the output:\n%s", secret, out)
				}
			}
			if n := strings.Count(out, "[redacted]"); n != 3 {
				t.Errorf("%d secrets redacted, want 3:\n%s", n, out)
			}
		})
	}
}

// The command line judges --password-file as ssh judges a key: one that
// others can write is refused with the fix, nothing created; one that
// others can read is used, with a warning.
func TestPasswordFileModeOnTheCommandLine(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows file modes do not say who may write")
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o666); err != nil {
		t.Fatal(err)
	}
	repoDir := filepath.Join(dir, "repo")
	_, stderr, code := runCLI(t, "init", "-r", repoDir, "--password-file", file)
	want := "nightjar: the --password-file is writable by others (mode 0666): refused, as anyone could change the password it holds; fix: chmod o-w on it\n"
	if code != ExitUsage || stderr != want {
		t.Fatalf("init with a world-writable password file: exit %d, stderr %q; want %d, %q", code, stderr, ExitUsage, want)
	}
	if _, err := os.Stat(repoDir); !os.IsNotExist(err) {
		t.Errorf("a refused init left %s: %v", repoDir, err)
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, "init", "-r", repoDir, "--password-file", file)
	if code != ExitOK || !strings.Contains(stderr, "warning: the --password-file is readable by others (mode 0644): keep it private with chmod go-r on it") {
		t.Fatalf("init with a password file others can read: exit %d, stderr %q; want 0 and a warning", code, stderr)
	}
}
