//go:build linux

package schede2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nightjar-backup/nightjar/cmd/internal/buildbin"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Exit codes of nightjar (cmd/exitcode.go, README). They are spelled out
// again on purpose: scripts depend on them.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitPartial  = 3
	exitConflict = 4
)

// commandTimeout bounds every run of the binary, so that a hang fails one
// test instead of the whole package. It is a safety net, never a
// verdict: far beyond what any command takes on a loaded machine (a
// 300 MB backup through the race-detecting build at load 38 took over
// 2 minutes), since tests decide by events.
const commandTimeout = 15 * time.Minute

// patience bounds every wait for an event that a test polls for, as a
// safety net like commandTimeout: on a loaded machine events come late,
// never wrongly.
const patience = 10 * time.Minute

const testPassword = "scheduler end to end"

// world is one test's machine: a folder with a config, a state database, a
// repository, a password file and a HOME, all under t.TempDir().
type world struct {
	t     *testing.T
	dir   string
	cfg   string // the config file
	state string // the state database named in the config
	repo  string // the repository named "main" in the config
	pw    string // its password file
	home  string
	extra []string // environment of every run besides environ's (an S3 server's credentials)
	bin   string   // the binary every run uses when set, binPath otherwise
}

// newWorld is a world whose repository "main" exists already, made
// in-process with a cheap key derivation (buildbin.CreateRepository): every
// run that opens it then costs milliseconds instead of seconds of Argon2id
// in a race-detecting build. The config's create_if_missing finds it
// there, as on a machine whose repository was made before.
func newWorld(t *testing.T) *world {
	t.Helper()
	w := newWorldWithoutRepository(t)
	if err := buildbin.CreateRepository(w.repo, testPassword); err != nil {
		t.Fatal(err)
	}
	return w
}

