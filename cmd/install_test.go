package cmd

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runInstallCommand runs `nightjar install ARGS...` and returns its
// output, its warnings and its error.
func runInstallCommand(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = newApp(&out, &errOut).Run(append([]string{"nightjar", "install"}, args...))
	return out.String(), errOut.String(), err
}

// install prints the config tick will really read, absolute, and says
// where its name came from: --config, then NIGHTJAR_CONFIG, then the
// default for the user; one that cannot be read is warned about.
func TestInstallNamesTheConfigInUse(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	for _, name := range []string{"flag.toml", "env.toml"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	defaultSource := "the default for this user"
	if os.Geteuid() == 0 {
		defaultSource = "the default for root"
	}
	tests := []struct {
		name       string
		args       []string
		env        string // NIGHTJAR_CONFIG
		want       string // the config path
		source     string
		unreadable bool
	}{
		{"a relative --config", []string{"--config", "flag.toml"}, "", filepath.Join(dir, "flag.toml"), "from --config", false},
		{"NIGHTJAR_CONFIG", nil, filepath.Join(dir, "env.toml"), filepath.Join(dir, "env.toml"), "from NIGHTJAR_CONFIG", false},
		{"--config over NIGHTJAR_CONFIG", []string{"--config", "flag.toml"}, filepath.Join(dir, "env.toml"), filepath.Join(dir, "flag.toml"), "from --config", false},
		{"the default", nil, "", "", defaultSource, true}, // unless it exists
		{"a config that does not exist", []string{"--config", "missing.toml"}, "", filepath.Join(dir, "missing.toml"), "from --config", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NIGHTJAR_CONFIG", tt.env)
			want, unreadable := tt.want, tt.unreadable
			if want == "" {
				// As root the default is /etc/nightjar/config.toml,
				// which this machine may have.
				want = defaultConfigPath()
				_, err := os.Stat(want)
				unreadable = err != nil
			}
			out, warnings, err := runInstallCommand(t, append(tt.args, "cron")...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, " tick --config "+shellQuote(want)+"\n") {
				t.Errorf("the crontab line does not run tick with --config %s:\n%s", want, out)
			}
			if !strings.Contains(out, "with the config "+want+" ("+tt.source+")") {
				t.Errorf("the comment does not name the config %s (%s):\n%s", want, tt.source, out)
			}
			if got := strings.Contains(warnings, "config "+want+" ("+tt.source+"): "); got != unreadable {
				t.Errorf("warned that the config cannot be read: %v, want %v; stderr:\n%s", got, unreadable, warnings)
			}
		})
	}
}

// A relative --state is made absolute, as --config is: the scheduled tick
// runs in another folder, where a relative one would be a new, empty file.
func TestInstallMakesTheStateAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"cron", "systemd", "launchd"} {
		out, _, err := runInstallCommand(t, "--config", "config.toml", "--state", "state.db", target)
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(dir, "state.db")
		if !strings.Contains(out, want) || strings.Contains(strings.ReplaceAll(out, want, ""), "state.db") {
			t.Errorf("install %s does not name the state as %s alone:\n%s", target, want, out)
		}
	}
}

// The crontab comment says what cron does: it mails whatever a command
// prints, not only what a failing one prints.
func TestInstallCronSaysWhatCronMails(t *testing.T) {
	var out bytes.Buffer
	cronInstall(&out, installPlan{exe: "/usr/local/bin/nightjar", config: "/etc/nightjar/config.toml", configSource: "the default for root"})
	text := out.String()
	for _, want := range []string{
		"cron mails whatever a command prints",
		"tick prints nothing on a pass with nothing to report",
		"when it is not on a terminal",
		"* * * * * /usr/local/bin/nightjar tick --config /etc/nightjar/config.toml\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the crontab lines do not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "failed pass") || strings.Contains(text, "non-zero") {
		t.Errorf("the crontab lines claim cron mails only on a failure:\n%s", text)
	}
}

