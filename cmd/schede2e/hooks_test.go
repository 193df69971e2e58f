//go:build linux

package schede2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hookRunRec is a run as runs show --json prints it, with its output.
type hookRunRec struct {
	runRec
	Output string `json:"output"`
}

// hookJob is a manual [[job]] with verify and retention off; body holds
// its [job.hooks] and [[job.source]] tables.
func hookJob(name, body string) string {
	return "\n[[job]]\nname = \"" + name + "\"\nrepository = \"main\"\nschedule = \"manual\"\nretention = \"off\"\nverify = \"off\"\n" + body
}

// runOnce queues a run of job and runs it with a real tick, which must
// exit with code; it returns the run as runs show --json prints it and
// runs show's text.
func (w *world) runOnce(job string, code int) (hookRunRec, string) {
	w.t.Helper()
	w.must(exitOK, "job", "run", job)
	p := w.tick(code)
	if len(p.Finished) != 1 {
		w.t.Fatalf("tick finished %d runs, want 1: %+v", len(p.Finished), p)
	}
	id := strconv.FormatInt(p.Finished[0].ID, 10)
	var r hookRunRec
	decodeWhole(w.t, w.must(exitOK, "runs", "show", id, "--json"), &r)
	return r, w.must(exitOK, "runs", "show", id).Stdout
}

// restoreSnapshot restores one snapshot into a fresh folder and returns it.
func (w *world) restoreSnapshot(id string) string {
	w.t.Helper()
	target := filepath.Join(w.t.TempDir(), "restored")
	if res := w.run("restore", id, "--target", target, "--verify", "-r", w.repo); res.Code != exitOK {
		w.t.Fatalf("restore %s\n%s", id, res)
	}
	return target
}

func mustWrite(t *testing.T, p, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// The hooks of a scheduled backup run, with a real tick: what before
// writes is in the backup, on_success sees the snapshots (and no
// password), and the output is kept with the run.
func TestHooksAroundAScheduledBackup(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(src, "kept"), "kept\n", 0o644)
	envFile := w.path("on_success.env")
	w.writeConfig(header("", "") + hookJob("db", `
[job.hooks]
before = "echo dumped > `+src+`/from-before; echo 'before: dump written'"
on_success = ["/bin/sh", "-c", "env > `+envFile+`"]

[[job.source]]
path = "`+src+`"
`))
	r, text := w.runOnce("db", exitOK)
	if r.Status != "succeeded" || len(r.Snapshots) != 1 {
		t.Fatalf("run %+v: want succeeded with one snapshot", r.runRec)
	}
	if !strings.Contains(r.Output, "== hook before: ok\nbefore: dump written\n") || !strings.Contains(r.Output, "== hook on_success: ok\n") {
		t.Errorf("runs show --json output:\n%s", r.Output)
	}
	if !strings.Contains(text, "    before: dump written\n") {
		t.Errorf("runs show does not print the hooks' output:\n%s", text)
	}
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NIGHTJAR_SNAPSHOT_IDS=" + r.Snapshots[0].SnapshotID + "\n", "NIGHTJAR_STATUS=succeeded\n",
		"NIGHTJAR_JOB=db\n", "NIGHTJAR_REPOSITORY=main\n", "NIGHTJAR_RUN_ID=" + strconv.FormatInt(r.ID, 10) + "\n"} {
		if !strings.Contains(string(env), want) {
			t.Errorf("on_success's environment lacks %q", strings.TrimSpace(want))
		}
	}
	if strings.Contains(string(env), "NIGHTJAR_PASSWORD") || strings.Contains(string(env), w.pw) {
		t.Errorf("on_success was given the password file's variable:\n%s", env)
	}
	restored := w.restoreSnapshot(r.Snapshots[0].SnapshotID)
	if got, err := os.ReadFile(filepath.Join(restored, src, "from-before")); err != nil || string(got) != "dumped\n" {
		t.Errorf("the before hook's file is not in the backup: %q, %v", got, err)
	}
}

