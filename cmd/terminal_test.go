package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// fakeTerminal answers password prompts with its answers, in order, and
// records the prompts; a prompt past its answers fails.
type fakeTerminal struct {
	answers []string
	prompts []string
}

func (f *fakeTerminal) ReadPassword(prompt string) ([]byte, error) {
	f.prompts = append(f.prompts, prompt)
	if len(f.prompts) > len(f.answers) {
		return nil, errors.New("fake terminal: no answer left")
	}
	return []byte(f.answers[len(f.prompts)-1]), nil
}

// runAtTerminal runs "nightjar ARGS..." as Main does, with tty as its
// terminal (nil: none), and returns what Main would print and exit with.
func runAtTerminal(t *testing.T, tty *fakeTerminal, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp(&out, &errOut)
	app.Metadata[terminalKey] = terminalOpener(func(*cli.Context) (terminal, func(), bool) {
		if tty == nil {
			return nil, nil, false
		}
		return tty, func() {}, true
	})
	code = ExitOK
	if err := app.Run(append([]string{"nightjar"}, args...)); err != nil {
		code = exitCode(err)
		errOut.WriteString("nightjar: " + errorMessage(err) + "\n")
	}
	return out.String(), errOut.String(), code
}

// passwordWorld makes the environment one without a password source, and
// returns a repository location that holds nothing yet.
func passwordWorld(t *testing.T) (repoDir string) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, v := range []string{"NIGHTJAR_REPOSITORY", "NIGHTJAR_PASSWORD_FILE", "NIGHTJAR_PASSWORD_COMMAND", "NIGHTJAR_NEW_PASSWORD_FILE"} {
		t.Setenv(v, "")
	}
	if _, had := os.LookupEnv("NIGHTJAR_PASSWORD"); had {
		t.Setenv("NIGHTJAR_PASSWORD", "") // restored when the test ends
		os.Unsetenv("NIGHTJAR_PASSWORD")  // unset, not empty: an empty one is a source
	}
	return filepath.Join(t.TempDir(), "repo")
}