// The launchd plist is a valid property list that runs tick with the
// config (and state) every 60 seconds, and says where it goes and how to
// load it: a daemon for root, a user agent otherwise.
func TestInstallLaunchd(t *testing.T) {
	const exe = "/usr/local/bin/nightjar"
	odd := "/Users/ann/a&b <c>/x--y.toml" // needs escaping, and "--" must stay out of comments
	tests := []struct {
		name      string
		plan      installPlan
		plistPath string
		load      string
		log       string
	}{
		{"a user agent", installPlan{exe: exe, config: "/Users/ann/.config/nightjar/config.toml", home: "/Users/ann", uid: 501},
			"/Users/ann/Library/LaunchAgents/" + launchdLabel + ".plist",
			"launchctl bootstrap gui/501 /Users/ann/Library/LaunchAgents/" + launchdLabel + ".plist",
			"/Users/ann/Library/Logs/nightjar.log"},
		{"a daemon for root", installPlan{exe: exe, config: "/etc/nightjar/config.toml", state: "/var/db/nightjar.db", root: true, home: "/var/root"},
			"/Library/LaunchDaemons/" + launchdLabel + ".plist",
			"sudo launchctl bootstrap system /Library/LaunchDaemons/" + launchdLabel + ".plist",
			"/Library/Logs/nightjar.log"},
		{"a config whose name needs escaping", installPlan{exe: exe, config: odd, home: "/Users/ann", uid: 501},
			"/Users/ann/Library/LaunchAgents/" + launchdLabel + ".plist",
			"launchctl bootstrap gui/501 /Users/ann/Library/LaunchAgents/" + launchdLabel + ".plist",
			"/Users/ann/Library/Logs/nightjar.log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			launchdInstall(&out, tt.plan)
			plist, comments := parsePlist(t, out.Bytes())
			wantArgs := []string{exe, "tick", "--config", tt.plan.config}
			if tt.plan.state != "" {
				wantArgs = append(wantArgs, "--state", tt.plan.state)
			}
			wantKeys := map[string]any{
				"Label":             launchdLabel,
				"ProgramArguments":  wantArgs,
				"StartInterval":     "60",
				"ExitTimeOut":       "35",
				"ProcessType":       "Background",
				"LowPriorityIO":     true,
				"Nice":              "10",
				"StandardOutPath":   tt.log,
				"StandardErrorPath": tt.log,
			}
			for key, want := range wantKeys {
				got, ok := plist[key]
				if !ok {
					t.Errorf("the plist has no %s", key)
					continue
				}
				if ws, ok := want.([]string); ok {
					if gs, _ := got.([]string); !slices.Equal(gs, ws) {
						t.Errorf("%s = %q, want %q", key, got, ws)
					}
				} else if got != want {
					t.Errorf("%s = %v, want %v", key, got, want)
				}
			}
			if len(plist) != len(wantKeys) {
				t.Errorf("the plist has %d keys, want %d: %v", len(plist), len(wantKeys), plist)
			}
			for _, want := range []string{tt.plistPath, tt.load} {
				if !strings.Contains(comments, want) {
					t.Errorf("the plist's comment does not say %q:\n%s", want, comments)
				}
			}
		})
	}
}

