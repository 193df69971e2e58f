package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// generate writes a man page for every command, a bash script that bash
// reads and that completes commands, subcommands and flags, and zsh and
// fish scripts.
func TestGenerate(t *testing.T) {
	cleanEnvironment(t)
	dir := t.TempDir()
	bash, zsh, fish, man := filepath.Join(dir, "nightjar.bash"), filepath.Join(dir, "_nightjar"), filepath.Join(dir, "nightjar.fish"), filepath.Join(dir, "man", "man1")
	if res := runMain("generate", "--bash-completion", bash, "--zsh-completion", zsh, "--fish-completion", fish, "--man", man); res.code != ExitOK || res.stdout != "" || res.stderr != "" {
		t.Fatalf("generate: %s", res)
	}

	pages := []string{"nightjar"}
	for _, p := range visibleCommands(newApp(nil, nil).Commands, nil) {
		pages = append(pages, manName(p.names))
	}
	for _, want := range []string{"nightjar-backup", "nightjar-job-run", "nightjar-version", "nightjar-generate"} {
		if !strings.Contains(strings.Join(pages, " "), want) {
			t.Errorf("no man page %s among %q", want, pages)
		}
	}
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join(man, page+".1"))
		if err != nil {
			t.Errorf("no man page for %s: %v", page, err)
			continue
		}
		text := string(data)
		if !strings.HasPrefix(text, `.TH `+roff(strings.ToUpper(page))+` 1 `) || !strings.Contains(text, "\n.SH NAME\n"+roff(page)+` \- `) {
			t.Errorf("%s.1 does not start as a man page of section 1 named %s:\n%s", page, page, text)
		}
	}
	if text := readTestFile(t, filepath.Join(man, "nightjar-restore.1")); !strings.Contains(text, `\fB\-\-target\fR \fIDIR\fR`) {
		t.Errorf("restore's man page does not describe --target DIR:\n%s", text)
	}

	// bash is always there where the tests run: without it, this fails.
	bashPath, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash, which the completion test needs, is not found: %v", err)
	}
	if out, err := exec.Command(bashPath, "-n", bash).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	complete := func(words ...string) string {
		script := `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _nightjar; echo "${COMPREPLY[*]}"`
		out, err := exec.Command(bashPath, append([]string{"-c", script, "bash", bash, "nightjar"}, words...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("completing %q: %v\n%s", words, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, tc := range []struct {
		name  string
		words []string
		want  string
	}{
		{"a command", []string{"ba"}, "backup"},
		{"several commands", []string{"re"}, "restore repair repository"},
		{"a subcommand", []string{"job", "re"}, "resume retention"},
		{"every subcommand", []string{"key", ""}, "list add remove passwd"},
		{"after a global flag", []string{"-r", "/x", "snap"}, "snapshots"},
		{"a flag", []string{"backup", "--exc"}, "--exclude --exclude-file"},
		{"a flag of a subcommand", []string{"job", "run", "--w"}, "--wait"},
		{"a global flag", []string{"--pass"}, "--password-file --password-command"},
		{"nothing after a command's argument", []string{"restore", "latest", "x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := complete(tc.words...); got != tc.want {
				t.Errorf("completing %q gave %q, want %q", tc.words, got, tc.want)
			}
		})
	}

	if text := readTestFile(t, zsh); !strings.HasPrefix(text, "#compdef nightjar\n") || !strings.Contains(text, "backup:make a snapshot") {
		t.Errorf("the zsh script is not a completion of nightjar's commands:\n%s", text)
	}
	if zshPath, err := exec.LookPath("zsh"); err == nil {
		if out, err := exec.Command(zshPath, "-n", zsh).CombinedOutput(); err != nil {
			t.Errorf("zsh -n: %v\n%s", err, out)
		}
	}
	if text := readTestFile(t, fish); !strings.Contains(text, "complete -c nightjar") || !strings.Contains(text, "'backup'") {
		t.Errorf("the fish script does not complete nightjar's commands:\n%s", text)
	}

	// - writes to stdout.
	res := runMain("generate", "--bash-completion", "-")
	if res.code != ExitOK || res.stdout != readTestFile(t, bash) {
		t.Errorf("generate --bash-completion - did not print the script:\n%s", res)
	}
}

func readTestFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
