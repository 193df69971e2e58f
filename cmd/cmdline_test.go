package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/repo"
)

// mainResult is what Main printed and returned.
type mainResult struct {
	stdout, stderr string
	code           int
}

func (r mainResult) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// runMain runs "nightjar ARGS..." through Main.
func runMain(args ...string) mainResult {
	var out, errOut bytes.Buffer
	code := Main(append([]string{"nightjar"}, args...), &out, &errOut)
	return mainResult{out.String(), errOut.String(), code}
}

// cleanEnvironment takes every NIGHTJAR_ variable of whoever runs the
// tests out of the environment, and points the user's folders into a
// temporary one.
func cleanEnvironment(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "NIGHTJAR_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	return home
}

// Every bad command line, of every command, is a usage error: exit 2, one
// line on stderr, nothing on stdout, nothing created.
func TestBadCommandLinesExitTwo(t *testing.T) {
	cleanEnvironment(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	pw := filepath.Join(dir, "password")
	writeTestFile(t, pw, "secret\n")
	writeTestFile(t, cfg, `[scheduler]
state = "state.db"
[repository.main]
path = "repo"
password_file = "password"
[[job]]
name = "daily"
repository = "main"
schedule = "daily 02:00"
retention = "off"
verify = "off"
  [[job.source]]
  path = "`+dir+`"
`)
	t.Setenv("NIGHTJAR_PASSWORD_FILE", pw)
	r := []string{"-r", filepath.Join(dir, "no-repository")}
	c := []string{"--config", cfg}
	with := func(flags []string, args ...string) []string { return slices.Concat(args, flags) }
	cases := []struct {
		name    string
		args    []string
		message string // a part of the one line on stderr
	}{
		{"unknown command", []string{"bakup"}, `unknown command "bakup": did you mean "backup"? (see nightjar --help)`},
		{"help misspelt", []string{"hlep"}, `unknown command "hlep": did you mean "help"?`},
		{"unknown command far from any", []string{"frobnicate"}, `unknown command "frobnicate": see nightjar --help`},
		{"unknown subcommand", []string{"job", "lsit"}, `unknown command "lsit": did you mean "list"? (see nightjar job --help)`},
		{"unknown subcommand of a command with an action", with(c, "runs", "shwo"), `unknown command "shwo": did you mean "show"? (see nightjar runs --help)`},
		{"unknown subcommand of key", with(r, "key", "bogus"), `unknown command "bogus"`},
		{"unknown subcommand of config", []string{"config", "bogus"}, `unknown command "bogus"`},
		{"help of an unknown command", []string{"help", "bakup"}, `no help for "bakup": did you mean "backup"?`},
		{"help of an unknown subcommand", []string{"job", "help", "bogus"}, `no help for "bogus": see nightjar job --help`},
		{"unknown flag", with(r, "snapshots", "--pasword-file", "x"), "did you mean --password-file? (see nightjar snapshots --help)"},
		{"unknown flag before the command", []string{"--pasword-file=x", "snapshots"}, "did you mean --password-file?"},
		{"a global flag the command does not take", with(c, "-r", "/x", "tick"), "flag provided but not defined: -r"},
		{"a repository flag on a scheduler command", with(c, "status", "--repo", "/x"), "flag provided but not defined: -repo"},
		{"quiet and verbose", with(c, "-q", "status", "-v"), "--quiet and --verbose contradict each other"},
		{"bad log format", with(r, "--log-format", "xml", "snapshots"), `invalid --log-format "xml"`},
		{"bad log level", with(r, "snapshots", "--log-level", "loud"), `invalid --log-level "loud"`},
		{"no repository", []string{"snapshots"}, "no repository given"},
		{"snapshots with an argument", with(r, "snapshots", "extra"), `snapshots takes no arguments, got "extra"`},
		{"snapshots tag without value", slices.Concat([]string{"snapshots"}, r, []string{"--tag"}), "flag needs an argument: -tag"},
		{"ls without snapshot", with(r, "ls"), "ls needs SNAPSHOT"},
		{"ls with three arguments", with(r, "ls", "a", "b", "c"), "ls needs SNAPSHOT"},
		{"restore without target", with(r, "restore", "latest"), "restore needs --target"},
		{"restore without snapshot", with(r, "restore", "--target", dir), "restore needs exactly one SNAPSHOT"},
		{"restore with two snapshots", with(r, "restore", "a", "b", "--target", dir), "restore needs exactly one SNAPSHOT"},
		{"check with an argument", with(r, "check", "extra"), `check takes no arguments, got "extra"`},
		{"check with a bad subset", with(r, "check", "--read-data-subset", "0/0"), "read-data-subset"},
		{"check with a subset that is no number", with(r, "check", "--read-data-subset", "abc"), "read-data-subset"},
		{"backup without paths", with(r, "backup"), "backup"},
		{"backup with a bad compression", with(r, "backup", "--compression", "bogus", dir), "compression"},
		{"backup with a bad bandwidth", with(r, "backup", "--bandwidth", "xx", dir), "bandwidth"},
		{"backup with a bad time", with(r, "backup", "--time", "notatime", dir), "time"},
		{"backup --stdin with a path", with(r, "backup", "--stdin", dir), "takes no PATH"},
		{"init with an argument", with(r, "init", "extra"), `init takes no arguments, got "extra"`},
		{"pin without snapshot", with(r, "pin"), "pin needs exactly one SNAPSHOT"},
		{"pin with two", with(r, "pin", "a", "b"), "pin needs exactly one SNAPSHOT"},
		{"unpin without snapshot", with(r, "unpin"), "unpin needs exactly one SNAPSHOT"},
		{"forget with a bad duration", with(r, "forget", "--keep-within", "bogus"), "keep-within"},
		{"forget with a bad group", with(r, "forget", "--keep-last", "1", "--group-by", "bogus"), "group-by"},
		{"forget without policy", with(r, "forget"), "retention policy keeps nothing"},
		{"prune with an argument", with(r, "prune", "latest"), `prune takes no arguments, got "latest"`},
		{"prune with a bad limit", with(r, "prune", "--max-unused", "bogus"), "max-unused"},
		{"prune with a bad repack size", with(r, "prune", "--max-repack-size", "bogus"), "max-repack-size"},
		{"key list with an argument", with(r, "key", "list", "extra"), `key list takes no arguments`},
		{"key remove without id", with(r, "key", "remove"), "key remove needs exactly one KEY-ID"},
		{"key remove with two", with(r, "key", "remove", "a", "b"), "key remove needs exactly one KEY-ID"},
		{"key add with an argument", with(r, "key", "add", "extra"), "key add takes no arguments"},
		{"key passwd with an argument", with(r, "key", "passwd", "extra"), "key passwd takes no arguments"},
		{"schedule preview without spec", []string{"schedule", "preview"}, "schedule preview needs a schedule spec"},
		{"schedule preview with a bad spec", []string{"schedule", "preview", "bogus", "spec"}, "bogus"},
		{"schedule preview with count 0", []string{"schedule", "preview", "daily 02:00", "--count", "0"}, "count"},
		{"schedule preview with a bad zone", []string{"schedule", "preview", "daily 02:00", "--tz", "Nowhere/City"}, "Nowhere/City"},
		{"schedule preview with a bad from", []string{"schedule", "preview", "daily 02:00", "--from", "notatime"}, "notatime"},
		{"config validate with an argument", with(c, "config", "validate", "extra"), "config validate takes no arguments"},
		{"tick with an argument", with(c, "tick", "extra"), "tick takes no arguments"},
		{"tick with a bad time", with(c, "tick", "--at", "notatime"), "notatime"},
		{"serve with an argument", with(c, "serve", "extra"), "serve takes no arguments"},
		{"job list with an argument", with(c, "job", "list", "extra"), "job list takes no arguments"},
		{"job list with a bad status", with(c, "job", "list", "--status", "bogus"), "bogus"},
		{"job list with a limit that is no number", with(c, "job", "list", "--limit", "abc"), "limit"},
		{"job show without name", with(c, "job", "show"), "job show needs exactly one job NAME"},
		{"job run without name", with(c, "job", "run"), "job run needs exactly one job NAME"},
		{"job run with two names", with(c, "job", "run", "a", "b"), "job run needs exactly one job NAME"},
		{"job pause without name", with(c, "job", "pause"), "job pause needs exactly one job NAME"},
		{"job resume without name", with(c, "job", "resume"), "job resume needs exactly one job NAME"},
		{"job explain without name", with(c, "job", "explain"), "job explain needs exactly one job NAME"},
		{"job retention without name", with(c, "job", "retention"), "job retention needs exactly one job NAME"},
		{"drill without job", with(c, "drill"), "drill needs exactly one job NAME"},
		{"drill with two jobs", with(c, "drill", "a", "b"), "drill needs exactly one job NAME"},
		{"runs with an argument", with(c, "runs", "extra"), `unknown command "extra"`},
		{"runs with a bad status", with(c, "runs", "--status", "bogus"), "bogus"},
		{"runs with a bad kind", with(c, "runs", "--kind", "bogus"), "bogus"},
		{"runs show without id", with(c, "runs", "show"), "runs show needs exactly one RUN id"},
		{"runs show with a bad id", with(c, "runs", "show", "abc"), `invalid run id "abc"`},
		{"runs show with a negative id", with(c, "runs", "show", "-5"), `invalid run id "-5"`},
		{"runs cancel without id", with(c, "runs", "cancel"), "runs cancel needs exactly one RUN id"},
		{"status with an argument", with(c, "status", "extra"), "status takes no arguments"},
		{"status with a bad time", with(c, "status", "--at", "notatime"), "notatime"},
		{"audit with an argument", with(c, "audit", "extra"), "audit takes no arguments"},
		{"repository list with an argument", with(c, "repository", "list", "extra"), "repository list takes no arguments"},
		{"install without kind", with(c, "install"), "install needs one of cron, systemd, launchd or task-scheduler"},
		{"install with a bad kind", with(c, "install", "bogus"), `install "bogus": want cron, systemd, launchd or task-scheduler`},
		{"install with two kinds", with(c, "install", "cron", "systemd"), "install needs one of cron, systemd, launchd or task-scheduler"},
		{"version with an argument", []string{"version", "extra"}, "version takes no arguments"},
		{"diff with one snapshot", with(r, "diff", "a"), "diff needs exactly two snapshots"},
		{"find without a pattern", with(r, "find"), "find needs at least one PATTERN"},
		{"stats with a bad mode", with(r, "stats", "--mode", "bogus"), `--mode "bogus": want restore-size or raw-data`},
		{"dump without a path", with(r, "dump", "a"), "dump needs SNAPSHOT and PATH"},
		{"tag without a change", with(r, "tag"), "tag needs --add, --remove or --set"},
		{"tag with --set and --add", with(r, "tag", "--add", "x", "--set", "y"), "--set cannot be combined with --add or --remove"},
		{"copy without a source", with(r, "copy"), "no source repository given"},
		{"unlock with an argument", with(r, "unlock", "extra"), `unlock takes no arguments, got "extra"`},
		{"cat without a type", with(r, "cat"), "cat needs a type"},
		{"cat of an unknown type", with(r, "cat", "bogus"), `cannot cat "bogus"`},
		{"list without a type", with(r, "list"), "list needs exactly one type"},
		{"list of an unknown type", with(r, "list", "bogus"), `cannot list "bogus"`},
		{"version with an unknown flag", []string{"version", "--bogus"}, "flag provided but not defined: -bogus"},
		{"generate with nothing to write", []string{"generate"}, "generate needs at least one of"},
		{"generate with an argument", []string{"generate", "extra"}, "generate takes no arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runMain(tc.args...)
			if res.code != ExitUsage {
				t.Fatalf("nightjar %q: want exit %d, got %s", tc.args, ExitUsage, res)
			}
			lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "nightjar: ") || !strings.Contains(lines[0], tc.message) || res.stdout != "" {
				t.Errorf("nightjar %q: want one line on stderr saying %q and nothing on stdout, got %s", tc.args, tc.message, res)
			}
		})
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "config.toml" && e.Name() != "password" {
			t.Errorf("a bad command line created %s", e.Name())
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// help, --help and -h work at every level and in every position: the
// help of the command named goes to stdout, with exit 0.
func TestHelpEverywhere(t *testing.T) {
	cleanEnvironment(t)
	cases := []struct {
		args []string
		want string // the NAME line of the help shown
	}{
		{nil, "nightjar - schedule and run"},
		{[]string{"help"}, "nightjar - schedule and run"},
		{[]string{"help", "help"}, "nightjar - schedule and run"},
		{[]string{"--help"}, "nightjar - schedule and run"},
		{[]string{"-h"}, "nightjar - schedule and run"},
		{[]string{"-r", "/x"}, "nightjar - schedule and run"},
		{[]string{"help", "backup"}, "nightjar backup - "},
		{[]string{"backup", "--help"}, "nightjar backup - "},
		{[]string{"backup", "-h", "/some/path"}, "nightjar backup - "},
		{[]string{"help", "install", "cron"}, "nightjar install - "},
		{[]string{"install", "cron", "--help"}, "nightjar install - "},
		{[]string{"restore", "latest", "--help"}, "nightjar restore - "},
		{[]string{"restore", "--help", "latest"}, "nightjar restore - "},
		{[]string{"-r", "/x", "restore", "latest", "--target", "/y", "-h"}, "nightjar restore - "},
		{[]string{"job", "run", "--help", "NAME"}, "nightjar job run - "},
		{[]string{"help", "job", "run"}, "nightjar job run - "},
		{[]string{"job", "help", "run"}, "nightjar job run - "},
		{[]string{"job"}, "nightjar job - "},
		{[]string{"job", "--help"}, "nightjar job - "},
		{[]string{"help", "job"}, "nightjar job - "},
		{[]string{"runs", "--help"}, "nightjar runs - "},
		{[]string{"runs", "show", "-h"}, "nightjar runs show - "},
		{[]string{"--log-format", "json", "help", "version"}, "nightjar version - "},
		{[]string{"generate", "--help"}, "nightjar generate - "},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := runMain(tc.args...)
			if res.code != ExitOK || res.stderr != "" {
				t.Fatalf("want exit 0 and nothing on stderr, got %s", res)
			}
			if !strings.HasPrefix(res.stdout, "NAME:\n   "+tc.want) {
				t.Errorf("want the help of %q on stdout, got %s", tc.want, res)
			}
		})
	}
	// A group's help lists its subcommands; a command's lists its flags,
	// the global ones among them.
	if res := runMain("help", "job"); !strings.Contains(res.stdout, "retention") {
		t.Errorf("job's help lists no subcommand retention:\n%s", res.stdout)
	}
	for _, flag := range []string{"--repo", "--quiet", "--verbose", "--help"} {
		if res := runMain("snapshots", "--help"); !strings.Contains(res.stdout, flag) {
			t.Errorf("snapshots' help lists no %s:\n%s", flag, res.stdout)
		}
	}
	// After "--" --help is an argument, not a request for help.
	if res := runMain("backup", "--", "--help"); strings.HasPrefix(res.stdout, "NAME:") {
		t.Errorf("backup -- --help showed help:\n%s", res)
	}
}

