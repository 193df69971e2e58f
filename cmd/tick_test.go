package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Runs the pass gave up leave a trace in tick's (and serve's) output: a
// warning on stderr in both modes, and the lost list of --json.
func TestReportPassShowsLostRuns(t *testing.T) {
	sum := pass.Summary{Lost: []pass.LostRun{{
		Run:    pass.Run{ID: 7, Job: "daten", Kind: pass.KindBackup, Status: pass.StatusRunning},
		Reason: pass.LostReclaimed,
	}}}
	for _, c := range []struct {
		name    string
		jsonOut bool
	}{{"text", false}, {"json", true}} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			p := &printer{stdout: &out, stderr: &errOut, jsonOut: c.jsonOut}
			if err := reportPass(p, sum, true); err != nil {
				t.Fatal(err)
			}
			if want := "run 7 of job daten was given up, nothing was recorded for it: " + pass.LostReclaimed; !strings.Contains(errOut.String(), want) {
				t.Errorf("stderr %q lacks %q", errOut.String(), want)
			}
			if !c.jsonOut {
				if strings.Contains(out.String(), "nothing was due") {
					t.Errorf("a pass that lost a run says nothing was due: %q", out.String())
				}
				return
			}
			var got struct {
				Lost []struct {
					ID         int64  `json:"id"`
					Job        string `json:"job"`
					Kind       string `json:"kind"`
					LostReason string `json:"lost_reason"`
				} `json:"lost"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("tick --json: %v\n%s", err, out.String())
			}
			if len(got.Lost) != 1 || got.Lost[0].ID != 7 || got.Lost[0].Job != "daten" || got.Lost[0].Kind != "backup" || got.Lost[0].LostReason != pass.LostReclaimed {
				t.Errorf("lost = %+v", got.Lost)
			}
		})
	}
}

// tickWorld writes a config whose one job, "home", backs up a folder that
// does not exist (so that every run of it fails) at 02:00 every day, and
// returns the arguments that name the config.
func tickWorld(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("tick under cron\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "nightjar.toml")
	text := fmt.Sprintf(`[scheduler]
state = %q

[repository.main]
path = %q
password_file = %q
create_if_missing = true

[[job]]
name = "home"
repository = "main"
schedule = "daily 02:00"
retention = "off"
verify = "off"
  [[job.source]]
  path = %q
`, filepath.Join(dir, "state.db"), filepath.Join(dir, "repo"), pw, filepath.Join(dir, "missing"))
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", cfg}
}

// runMain runs the command line with stdout and stderr in buffers, which
// are a terminal when terminal is set.
func runMainOnTerminal(t *testing.T, terminal bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	isTerminal = func(w io.Writer) bool { return terminal && (w == &out || w == &errOut) }
	code = Main(append([]string{"nightjar"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// Under cron (stdout not a terminal) an idle tick prints nothing, so that
// cron mails nothing, and a failed run prints one line, so that cron mails
// exactly then; on a terminal and with --verbose every line is printed,
// and --quiet prints only the failure also on a terminal.
func TestTickQuietUnlessSomethingFailed(t *testing.T) {
	defer func(f func(io.Writer) bool) { isTerminal = f }(isTerminal)
	for _, tc := range []struct {
		name     string
		terminal bool
		flags    []string
		idle     string // the whole output of an idle pass
		failed   int    // lines of a pass whose one run failed, stdout and stderr together
	}{
		{name: "cron", idle: "", failed: 1},
		{name: "terminal", terminal: true, idle: "nothing was due\n", failed: 2}, // the run and the error: a missing source gets no retry
		{name: "cron verbose", flags: []string{"--verbose"}, idle: "nothing was due\n", failed: -1},
		{name: "terminal quiet", terminal: true, flags: []string{"--quiet"}, idle: "", failed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tickWorld(t)
			tick := append(append([]string{"tick"}, tc.flags...), cfg...)
			code, out, errOut := runMainOnTerminal(t, tc.terminal, tick...)
			if code != ExitOK || out+errOut != tc.idle && !strings.Contains(tc.name, "verbose") {
				t.Errorf("idle tick: exit %d, output %q, want exit 0 and %q (stderr %q)", code, out, tc.idle, errOut)
			}
			if strings.Contains(tc.name, "verbose") && !strings.HasPrefix(out, tc.idle) {
				t.Errorf("idle tick with --verbose: stdout %q, want %q", out, tc.idle)
			}
			if code, out, errOut := runMainOnTerminal(t, false, append([]string{"job", "run", "home"}, cfg...)...); code != ExitOK {
				t.Fatalf("job run home: exit %d\n%s%s", code, out, errOut)
			}
			code, out, errOut = runMainOnTerminal(t, tc.terminal, tick...)
			if code != ExitFailure {
				t.Errorf("tick of a failing run: exit %d, want %d\n%s%s", code, ExitFailure, out, errOut)
			}
			// A source that does not exist is a configuration error.
			if !strings.HasPrefix(out, "run 1 of job home: failed [config/SOURCE_MISSING]: no source exists (") {
				t.Errorf("stdout %q does not start with the failed run's line", out)
			}
			if n := strings.Count(out, "no source exists"); n != 1 {
				t.Errorf("stdout says %d times that no source exists, want once: %q", n, out)
			}
			if lines := strings.Count(out+errOut, "\n"); tc.failed >= 0 && lines != tc.failed {
				t.Errorf("%d lines, want %d:\n%s%s", lines, tc.failed, out, errOut)
			}
		})
	}
}

// --at and the real clock never drive one state database: the second kind
// is refused with one line and exit 2, and the first kind goes on.
func TestAtAndTheRealClockStayApart(t *testing.T) {
	const at = "2026-06-01T12:00:00Z"
	for _, tc := range []struct {
		name   string
		first  []string // a command that succeeds on a new state database
		then   []string
		code   int
		saying string // in the one line of a refusal
	}{
		{name: "--at after a real pass", first: []string{"tick"}, then: []string{"tick", "--at", at},
			code: ExitUsage, saying: "--at refused: a live scheduler uses this state database"},
		{name: "a real pass after --at", first: []string{"tick", "--at", at}, then: []string{"tick"},
			code: ExitUsage, saying: "refused: this state database was driven by --at"},
		{name: "job run --wait after --at", first: []string{"job", "show", "home", "--at", at}, then: []string{"job", "run", "home", "--wait"},
			code: ExitUsage, saying: "refused: this state database was driven by --at"},
		{name: "--at after --at", first: []string{"tick", "--at", at}, then: []string{"tick", "--at", "2026-06-01T12:01:00Z"}, code: ExitOK},
		{name: "a real pass after a real pass", first: []string{"tick"}, then: []string{"tick"}, code: ExitOK},
		{name: "queueing after --at", first: []string{"tick", "--at", at}, then: []string{"job", "run", "home"}, code: ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tickWorld(t)
			if code, out, errOut := runMainOnTerminal(t, false, append(tc.first, cfg...)...); code != ExitOK {
				t.Fatalf("%q: exit %d\n%s%s", tc.first, code, out, errOut)
			}
			code, out, errOut := runMainOnTerminal(t, false, append(tc.then, cfg...)...)
			if code != tc.code {
				t.Fatalf("%q: exit %d, want %d\n%s%s", tc.then, code, tc.code, out, errOut)
			}
			if tc.code == ExitOK {
				return
			}
			if out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.saying) {
				t.Errorf("%q: stdout %q, stderr %q: want one line on stderr saying %q", tc.then, out, errOut, tc.saying)
			}
		})
	}
}
