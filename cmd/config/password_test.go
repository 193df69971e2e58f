package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/internal/secret"
)

const commandRepo = `
[repository.vault]
path = "/backup/repo"
password_command = "vault-get offsite"
`

func TestPasswordCommandTimeout(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    time.Duration
		problem string
	}{
		{"the default", commandRepo, secret.DefaultCommandTimeout, ""},
		{"set", commandRepo + "password_command_timeout = \"2m\"\n", 2 * time.Minute, ""},
		{"zero", commandRepo + "password_command_timeout = \"0s\"\n", 0,
			`:5: repository.vault.password_command_timeout: "0s" is not allowed: want a duration such as "30s" or "2m" (above 0, at most 1h; default 30s)`},
		{"too long", commandRepo + "password_command_timeout = \"2h\"\n", 0, `"2h" is not allowed`},
		{"not a duration", commandRepo + "password_command_timeout = \"soon\"\n", 0, `"soon" is not allowed`},
		{"without a password_command", "[repository.local]\npath = \"/r\"\npassword_file = \"/pw\"\npassword_command_timeout = \"1m\"\n", 0,
			"repository.local.password_command_timeout: is set but the repository has no password_command: remove it, or set password_command"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("/etc/nightjar/config.toml", tc.text, testNow)
			if tc.problem != "" {
				var invalid *ErrInvalid
				if !errors.As(err, &invalid) || len(invalid.Problems) != 1 || !strings.Contains(invalid.Problems[0], tc.problem) {
					t.Fatalf("error = %v, want one problem with %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Repositories["vault"].Password.CommandTimeout; got != tc.want {
				t.Errorf("timeout = %s, want %s", got, tc.want)
			}
		})
	}
}

// A config that others can write is refused when it names a command
// nightjar runs (anyone could put theirs there), and accepted when it
// names none; the judgement is on the mode bits, as root reads any file.
func TestConfigWritableByOthers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows file modes do not say who may write")
	}
	hook := goodRepo + "[[job]]\nname = \"a\"\nrepository = \"local\"\nschedule = \"daily 02:00\"\n[[job.source]]\npath = \"/x\"\n[job.hooks]\nbefore = \"true\"\n"
	tests := []struct {
		name    string
		text    string
		mode    os.FileMode
		refused bool
	}{
		{"a password_command, world-writable", commandRepo, 0o666, true},
		{"a hook, world-writable", hook, 0o646, true},
		{"a password_command, group-writable", commandRepo, 0o664, false},
		{"a password_command, private", commandRepo, 0o600, false},
		{"no command, world-writable", goodRepo, 0o666, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path, testNow)
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			want := fmt.Sprintf("%s: names a password_command, hooks or command sources and is writable by others (mode %04o): "+
				"refused, as anyone could make nightjar run their command; fix: chmod o-w %s", path, tc.mode.Perm(), path)
			var invalid *ErrInvalid
			if !errors.As(err, &invalid) || len(invalid.Problems) != 1 || invalid.Problems[0] != want {
				t.Fatalf("error = %v\nwant %s", err, want)
			}
		})
	}
}