// A before hook that fails fails the run (class source) with its output in
// the message and in runs show, and nothing is backed up; an after hook
// that fails makes the run partial.
func TestFailingHooks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		hooks      string
		tickCode   int
		status     string
		class      string
		code       string
		inMessage  string
		skipped    string
		snapshots  int
		outputLine string
	}{
		{"a failing before hook", `before = "echo 'pg is down' >&2; exit 3"`, exitFailure,
			"failed", "source", "HOOK_FAILED", "before hook failed: exit status 3: pg is down: nothing was backed up", "", 0,
			"    == hook before: exit status 3\n    pg is down\n"},
		{"a failing after hook", `after = "echo 'umount: busy'; exit 1"`, exitPartial,
			"partial_failure", "", "OBJECTS_SKIPPED", "1 object skipped: hook after: exit status 1: umount: busy", "hook after", 1,
			"    == hook after: exit status 1\n    umount: busy\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			src := w.path("src")
			if err := os.MkdirAll(src, 0o755); err != nil {
				t.Fatal(err)
			}
			w.writeConfig(header("", "") + hookJob("db", "[job.hooks]\n"+c.hooks+"\n[[job.source]]\npath = \""+src+"\"\n"))
			r, text := w.runOnce("db", c.tickCode)
			if r.Status != c.status || r.ErrorClass != c.class || r.ErrorCode != c.code || !strings.Contains(r.Message, c.inMessage) {
				t.Errorf("run %s class %q code %s message %q; want %s %q %s with %q", r.Status, r.ErrorClass, r.ErrorCode, r.Message,
					c.status, c.class, c.code, c.inMessage)
			}
			if c.skipped != "" && (len(r.Skipped) != 1 || r.Skipped[0].Object != c.skipped) {
				t.Errorf("skipped %+v, want %s", r.Skipped, c.skipped)
			}
			if len(r.Snapshots) != c.snapshots {
				t.Errorf("%d snapshots, want %d", len(r.Snapshots), c.snapshots)
			}
			if !strings.Contains(text, c.outputLine) {
				t.Errorf("runs show lacks %q:\n%s", c.outputLine, text)
			}
		})
	}
}

// A command source's output restores bit-identical from its snapshot, and
// a drill checks it; a
// command that exits 3 saves no snapshot and fails its source with its
// standard error.
func TestCommandSourcesOfAScheduledBackup(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeConfig(header("", "") + hookJob("pg", `
[[job.source]]
command = ["sh", "-c", "printf 'CREATE TABLE t;\\n\\000\\377 binary tail'"]
name = "mydb.sql"
`) + hookJob("broken", `
[[job.source]]
command = "printf 'half a dump'; echo 'pg_dump: connection refused' >&2; exit 3"
name = "broken.sql"
`))
	r, _ := w.runOnce("pg", exitOK)
	if r.Status != "succeeded" || len(r.Snapshots) != 1 || r.Snapshots[0].Source != "/mydb.sql" {
		t.Fatalf("run %+v: want succeeded with a snapshot of /mydb.sql", r.runRec)
	}
	restored := w.restoreSnapshot(r.Snapshots[0].SnapshotID)
	got, err := os.ReadFile(filepath.Join(restored, "mydb.sql"))
	if want := "CREATE TABLE t;\n\x00\xff binary tail"; err != nil || string(got) != want {
		t.Errorf("restored %q (%v), want %q", got, err, want)
	}

	// A drill restores the dump and reads it back.
	w.must(exitOK, "drill", "pg")
	runs := w.runsOf("pg")
	if d := runs[len(runs)-1]; d.Kind != "drill" || d.Status != "succeeded" || d.Counters["files_checked"] != 1 || d.Counters["snapshots_checked"] != 1 {
		t.Errorf("drill of the command source: %+v", d)
	}

	r, text := w.runOnce("broken", exitFailure)
	if r.Status != "failed" || r.ErrorCode != "ALL_SOURCES_FAILED" || !strings.Contains(r.Message, "pg_dump: connection refused") ||
		!strings.Contains(r.Message, "exit status 3") {
		t.Errorf("run %s %s %q: want failed, ALL_SOURCES_FAILED, with the command's standard error", r.Status, r.ErrorCode, r.Message)
	}
	if len(r.Snapshots) != 0 {
		t.Errorf("a failed command made snapshots %+v", r.Snapshots)
	}
	for _, s := range w.snapshots() {
		if len(s.Paths) == 1 && s.Paths[0] == "/broken.sql" {
			t.Errorf("the repository holds snapshot %s of the failed command", s.ID)
		}
	}
	if !strings.Contains(text, "== command source broken.sql (standard error): command failed: exit status 3") {
		t.Errorf("runs show lacks the command's standard error:\n%s", text)
	}
}