// A new password is typed twice, never echoed, at the terminal: init,
// key add and key passwd take it only when both agree and it is not
// empty, and refuse otherwise with one line and exit 2, changing nothing.
func TestNewPasswordsAreTypedTwice(t *testing.T) {
	repoDir := passwordWorld(t)
	for _, tc := range []struct {
		name    string
		args    []string
		answers []string
		code    int
		stderr  string // "": none
		prompts []string
	}{
		{"init: an empty password", []string{"init", "-r", repoDir}, []string{""}, ExitUsage,
			"nightjar: empty password typed: a password cannot be empty\n", []string{"enter password for new repository: "}},
		{"init: two passwords that differ", []string{"init", "-r", repoDir}, []string{"one", "two"}, ExitUsage,
			"nightjar: the passwords typed differ: type the same password twice\n",
			[]string{"enter password for new repository: ", "enter the password again: "}},
		{"init: the same password twice", []string{"init", "-r", repoDir}, []string{"first", "first"}, ExitOK, "",
			[]string{"enter password for new repository: ", "enter the password again: "}},
		{"key add: two new passwords that differ", []string{"key", "add", "-r", repoDir}, []string{"first", "one", "two"}, ExitUsage,
			"nightjar: the passwords typed differ: type the same password twice\n",
			[]string{"enter password for repository: ", "enter new password: ", "enter the password again: "}},
		{"key add: an empty new password", []string{"key", "add", "-r", repoDir}, []string{"first", ""}, ExitUsage,
			"nightjar: empty password typed: a password cannot be empty\n",
			[]string{"enter password for repository: ", "enter new password: "}},
		{"key add: the same new password twice", []string{"key", "add", "-r", repoDir}, []string{"first", "second", "second"}, ExitOK, "",
			[]string{"enter password for repository: ", "enter new password: ", "enter the password again: "}},
		{"key passwd: two new passwords that differ", []string{"key", "passwd", "-r", repoDir}, []string{"second", "third", "thrid"}, ExitUsage,
			"nightjar: the passwords typed differ: type the same password twice\n",
			[]string{"enter password for repository: ", "enter new password: ", "enter the password again: "}},
		{"key passwd: the same new password twice", []string{"key", "passwd", "-r", repoDir}, []string{"second", "third", "third"}, ExitOK, "",
			[]string{"enter password for repository: ", "enter new password: ", "enter the password again: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tty := &fakeTerminal{answers: tc.answers}
			stdout, stderr, code := runAtTerminal(t, tty, tc.args...)
			if code != tc.code || stderr != tc.stderr {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", code, stderr, tc.code, tc.stderr)
			}
			if strings.Join(tty.prompts, "|") != strings.Join(tc.prompts, "|") {
				t.Errorf("prompts %q, want %q", tty.prompts, tc.prompts)
			}
			for _, answer := range tc.answers {
				if answer != "" && (strings.Contains(stdout, answer) || strings.Contains(stderr, answer)) {
					t.Errorf("the password %q typed is in the output: %q %q", answer, stdout, stderr)
				}
			}
		})
	}

	// Which passwords open the repository now: "first" (init, kept by
	// key add) and "third" (key passwd replaced "second"), not the others.
	for _, tc := range []struct {
		password string
		code     int
	}{{"first", ExitOK}, {"third", ExitOK}, {"second", ExitWrongPassword}, {"one", ExitWrongPassword}} {
		t.Run("opens with "+tc.password, func(t *testing.T) {
			stdout, stderr, code := runAtTerminal(t, &fakeTerminal{answers: []string{tc.password}}, "key", "list", "-r", repoDir, "--json")
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, stderr)
			}
			if code != ExitOK {
				return
			}
			var keys []keyJSON
			if err := json.Unmarshal([]byte(stdout), &keys); err != nil || len(keys) != 2 {
				t.Errorf("keys %s (%v), want 2: the init's and the passwd's", stdout, err)
			}
		})
	}

	// key remove takes a prefix and names the key by its full ID.
	stdout, _, _ := runAtTerminal(t, &fakeTerminal{answers: []string{"first"}}, "key", "list", "-r", repoDir, "--json")
	var keys []keyJSON
	if err := json.Unmarshal([]byte(stdout), &keys); err != nil || len(keys) != 2 {
		t.Fatalf("keys %s (%v), want 2", stdout, err)
	}
	other := keys[0]
	if other.Current {
		other = keys[1]
	}
	stdout, stderr, code := runAtTerminal(t, &fakeTerminal{answers: []string{"first"}}, "key", "remove", "-r", repoDir, other.ID[:6])
	if code != ExitOK || stdout != "removed key "+other.ID+"\n" {
		t.Errorf("key remove %s: exit %d, %q %q; want \"removed key %s\"", other.ID[:6], code, stdout, stderr, other.ID)
	}
}

// A password from a file, a command or the environment is read once and
// never asked again; without one, and without a terminal, nightjar asks
// nothing and refuses with one line that names the ways to give it.
func TestPasswordSourcesAndNoTerminal(t *testing.T) {
	repoDir := passwordWorld(t)
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	newFile := filepath.Join(t.TempDir(), "new")
	if err := os.WriteFile(newFile, []byte("new-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tty    *fakeTerminal
		args   []string
		code   int
		stderr string
	}{
		{"init without a terminal", nil, []string{"init", "-r", repoDir}, ExitUsage,
			"nightjar: no new password given: use " + passwordSources + ", or type it at a terminal\n"},
		{"init from a password file is not asked twice", &fakeTerminal{}, []string{"init", "-r", repoDir, "--password-file", pwFile}, ExitOK, ""},
		{"snapshots without a terminal", nil, []string{"snapshots", "-r", repoDir}, ExitUsage,
			"nightjar: open repository " + repoDir + ": no password given: use " + passwordSources + ", or type it at a terminal\n"},
		{"key add without a terminal", nil, []string{"key", "add", "-r", repoDir, "--password-file", pwFile}, ExitUsage,
			"nightjar: no new password given: use " + newPasswordSources + ", or type it at a terminal\n"},
		{"key add from files is not asked", &fakeTerminal{}, []string{"key", "add", "-r", repoDir, "--password-file", pwFile, "--new-password-file", newFile}, ExitOK, ""},
		{"key passwd from a command is not asked", &fakeTerminal{}, []string{"key", "passwd", "-r", repoDir, "--password-command", "echo new-from-file", "--new-password-file", pwFile}, ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runAtTerminal(t, tc.tty, tc.args...)
			if code != tc.code || stderr != tc.stderr {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr %q", code, stderr, tc.code, tc.stderr)
			}
			if tc.tty != nil && len(tc.tty.prompts) > 0 {
				t.Errorf("asked %q although the passwords were given", tc.tty.prompts)
			}
		})
	}
}
