//go:build linux

package schede2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A password file that goes away: the run fails saying so, and no output
// shows the file's path: not the webhook's documents, not the hooks'
// NIGHTJAR_ERROR, not runs show, status or repository list, not the pass's
// JSON log records, and not the next tick, whose run fails the same way.
func TestPasswordFilePathAppearsNowhere(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := writeSource(t, w)
	srv := newHookServer(t, false)
	// The before hook moves the password file away once the tick has
	// checked it: the run then opens the repository without it. The
	// path is in a script, so that no hook's command line shows it.
	mustWrite(t, w.path("move.sh"), "if [ -e '"+w.pw+"' ]; then mv '"+w.pw+"' '"+w.pw+".away'; fi\n", 0o755)
	hookError := w.path("hook-error")
	w.writeConfig(header("probe_every = \"1m\"", "") + hookJob("home", `
[job.hooks]
before = ["/bin/sh", "`+w.path("move.sh")+`"]
on_failure = ["/bin/sh", "-c", "printf '%s' \"$NIGHTJAR_ERROR\" > `+hookError+`"]

[[job.source]]
path = "`+src+`"
`) + "\n[notify]\nwebhooks = [\"" + srv.URL + "/hook/TOKEN\"]\n")

	w.must(exitOK, "job", "run", "home")
	tick := w.nj("tick", "--json", "--log-format", "json", "--log-level", "debug")
	var p passRec
	decodeWhole(t, tick, &p)
	if len(p.Finished) != 1 || p.Finished[0].Status != "failed" {
		t.Fatalf("tick finished %+v, want one failed run\n%s", p.Finished, tick)
	}
	id := strconv.FormatInt(p.Finished[0].ID, 10)
	const why = "repository main: its password_file cannot be read: no such file or directory"

	outputs := map[string]string{"tick --log-format json stderr": tick.Stderr}
	var bodies []string
	for _, r := range srv.requests("/hook/") {
		bodies = append(bodies, string(r.Body))
	}
	outputs["webhook documents"] = strings.Join(bodies, "\n")
	hookErr, err := os.ReadFile(hookError)
	if err != nil {
		t.Fatalf("the on_failure hook did not run: %v", err)
	}
	outputs["NIGHTJAR_ERROR"] = string(hookErr)
	outputs["runs show"] = w.must(exitOK, "runs", "show", id).Stdout
	outputs["runs show --json"] = w.must(exitOK, "runs", "show", id, "--json").Stdout
	status := w.nj("status", "--log-format", "json")
	outputs["status"] = status.Stdout + status.Stderr
	statusJSON := w.nj("status", "--json")
	outputs["status --json"] = statusJSON.Stdout
	list := w.nj("repository", "list", "--json", "--log-format", "json")
	outputs["repository list"] = list.Stdout + list.Stderr
	// The next run fails the same way: the tick runs it (the password is
	// read only when a run needs it) and fails for it alone.
	w.must(exitOK, "job", "run", "home")
	again := w.nj("tick", "--log-format", "json")
	if again.Code != exitFailure {
		t.Errorf("a tick without the password file exited %d, want %d (a run failed)\n%s", again.Code, exitFailure, again)
	}
	outputs["next tick"] = again.Stdout + again.Stderr

	for _, where := range []string{"webhook documents", "NIGHTJAR_ERROR", "runs show", "status", "status --json", "next tick"} {
		if !strings.Contains(outputs[where], why) {
			t.Errorf("%s does not say %q:\n%s", where, why, outputs[where])
		}
	}
	for where, text := range outputs {
		for _, secret := range []string{w.pw, filepath.Base(w.pw) + ".away", "TOKEN"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %q:\n%s", where, secret, text)
			}
		}
	}
}