// parsePlist reads a property list strictly (a malformed one fails the
// test) into its keys' values: strings and integers as their text, true
// and false as bools, arrays of strings as []string. It also returns the
// text of its comments.
func parsePlist(t *testing.T, data []byte) (map[string]any, string) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	var comments strings.Builder
	var doctype bool
	var path []string // the open elements
	values := map[string]any{}
	var key, text string
	var array []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the plist is not valid XML: %v\n%s", err, data)
		}
		switch tok := tok.(type) {
		case xml.Comment:
			comments.Write(tok)
		case xml.Directive:
			doctype = strings.HasPrefix(string(tok), "DOCTYPE plist")
		case xml.StartElement:
			path = append(path, tok.Name.Local)
			text = ""
			switch strings.Join(path, "/") {
			case "plist", "plist/dict", "plist/dict/key", "plist/dict/string", "plist/dict/integer", "plist/dict/array", "plist/dict/array/string":
			case "plist/dict/true", "plist/dict/false":
				values[key] = tok.Name.Local == "true"
			default:
				t.Fatalf("unexpected element %s in the plist", strings.Join(path, "/"))
			}
			if tok.Name.Local == "array" {
				array = []string{}
			}
		case xml.CharData:
			text += string(tok)
		case xml.EndElement:
			switch strings.Join(path, "/") {
			case "plist/dict/key":
				key = text
			case "plist/dict/string", "plist/dict/integer":
				values[key] = text
			case "plist/dict/array/string":
				array = append(array, text)
			case "plist/dict/array":
				values[key] = array
			}
			path = path[:len(path)-1]
		}
	}
	if !doctype {
		t.Errorf("the plist has no plist DOCTYPE:\n%s", data)
	}
	return values, comments.String()
}

// The Task Scheduler line creates a task that runs tick every minute with
// the config, each path quoted so that schtasks hands it over whole.
func TestInstallTaskScheduler(t *testing.T) {
	tests := []struct {
		name       string
		plan       installPlan
		wantCreate string
		tooLong    bool
	}{
		{"paths with spaces",
			installPlan{exe: `C:\Program Files\nightjar\nightjar.exe`, config: `C:\Users\Ann Lee\AppData\Roaming\nightjar\config.toml`},
			`schtasks /Create /F /TN "nightjar tick" /SC MINUTE /MO 1 /TR "\"C:\Program Files\nightjar\nightjar.exe\" tick --config \"C:\Users\Ann Lee\AppData\Roaming\nightjar\config.toml\""`,
			false},
		{"paths without spaces, and a state database",
			installPlan{exe: `C:\nightjar\nightjar.exe`, config: `D:\backup\config.toml`, state: `D:\backup\state.db`},
			`schtasks /Create /F /TN "nightjar tick" /SC MINUTE /MO 1 /TR "C:\nightjar\nightjar.exe tick --config D:\backup\config.toml --state D:\backup\state.db"`,
			false},
		{"a command longer than schtasks takes",
			installPlan{exe: `C:\nightjar\nightjar.exe`, config: `D:\` + strings.Repeat(`deep\`, 60) + `config.toml`},
			`schtasks /Create /F /TN "nightjar tick" /SC MINUTE /MO 1 /TR "C:\nightjar\nightjar.exe tick --config D:\` + strings.Repeat(`deep\`, 60) + `config.toml"`,
			true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			taskSchedulerInstall(&out, tt.plan)
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if got := lines[len(lines)-1]; got != tt.wantCreate {
				t.Errorf("command\n%s\nwant\n%s", got, tt.wantCreate)
			}
			for _, l := range lines[:len(lines)-1] {
				if !strings.HasPrefix(l, "REM ") {
					t.Errorf("line %q before the command is not a cmd.exe comment", l)
				}
			}
			if got := strings.Contains(out.String(), "more than the 261 schtasks takes"); got != tt.tooLong {
				t.Errorf("warned of a command too long: %v, want %v", got, tt.tooLong)
			}
		})
	}
}

// install refuses a scheduler it does not know, naming those it knows,
// as a usage error.
func TestInstallUnknownTarget(t *testing.T) {
	for _, args := range [][]string{{"anacron"}, {}, {"cron", "systemd"}} {
		_, _, err := runInstallCommand(t, args...)
		if exitCode(err) != ExitUsage || err == nil || !strings.Contains(err.Error(), installTargets) {
			t.Errorf("install %q: %v (exit %d), want a usage error naming %s", args, err, exitCode(err), installTargets)
		}
	}
}