// newWorldWithoutRepository is a world with nothing at the repository's
// path, for the tests of what creates a repository (create_if_missing,
// init) and of commands that must not create one.
func newWorldWithoutRepository(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{
		t:     t,
		dir:   dir,
		cfg:   filepath.Join(dir, "nightjar.toml"),
		state: filepath.Join(dir, "state", "state.db"),
		repo:  filepath.Join(dir, "repo"),
		pw:    filepath.Join(dir, "password"),
		home:  filepath.Join(dir, "home"),
	}
	if err := os.WriteFile(w.pw, []byte(testPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A temporary folder of its own: prune and retention runs sweep the
	// sort files that killed runs leave there, and must not find another
	// test's.
	if err := os.MkdirAll(filepath.Join(w.home, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	return w
}

// path is a path in the world's folder.
func (w *world) path(rel string) string { return filepath.Join(w.dir, rel) }

// expand replaces {{dir}}, {{state}}, {{repo}} and {{pw}} in a config text.
func (w *world) expand(text string) string {
	return strings.NewReplacer("{{dir}}", w.dir, "{{state}}", w.state, "{{repo}}", w.repo, "{{pw}}", w.pw).Replace(text)
}

// writeConfig writes the config file from text (see expand).
func (w *world) writeConfig(text string) {
	w.t.Helper()
	if err := os.WriteFile(w.cfg, []byte(w.expand(text)), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// header is the [scheduler] and [repository.main] part most tests share;
// schedulerExtra and repoExtra are added to their tables.
func header(schedulerExtra, repoExtra string) string {
	return `[scheduler]
state = "{{state}}"
` + schedulerExtra + `

[repository.main]
path = "{{repo}}"
password_file = "{{pw}}"
create_if_missing = true
` + repoExtra + "\n"
}

// job is a [[job]] table with one source per path. Its retention and
// verify are off unless extra sets them, so that tests of other features
// see only the runs they make (retention and verify runs have tests of
// their own).
func job(name, schedule, extra string, sources ...string) string {
	if !strings.Contains(extra, "retention") {
		extra += "\nretention = \"off\""
	}
	if !strings.Contains(extra, "verify") {
		extra += "\nverify = \"off\""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n[[job]]\nname = %q\nrepository = \"main\"\nschedule = %q\n%s\n", name, schedule, extra)
	for _, s := range sources {
		fmt.Fprintf(&b, "  [[job.source]]\n  path = %q\n", s)
	}
	return b.String()
}

// environ is the environment of every run: nothing is inherited but PATH,
// so that a NIGHTJAR_* variable of whoever runs the tests cannot leak in.
func (w *world) environ() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.home,
		"XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(w.home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(w.home, ".cache"),
		"TMPDIR=" + filepath.Join(w.home, "tmp"),
		"NIGHTJAR_REPOSITORY=" + w.repo, // for the engine commands only
		"NIGHTJAR_PASSWORD_FILE=" + w.pw,
		"TZ=UTC",
		"LC_ALL=C",
		buildbin.RaceEnv(),
	}
	return append(env, w.extra...)
}

// result is what one run of the binary did.
// result is one finished run of the binary.
type result = buildbin.Result

// command prepares a run of the binary.
func (w *world) command(ctx context.Context, args ...string) *exec.Cmd {
	bin := binPath
	if w.bin != "" {
		bin = w.bin
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = w.environ()
	cmd.Dir = w.dir
	return cmd
}

// run runs the binary to its end.
func (w *world) run(args ...string) result {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := w.command(ctx, args...)
	res, err := buildbin.Run(cmd, args)
	if err != nil {
		w.t.Fatalf("run nightjar %q: %v\n%s", args, err, res)
	}
	return res
}

// nj runs a scheduler command with --config of this world.
func (w *world) nj(args ...string) result {
	w.t.Helper()
	return w.run(append(args, "--config", w.cfg)...)
}

// must runs a scheduler command and fails the test unless it exits with code.
func (w *world) must(code int, args ...string) result {
	w.t.Helper()
	res := w.nj(args...)
	if res.Code != code {
		w.t.Fatalf("want exit %d\n%s", code, res)
	}
	return res
}

// proc is the binary running in the background.
type proc struct {
	cmd    *exec.Cmd
	args   []string
	Stdout bytes.Buffer
	Stderr bytes.Buffer
	start  time.Time
	done   chan struct{}
	err    error
	once   sync.Once
	res    result
}

// startNJ starts a scheduler command with --config in the background. The
// test's cleanup kills it if it is still running.
func (w *world) startNJ(args ...string) *proc {
	w.t.Helper()
	args = append(args, "--config", w.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	p := &proc{args: args, done: make(chan struct{})}
	p.cmd = w.command(ctx, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.Stdout, &p.Stderr
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		cancel()
		w.t.Fatalf("start nightjar %q: %v", args, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		cancel()
		close(p.done)
	}()
	w.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// signal sends sig to the process.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to nightjar %q: %v", sig, p.args, err)
	}
}

// wait waits for the process to end, at most timeout (a safety net:
// patience, or commandTimeout), and returns what it did.
func (p *proc) wait(t *testing.T, timeout time.Duration) result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("nightjar %q did not end within %s\n--- stdout:\n%s\n--- stderr:\n%s", p.args, timeout, p.Stdout.String(), p.Stderr.String())
	}
	p.once.Do(func() {
		p.res = result{Args: p.args, Stdout: p.Stdout.String(), Stderr: p.Stderr.String(), Elapsed: time.Since(p.start)}
		var exitErr *exec.ExitError
		switch {
		case p.err == nil:
		case errors.As(p.err, &exitErr) && exitErr.Exited():
			p.res.Code = exitErr.ExitCode()
		case errors.As(p.err, &exitErr):
			p.res.Code = -1 // killed by a signal
		default:
			t.Fatalf("nightjar %q: %v", p.args, p.err)
		}
	})
	return p.res
}

// decodeWhole decodes the whole stdout of res as exactly one JSON document.
func decodeWhole(t *testing.T, res result, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(res.Stdout))
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, res)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout holds more than one JSON document (next: %q, %v)\n%s", extra, err, res)
	}
}

// runRec is a run as runs --json, runs show --json and tick --json print it.
type runRec struct {
	ID           int64            `json:"id"`
	Job          string           `json:"job"`
	Kind         string           `json:"kind"`
	Trigger      string           `json:"trigger"`
	Attempt      int              `json:"attempt"`
	Status       string           `json:"status"`
	ScheduledAt  *time.Time       `json:"scheduled_at"`
	NotBefore    *time.Time       `json:"not_before"`
	StartedAt    *time.Time       `json:"started_at"`
	EndedAt      *time.Time       `json:"ended_at"`
	DelaySeconds *float64         `json:"delay_seconds"`
	HeldReason   string           `json:"held_reason"`
	ErrorClass   string           `json:"error_class"`
	ErrorCode    string           `json:"error_code"`
	Message      string           `json:"message"`
	MissedSlots  int              `json:"missed_slots"`
	BytesRead    int64            `json:"bytes_read"`
	Files        int64            `json:"files"`
	FilesSkipped int64            `json:"files_skipped"`
	Counters     map[string]int64 `json:"counters"`
	Skipped      []struct {
		Object string `json:"object"`
		Reason string `json:"reason"`
	} `json:"skipped"`
	Snapshots []struct {
		RepositoryID string `json:"repository_id"`
		SnapshotID   string `json:"snapshot_id"`
		Source       string `json:"source"`
	} `json:"snapshots"`
}

// passRec is what tick --json prints.
type passRec struct {
	Claimed   []runRec `json:"claimed"`
	Started   []runRec `json:"started"`
	Finished  []runRec `json:"finished"`
	Requeued  []runRec `json:"requeued"`
	Reclaimed []runRec `json:"reclaimed"`
	Lost      []runRec `json:"lost"`
	Held      []struct {
		RunID  int64  `json:"run_id"`
		Job    string `json:"job"`
		Reason string `json:"reason"`
	} `json:"held"`
	Missed   []json.RawMessage `json:"missed"`
	Warnings []string          `json:"warnings"`
	Shutdown bool              `json:"shutdown"`
}

// jobRec is a job as job list --json and job show --json print it.
type jobRec struct {
	Name      string   `json:"name"`
	Schedule  string   `json:"schedule"`
	Paused    bool     `json:"paused"`
	NextRun   *string  `json:"next_run"`
	State     string   `json:"state"`
	DependsOn []string `json:"depends_on"`
	Active    *runRec  `json:"active_run"`
	LastRun   *runRec  `json:"last_run"`
}

// snapRec is a snapshot as snapshots --json prints it.
type snapRec struct {
	ID    string   `json:"id"`
	Paths []string `json:"paths"`
	Tags  []string `json:"tags"`
	Job   string   `json:"job"`
	Run   int64    `json:"run"`
}

// snapshotIDPattern is the kind of ID every snapshot has, whether the
// command line or a scheduled run made it.
var snapshotIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// tick runs one pass with --json and returns what it printed; the exit
// code must be code.
func (w *world) tick(code int, extra ...string) passRec {
	w.t.Helper()
	res := w.must(code, append([]string{"tick", "--json"}, extra...)...)
	var p passRec
	decodeWhole(w.t, res, &p)
	return p
}

// runs lists every run, newest first.
func (w *world) runs() []runRec {
	w.t.Helper()
	res := w.must(exitOK, "runs", "--json", "--limit", "0")
	var runs []runRec
	decodeWhole(w.t, res, &runs)
	return runs
}

// runsOf lists the runs of one job, oldest first.
func (w *world) runsOf(name string) []runRec {
	w.t.Helper()
	var out []runRec
	all := w.runs()
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Job == name {
			out = append(out, all[i])
		}
	}
	return out
}

// showJob runs job show --json, with --at when at is set.
func (w *world) showJob(name string, at time.Time) jobRec {
	w.t.Helper()
	args := []string{"job", "show", name, "--json"}
	if !at.IsZero() {
		args = append(args, "--at", at.Format(time.RFC3339Nano))
	}
	res := w.must(exitOK, args...)
	var j jobRec
	decodeWhole(w.t, res, &j)
	return j
}

// snapshots lists the repository's snapshots through the engine.
func (w *world) snapshots() []snapRec {
	w.t.Helper()
	res := w.run("snapshots", "--json", "-r", w.repo)
	if res.Code != exitOK {
		w.t.Fatalf("snapshots failed\n%s", res)
	}
	var snaps []snapRec
	decodeWhole(w.t, res, &snaps)
	return snaps
}

// runByID finds a run in a listing.
func runByID(t *testing.T, runs []runRec, id int64) runRec {
	t.Helper()
	for _, r := range runs {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no run %d in %+v", id, runs)
	return runRec{}
}

// eventually polls cond every interval until it holds or timeout passes.
func eventually(t *testing.T, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(interval)
	}
}

// at parses an RFC3339 time for a test.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// dirEntries lists the names of a folder; a missing folder is empty.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