func TestNearest(t *testing.T) {
	names := []string{"backup", "snapshots", "restore", "ls", "list", "run", "runs", "job", "copy"}
	cases := []struct {
		name, word string
		want       []string
	}{
		{"a letter missing", "bakup", []string{"backup"}},
		{"two letters swapped", "retsore", []string{"restore"}},
		{"a letter too many", "backupp", []string{"backup"}},
		{"two edits", "snapshts", []string{"snapshots"}},
		{"a beginning", "snap", []string{"snapshots"}},
		{"two as near", "rus", []string{"run", "runs"}},
		{"a short word one edit away", "lz", []string{"ls"}},
		{"too far", "frobnicate", nil},
		{"a short word two edits away", "foo", nil},
		{"a four-letter word two edits away", "nope", nil},
		{"one letter", "x", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := nearest(tc.word, names); !slices.Equal(got, tc.want) {
				t.Errorf("nearest(%q) = %q, want %q", tc.word, got, tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	cleanEnvironment(t)
	text := runMain("version")
	if text.code != ExitOK || text.stderr != "" {
		t.Fatalf("version: %s", text)
	}
	for _, want := range []string{"nightjar " + buildVersion(), "versions 1 to " + strconv.Itoa(repo.ConfigVersion), "objects version " + strconv.Itoa(repo.FormatVersion),
		runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("version does not say %q:\n%s", want, text.stdout)
		}
	}
	if flag := runMain("--version"); flag != text {
		t.Errorf("--version printed\n%s\nversion printed\n%s", flag, text)
	}
	res := runMain("version", "--json")
	var got versionJSON
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil || res.code != ExitOK {
		t.Fatalf("version --json: %v\n%s", err, res)
	}
	want := versionJSON{MessageType: "version", Version: buildVersion(), RepositoryVersions: []int{1, 2}, NewRepositoryVersion: repo.ConfigVersion,
		ObjectFormat: repo.FormatVersion, GoVersion: runtime.Version(), GoOS: runtime.GOOS, GoArch: runtime.GOARCH}
	if got.MessageType != want.MessageType || got.Version != want.Version || !slices.Equal(got.RepositoryVersions, want.RepositoryVersions) ||
		got.NewRepositoryVersion != want.NewRepositoryVersion || got.ObjectFormat != want.ObjectFormat ||
		got.GoVersion != want.GoVersion || got.GoOS != want.GoOS || got.GoArch != want.GoArch {
		t.Errorf("version --json = %+v, want %+v", got, want)
	}
}

// The repository flags work before and after the command, the one after
// wins, and the environment still works.
func TestGlobalFlagsBeforeTheCommand(t *testing.T) {
	home := cleanEnvironment(t)
	dir := filepath.Join(home, "repo")
	missing := filepath.Join(home, "missing")
	if res := runMain("-r", dir, "init", "--insecure-no-encryption"); res.code != ExitOK {
		t.Fatalf("init: %s", res)
	}
	cases := []struct {
		name string
		env  string // NIGHTJAR_REPOSITORY
		args []string
		want int
	}{
		{"before", "", []string{"-r", dir, "snapshots", "--json"}, ExitOK},
		{"long form before", "", []string{"--repo=" + dir, "snapshots", "--json"}, ExitOK},
		{"after", "", []string{"snapshots", "--json", "--repo", dir}, ExitOK},
		{"before and after: after wins", "", []string{"-r", missing, "snapshots", "-r", dir, "--json"}, ExitOK},
		{"after and before: after wins", "", []string{"-r", dir, "snapshots", "-r", missing, "--json"}, ExitNoRepository},
		{"the environment", dir, []string{"snapshots", "--json"}, ExitOK},
		{"a flag over the environment", missing, []string{"-r", dir, "snapshots", "--json"}, ExitOK},
		{"with verbosity before", "", []string{"-q", "-r", dir, "snapshots", "--json"}, ExitOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NIGHTJAR_REPOSITORY", tc.env)
			res := runMain(tc.args...)
			if res.code != tc.want {
				t.Fatalf("want exit %d, got %s", tc.want, res)
			}
			if tc.want == ExitOK && strings.TrimSpace(res.stdout) != "[]" {
				t.Errorf("want an empty list on stdout, got %s", res)
			}
		})
	}
}

func TestCommandLineCarriesFlagsAndHelp(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"a repository before the command", []string{"nj", "-r", "R", "snapshots"}, []string{"nj", "snapshots", "-r", "R"}},
		{"before and after: both, the one after last", []string{"nj", "-r", "R", "snapshots", "-r", "S"}, []string{"nj", "snapshots", "-r", "R", "-r", "S"}},
		{"between a group and its subcommand", []string{"nj", "job", "--config", "C", "run", "x", "--wait"}, []string{"nj", "job", "run", "--config", "C", "--wait", "x"}},
		{"verbosity before", []string{"nj", "-v", "tick", "--json"}, []string{"nj", "tick", "-v", "--json"}},
		{"log flags stay in front", []string{"nj", "--log-level", "debug", "-r", "R", "snapshots", "-q"}, []string{"nj", "--log-level", "debug", "snapshots", "-r", "R", "-q"}},
		{"--help after an argument", []string{"nj", "restore", "latest", "--help"}, []string{"nj", "help", "restore"}},
		{"-h before an argument", []string{"nj", "restore", "-h", "latest"}, []string{"nj", "help", "restore"}},
		{"help of a command with arguments", []string{"nj", "help", "install", "cron"}, []string{"nj", "help", "install"}},
		{"help word in a group", []string{"nj", "job", "help", "run"}, []string{"nj", "help", "job", "run"}},
		{"help of an unknown topic", []string{"nj", "job", "help", "nope"}, []string{"nj", "help", "job", "nope"}},
		{"a group alone", []string{"nj", "-r", "R", "key"}, []string{"nj", "help", "key"}},
		{"flags alone", []string{"nj", "-q"}, []string{"nj", "help"}},
		{"--version", []string{"nj", "--version"}, []string{"nj", "version"}},
		{"an unknown command before its flags", []string{"nj", "bakup", "--json"}, []string{"nj", "bakup", "--json"}},
		{"--help after -- is an argument", []string{"nj", "backup", "--stdin-from-command", "--", "tool", "--help"}, []string{"nj", "backup", "--stdin-from-command", "--", "tool", "--help"}},
		{"a negative number stays an argument", []string{"nj", "runs", "show", "-5", "--json"}, []string{"nj", "runs", "show", "--json", "--", "-5"}},
		{"a value that looks like help", []string{"nj", "pin", "x", "--reason", "--help"}, []string{"nj", "pin", "--reason", "--help", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commandLine(tc.args, newApp(nil, nil).Commands); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Every command takes --verbose and --quiet; those that had them keep
// their own meaning (and help text), and verbosity sees them wherever they
// are given.
func TestEveryCommandTakesVerbosity(t *testing.T) {
	app := newApp(nil, nil)
	walkCommands(app.Commands, func(c *cli.Command) {
		if len(c.Subcommands) > 0 && len(c.Flags) == 1 {
			return // a group: it only shows help
		}
		for _, name := range []string{"verbose", "v", "quiet", "q"} {
			if findFlag(c.Flags, name) == nil {
				t.Errorf("%s has no -%s", c.HelpName, name)
			}
		}
	})
	if f := findFlag(findCommand(app.Commands, "tick").Flags, "verbose").(*cli.BoolFlag); !strings.Contains(f.Usage, "decides") {
		t.Errorf("tick's --verbose lost its meaning: %q", f.Usage)
	}
	if f := findFlag(findCommand(app.Commands, "backup").Flags, "quiet").(*cli.BoolFlag); !strings.Contains(f.Usage, "progress") {
		t.Errorf("backup's --quiet lost its meaning: %q", f.Usage)
	}

	for _, tc := range []struct {
		name                 string
		args                 []string
		wantQuiet, wantVerbo bool
	}{
		{"neither", nil, false, false},
		{"quiet before", []string{"-q", "probe"}, true, false},
		{"quiet after", []string{"probe", "--quiet"}, true, false},
		{"verbose before", []string{"--verbose", "probe"}, false, true},
		{"verbose after", []string{"probe", "-v"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var quiet, verbose, ran bool
			probe := &cli.Command{Name: "probe", ArgsUsage: " ", Action: func(c *cli.Context) error {
				quiet, verbose = verbosity(c)
				ran = true
				return nil
			}}
			app := &cli.App{Name: "nightjar", Commands: []*cli.Command{probe}, Flags: globalFlags(), Writer: &bytes.Buffer{}, HideHelpCommand: true, Action: helpAction}
			prepareCommands(app.Commands, "")
			args := tc.args
			if args == nil {
				args = []string{"probe"}
			}
			if err := app.Run(commandLine(append([]string{"nightjar"}, args...), app.Commands)); err != nil || !ran {
				t.Fatalf("probe did not run: %v", err)
			}
			if quiet != tc.wantQuiet || verbose != tc.wantVerbo {
				t.Errorf("verbosity = %v, %v; want %v, %v", quiet, verbose, tc.wantQuiet, tc.wantVerbo)
			}
		})
	}
}

// The library checks no flag as required: it would print the command's
// help on stdout before the error. checkedAction checks them.
func TestNoFlagIsRequiredOfTheLibrary(t *testing.T) {
	walkCommands(newApp(nil, nil).Commands, func(c *cli.Command) {
		for _, f := range c.Flags {
			if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
				t.Errorf("%s: --%s is required of the library (takeRequired does not know its type %T)", c.HelpName, f.Names()[0], f)
			}
		}
	})
}
