//go:build linux

package jobs

import (
	"cmp"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/restore"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// script writes an executable /bin/sh script into dir and returns its argv.
func script(t *testing.T, dir, name, body string) []string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{p}
}

// hookWorld is a job with one source folder, a repository in memory and a
// log every hook appends a line to.
type hookWorld struct {
	dir, src, log string
	be            repo.Backend
	r             *repo.Repository // for the test's own reading; runs open their own
	opened        int
}

func newHookWorld(t *testing.T) *hookWorld {
	w := &hookWorld{dir: t.TempDir()}
	w.src = filepath.Join(w.dir, "src")
	w.log = filepath.Join(w.dir, "hooks.log")
	if err := os.MkdirAll(w.src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.src, "data"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.be = memory.New()
	w.r = repotest.New(t, w.be)
	return w
}

// logger is a hook that appends "HOOK STATUS CODE" to the log, then exits
// with code.
func (w *hookWorld) logger(t *testing.T, name string, code int) []string {
	return script(t, w.dir, name, `echo "$NIGHTJAR_HOOK $NIGHTJAR_STATUS $NIGHTJAR_ERROR_CODE" >> "`+w.log+`"
echo "output of `+name+`"
echo "stderr of `+name+`" >&2
exit `+strconv.Itoa(code))
}

func (w *hookWorld) executor(hooks Hooks, sources ...SourceSpec) *Executor {
	if sources == nil {
		sources = []SourceSpec{{Path: w.src}}
	}
	return &Executor{
		Open: func(ctx context.Context, _ string) (*repo.Repository, error) {
			w.opened++
			return repo.Open(ctx, w.be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
		},
		Sources: func(string) ([]SourceSpec, []string) { return sources, nil },
		Hooks:   func(string) Hooks { return hooks },
		Environ: ScrubEnviron([]string{"PATH=" + os.Getenv("PATH"), "KEEP=kept", "NIGHTJAR_PASSWORD_FILE=/secret/pw",
			"NIGHTJAR_PASSWORD=hunter2", "REPO_PW=hunter2", "NIGHTJAR_CONFIG=/etc/nightjar.toml"}, "REPO_PW"),
	}
}

func (w *hookWorld) lines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(w.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	return lines
}

var hookJob = pass.JobDef{Name: "db", Repository: "main"}

func execute(ctx context.Context, e *Executor) (pass.Result, error) {
	return e.Execute(ctx, hookJob, pass.Run{ID: 41, Kind: pass.KindBackup, Attempt: 2}, func(pass.Progress) {})
}

// Each outcome of a backup run calls the hooks it promises, in order, and
// ends with the status the pass records.
func TestHookOutcomes(t *testing.T) {
	cases := []struct {
		name       string
		hooks      func(t *testing.T, w *hookWorld) Hooks
		missingSrc bool
		wantLog    []string
		wantStatus string
		wantCode   string
		wantOutput []string
		snapshots  int
	}{
		{
			name: "all hooks succeed",
			hooks: func(t *testing.T, w *hookWorld) Hooks {
				return Hooks{Before: w.logger(t, "before", 0), After: w.logger(t, "after", 0), OnSuccess: w.logger(t, "ok", 0),
					OnFailure: w.logger(t, "fail", 0), OnPartial: w.logger(t, "partial", 0)}
			},
			wantLog:    []string{"before", "after succeeded", "on_success succeeded"},
			wantStatus: pass.StatusSucceeded,
			wantOutput: []string{"== hook before: ok\n", "output of before\n", "stderr of before\n", "== hook after: ok\n", "== hook on_success: ok\n"},
			snapshots:  1,
		},
		{
			name: "a failing before hook fails the run and nothing is backed up",
			hooks: func(t *testing.T, w *hookWorld) Hooks {
				return Hooks{Before: w.logger(t, "before", 3), After: w.logger(t, "after", 0), OnFailure: w.logger(t, "fail", 0)}
			},
			wantLog:    []string{"before", "on_failure failed HOOK_FAILED"},
			wantStatus: pass.StatusFailed,
			wantCode:   CodeHookFailed,
			wantOutput: []string{"== hook before: exit status 3\n", "output of before\n"},
		},
		{
			name: "a failing after hook makes a succeeded run partial",
			hooks: func(t *testing.T, w *hookWorld) Hooks {
				return Hooks{After: w.logger(t, "after", 1), OnSuccess: w.logger(t, "ok", 0), OnPartial: w.logger(t, "partial", 0)}
			},
			wantLog:    []string{"after succeeded", "on_partial partial_failure OBJECTS_SKIPPED"},
			wantStatus: pass.StatusPartialFailure,
			wantCode:   pass.CodeObjectsSkipped,
			wantOutput: []string{"== hook after: exit status 1\n"},
			snapshots:  1,
		},
		{
			name: "a failing after hook leaves a failed run failed",
			hooks: func(t *testing.T, w *hookWorld) Hooks {
				return Hooks{After: w.logger(t, "after", 1), OnFailure: w.logger(t, "fail", 0)}
			},
			missingSrc: true,
			wantLog:    []string{"after failed SOURCE_MISSING", "on_failure failed SOURCE_MISSING"},
			wantStatus: pass.StatusFailed,
			wantCode:   CodeSourceMissing,
		},
		{
			name: "a failing on_success hook leaves the status and says so",
			hooks: func(t *testing.T, w *hookWorld) Hooks {
				return Hooks{OnSuccess: w.logger(t, "ok", 4)}
			},
			wantLog:    []string{"on_success succeeded"},
			wantStatus: pass.StatusSucceeded,
			wantOutput: []string{"== hook on_success: exit status 4\n", "warning: hook on_success failed; the run's status stays succeeded\n"},
			snapshots:  1,
		},
		{
			name: "a before hook that cannot start fails the run",
			hooks: func(t *testing.T, w *hookWorld) Hooks {
				return Hooks{Before: []string{filepath.Join(w.dir, "no-such-hook")}}
			},
			wantStatus: pass.StatusFailed,
			wantCode:   CodeHookFailed,
			wantOutput: []string{"== hook before: fork/exec "},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newHookWorld(t)
			src := SourceSpec{Path: w.src}
			if c.missingSrc {
				src.Path = filepath.Join(w.dir, "missing")
			}
			res, err := execute(context.Background(), w.executor(c.hooks(t, w), src))
			if got := w.lines(t); strings.Join(got, "\n") != strings.Join(c.wantLog, "\n") {
				t.Errorf("hooks ran %q, want %q", got, c.wantLog)
			}
			v := pass.Judge(res, err)
			if v.Status != c.wantStatus || v.Code != c.wantCode {
				t.Errorf("status %s code %s (%s), want %s %s", v.Status, v.Code, v.Message, c.wantStatus, c.wantCode)
			}
			for _, want := range c.wantOutput {
				if !strings.Contains(res.Output, want) {
					t.Errorf("output lacks %q:\n%s", want, res.Output)
				}
			}
			if len(res.Snapshots) != c.snapshots {
				t.Errorf("%d snapshots, want %d", len(res.Snapshots), c.snapshots)
			}
			if c.wantCode == CodeHookFailed {
				if w.opened != 0 {
					t.Error("the repository was opened after the before hook failed")
				}
				if v.Class != pass.ClassSource || !strings.Contains(v.Message, "before hook failed") {
					t.Errorf("class %s message %q: want class source naming the before hook", v.Class, v.Message)
				}
			}
			if c.wantCode == CodeHookFailed && strings.Contains(c.name, "failing") && !strings.Contains(v.Message, "output of before") {
				t.Errorf("message %q does not quote the hook's output", v.Message)
			}
		})
	}
}

// Hooks get the run in their environment and the scheduler's own, but no
// password, and what the before hook writes is in the backup.
func TestHookEnvironment(t *testing.T) {
	w := newHookWorld(t)
	envFile := func(name string) string { return filepath.Join(w.dir, name+".env") }
	dump := func(name string) []string {
		return script(t, w.dir, name, `env > "`+envFile(name)+`"`)
	}
	before := script(t, w.dir, "before", `echo fresh > "`+filepath.Join(w.src, "made-by-before")+`"; env > "`+envFile("before")+`"`)
	res, err := execute(context.Background(), w.executor(Hooks{Before: before, After: dump("after"), OnSuccess: dump("ok")}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Figures.Files != 2 {
		t.Errorf("%d files backed up, want 2: the before hook's file is in the backup", res.Figures.Files)
	}
	read := func(name string) map[string]string {
		data, err := os.ReadFile(envFile(name))
		if err != nil {
			t.Fatal(err)
		}
		vars := map[string]string{}
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				vars[k] = v
			}
		}
		return vars
	}
	common := map[string]string{"NIGHTJAR_JOB": "db", "NIGHTJAR_RUN_ID": "41", "NIGHTJAR_RUN_KIND": "backup",
		"NIGHTJAR_REPOSITORY": "main", "NIGHTJAR_ATTEMPT": "2", "KEEP": "kept", "NIGHTJAR_CONFIG": "/etc/nightjar.toml"}
	for _, hook := range []string{"before", "after", "ok"} {
		vars := read(hook)
		for k, want := range common {
			if vars[k] != want {
				t.Errorf("%s hook: %s=%q, want %q", hook, k, vars[k], want)
			}
		}
		for _, secret := range []string{"NIGHTJAR_PASSWORD_FILE", "NIGHTJAR_PASSWORD", "REPO_PW"} {
			if _, ok := vars[secret]; ok {
				t.Errorf("%s hook was given %s", hook, secret)
			}
		}
		for k, v := range vars {
			if strings.Contains(v, "hunter2") || strings.Contains(v, "/secret/pw") {
				t.Errorf("%s hook was given a password in %s", hook, k)
			}
		}
	}
	if vars := read("before"); vars["NIGHTJAR_HOOK"] != "before" || vars["NIGHTJAR_STATUS"] != "" {
		t.Errorf("before hook: NIGHTJAR_HOOK=%q NIGHTJAR_STATUS=%q", vars["NIGHTJAR_HOOK"], vars["NIGHTJAR_STATUS"])
	}
	for _, hook := range []string{"after", "ok"} {
		vars := read(hook)
		if vars["NIGHTJAR_STATUS"] != pass.StatusSucceeded || vars["NIGHTJAR_SNAPSHOT_IDS"] != res.Snapshots[0].SnapshotID {
			t.Errorf("%s hook: NIGHTJAR_STATUS=%q NIGHTJAR_SNAPSHOT_IDS=%q, want succeeded and %s",
				hook, vars["NIGHTJAR_STATUS"], vars["NIGHTJAR_SNAPSHOT_IDS"], res.Snapshots[0].SnapshotID)
		}
	}
	if vars := read("ok"); vars["NIGHTJAR_HOOK"] != "on_success" {
		t.Errorf("on_success hook: NIGHTJAR_HOOK=%q", vars["NIGHTJAR_HOOK"])
	}
}

// fifo makes a named pipe in dir.
func fifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// endsSoon reports whether process pid ends (or has ended) within 20
// seconds: it waits for the event, the pidfd becoming readable, not for
// a time.
func endsSoon(t *testing.T, pid int) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 20000)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd of %d: %v", pid, err)
		}
		return n > 0
	}
}

// blocker is a hook that starts a child blocked on reading a FIFO nobody
// writes, tells its pid through the FIFO ready, and waits for it: only a
// signal to the whole process group ends both.
func blocker(t *testing.T, dir, ready string) []string {
	block := fifo(t, dir, "block")
	return script(t, dir, "blocker", `cat "`+block+`" &
echo $! > "`+ready+`"
wait`)
}

// Cancelling a run kills its running hook with the hook's whole process
// group; a cancelled before hook is a before hook that failed, so no
// other hook runs.
func TestCancelKillsTheRunningHookAndItsChildren(t *testing.T) {
	w := newHookWorld(t)
	ready := fifo(t, w.dir, "ready")
	e := w.executor(Hooks{Before: blocker(t, w.dir, ready), After: w.logger(t, "after", 0), OnFailure: w.logger(t, "fail", 0)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res pass.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := execute(ctx, e)
		done <- outcome{res, err}
	}()
	pidText, err := os.ReadFile(ready) // blocks until the hook has started its child
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	o := <-done
	if v := pass.Judge(o.res, o.err); v.Status != pass.StatusCancelled {
		t.Errorf("status %s (%s), want cancelled", v.Status, v.Message)
	}
	if !endsSoon(t, child) {
		t.Errorf("the hook's child %d still runs after the cancellation", child)
	}
	if got := w.lines(t); len(got) != 0 {
		t.Errorf("hooks after a cancelled before hook: %q, want none (after undoes a before that ran)", got)
	}
	if w.opened != 0 {
		t.Error("the repository was opened after the before hook was cancelled")
	}
}

// A before hook past its timeout is stopped with its process group and
// fails the run with HOOK_TIMEOUT. The hook cannot end by itself: only the
// timeout ends it, which passes once the hook has told its child's pid.
func TestBeforeHookTimeout(t *testing.T) {
	w := newHookWorld(t)
	ready := fifo(t, w.dir, "ready")
	block := fifo(t, w.dir, "block")
	before := script(t, w.dir, "blocker", `echo "dumping"
cat "`+block+`" &
echo $! > "`+ready+`"
wait`)
	fire, _ := fakeTimeout(t, 300*time.Millisecond)
	type outcome struct {
		res pass.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := execute(context.Background(), w.executor(Hooks{Before: before, Timeout: 300 * time.Millisecond}))
		done <- outcome{res, err}
	}()
	pidText, err := os.ReadFile(ready) // blocks until the hook has started its child
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatal(err)
	}
	fire <- time.Now()
	o := <-done
	var ce *pass.ClassError
	if !errors.As(o.err, &ce) || ce.Class != pass.ClassSource || ce.Code != CodeHookTimeout {
		t.Fatalf("err = %v, want class source, code %s", o.err, CodeHookTimeout)
	}
	if !strings.Contains(o.err.Error(), "before hook did not end within 300ms and was stopped") {
		t.Errorf("message %q", o.err)
	}
	if !strings.Contains(o.res.Output, "== hook before: did not end within 300ms and was stopped") {
		t.Errorf("output:\n%s", o.res.Output)
	}
	if !endsSoon(t, child) {
		t.Errorf("the hook's child %d still runs after the timeout", child)
	}
}

// held is a hook that logs as logger does, tells ready that it runs, and
// then waits until the test writes to release.
func (w *hookWorld) held(t *testing.T, name, ready, release string) []string {
	return script(t, w.dir, name, `echo "$NIGHTJAR_HOOK $NIGHTJAR_STATUS $NIGHTJAR_ERROR_CODE" >> "`+w.log+`"
echo running > "`+ready+`"
cat "`+release+`" > /dev/null`)
}

// The hooks that follow a run's end agree with what the pass records
// (pass.StoppedStatus): a shutdown after the backup's work was done
// changes nothing (the pass records the judged status, so on_success
// runs); a user's cancellation, or a shutdown that interrupted the backup,
// runs no on_* hook, and after is told cancelled or interrupted.
func TestStatusHooksAgreeWithThePass(t *testing.T) {
	far := &pass.Shutdown{Deadline: time.Now().Add(time.Hour)}
	cases := []struct {
		name        string
		cause       error
		holdSource  bool // the stop comes while the command source runs; else while after runs
		wantLog     []string
		wantStopped string // pass.StoppedStatus of the run
		wantStatus  string // what the pass records
	}{
		{
			name:       "a shutdown while after runs, the backup done",
			cause:      far,
			wantLog:    []string{"after succeeded", "on_success succeeded"},
			wantStatus: pass.StatusSucceeded,
		},
		{
			name:        "a user's cancellation while after runs",
			cause:       pass.ErrCancelRequested,
			wantLog:     []string{"after succeeded"},
			wantStopped: pass.StatusCancelled,
			wantStatus:  pass.StatusCancelled,
		},
		{
			name:        "a shutdown that interrupts the backup",
			cause:       far,
			holdSource:  true,
			wantLog:     []string{"after interrupted INTERRUPTED"},
			wantStopped: pass.StatusInterrupted,
			wantStatus:  pass.StatusInterrupted,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newHookWorld(t)
			ready, release := fifo(t, w.dir, "ready"), fifo(t, w.dir, "release")
			hooks := Hooks{After: w.logger(t, "after", 0), OnSuccess: w.logger(t, "ok", 0), OnFailure: w.logger(t, "fail", 0),
				OnPartial: w.logger(t, "partial", 0)}
			src := SourceSpec{Path: w.src}
			if c.holdSource {
				src = SourceSpec{Path: backup.StreamPath("db.sql"), Command: script(t, w.dir, "dump.sh", `printf 'partial dump'
echo running > "`+ready+`"
cat "`+release+`"`)}
			} else {
				hooks.After = w.held(t, "after", ready, release)
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			type outcome struct {
				res pass.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := execute(ctx, w.executor(hooks, src))
				done <- outcome{res, err}
			}()
			if _, err := os.ReadFile(ready); err != nil {
				t.Fatal(err)
			}
			cancel(c.cause)
			if !c.holdSource {
				// The after hook is not stopped by the cancellation: it
				// ends when released.
				if err := os.WriteFile(release, []byte("go"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			o := <-done
			if got := w.lines(t); strings.Join(got, "\n") != strings.Join(c.wantLog, "\n") {
				t.Errorf("hooks ran %q, want %q", got, c.wantLog)
			}
			stopped := pass.StoppedStatus(ctx, o.err)
			if stopped != c.wantStopped {
				t.Errorf("StoppedStatus %q, want %q", stopped, c.wantStopped)
			}
			if status := cmp.Or(stopped, pass.Judge(o.res, o.err).Status); status != c.wantStatus {
				t.Errorf("the pass records %s, want %s", status, c.wantStatus)
			}
		})
	}
}

// An after hook that ignores SIGTERM is stopped by the deadline of the
// shutdown that stopped its run, or of one that comes while it runs, so
// that the run is recorded with its output before the pass stops waiting.
func TestAfterHookEndsByTheShutdownDeadline(t *testing.T) {
	t.Run("shutdown during the backup", func(t *testing.T) {
		w := newHookWorld(t)
		ready, block := fifo(t, w.dir, "ready"), fifo(t, w.dir, "block")
		after := script(t, w.dir, "after", `trap '' TERM
cat "`+block+`"`)
		dump := script(t, w.dir, "dump.sh", `echo running > "`+ready+`"
cat "`+block+`"`)
		e := w.executor(Hooks{After: after, Timeout: time.Hour}, SourceSpec{Path: backup.StreamPath("db.sql"), Command: dump})
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		done := make(chan struct {
			res pass.Result
			err error
		}, 1)
		go func() {
			res, err := execute(ctx, e)
			done <- struct {
				res pass.Result
				err error
			}{res, err}
		}()
		if _, err := os.ReadFile(ready); err != nil {
			t.Fatal(err)
		}
		// The deadline has passed already: the after hook gets no grace.
		cancel(&pass.Shutdown{Deadline: time.Now()})
		o := <-done
		if !strings.Contains(o.res.Output, "== hook after: stopped, as nightjar is shutting down") {
			t.Errorf("output does not say the after hook was stopped by the shutdown:\n%s", o.res.Output)
		}
		if got := pass.StoppedStatus(ctx, o.err); got != pass.StatusInterrupted {
			t.Errorf("StoppedStatus %q, want interrupted", got)
		}
	})
	t.Run("shutdown while the after hook runs", func(t *testing.T) {
		w := newHookWorld(t)
		running, block := fifo(t, w.dir, "running"), fifo(t, w.dir, "block")
		after := script(t, w.dir, "after", `trap '' TERM
echo $$ > "`+running+`"
cat "`+block+`"`)
		e := w.executor(Hooks{After: after, Timeout: time.Hour})
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		done := make(chan pass.Result, 1)
		go func() {
			res, _ := execute(ctx, e)
			done <- res
		}()
		pidText, err := os.ReadFile(running) // the after hook runs: the backup is done
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
		if err != nil {
			t.Fatalf("after hook's pid %q: %v", pidText, err)
		}
		cancel(&pass.Shutdown{Deadline: time.Now()})
		res := <-done
		if !endsSoon(t, pid) {
			t.Errorf("the after hook %d still runs", pid)
		}
		if !strings.Contains(res.Output, "== hook after: stopped, as nightjar is shutting down") {
			t.Errorf("output does not say the after hook was stopped by the shutdown:\n%s", res.Output)
		}
		if v := pass.Judge(res, nil); v.Status != pass.StatusPartialFailure {
			t.Errorf("a backup whose after hook a shutdown stopped is %s, want partial_failure (the hook did not finish)", v.Status)
		}
	})
}

// Hooks and command sources run in Hooks.Dir (cmd: the config file's
// folder), so that a relative program is found there whatever folder
// nightjar runs in.
func TestHooksAndCommandSourcesRunInTheirFolder(t *testing.T) {
	w := newHookWorld(t)
	if cwd, _ := os.Getwd(); cwd == w.dir {
		t.Fatal("the test runs in the hooks' folder: it would prove nothing")
	}
	w.logger(t, "before.sh", 0)
	script(t, w.dir, "dump.sh", `pwd`)
	res, err := execute(context.Background(), w.executor(Hooks{Before: []string{"./before.sh"}, Dir: w.dir},
		SourceSpec{Path: backup.StreamPath("db.sql"), Command: []string{"./dump.sh"}}))
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Output)
	}
	if got := w.lines(t); strings.Join(got, ",") != "before" {
		t.Errorf("hooks ran %q, want before", got)
	}
	if len(res.Snapshots) != 1 {
		t.Fatalf("snapshots %+v: want the command source's", res.Snapshots)
	}
	r, err := repo.Open(context.Background(), w.be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	snap, err := r.FindSnapshot(context.Background(), res.Snapshots[0].SnapshotID, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	if _, err := restore.Run(context.Background(), r, snap, restore.Options{Target: target}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(target, "db.sql")); err != nil || strings.TrimSpace(string(got)) != w.dir {
		t.Errorf("the command source ran in %q (%v), want %s", got, err, w.dir)
	}
}

// Each hook keeps the end of its output, saying how much was cut.
func TestHookOutputIsBounded(t *testing.T) {
	w := newHookWorld(t)
	before := script(t, w.dir, "loud", `head -c 200000 /dev/zero | tr '\0' 'x'; echo; echo "last line"`)
	res, err := execute(context.Background(), w.executor(Hooks{Before: before}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output) > MaxCommandOutput+200 {
		t.Errorf("output of %d bytes kept, want at most about %d", len(res.Output), MaxCommandOutput)
	}
	if !strings.Contains(res.Output, "bytes cut\n") || !strings.HasSuffix(res.Output, "last line\n") {
		t.Errorf("output does not say what was cut or lost its end: %q...%q", res.Output[:80], res.Output[len(res.Output)-20:])
	}
}

func TestScrubEnviron(t *testing.T) {
	got := ScrubEnviron([]string{"A=1", "NIGHTJAR_PASSWORD=x", "NIGHTJAR_PASSWORD_COMMAND=pass show", "MY_PW=y", "NIGHTJAR_CONFIG=c"}, "MY_PW")
	if strings.Join(got, " ") != "A=1 NIGHTJAR_CONFIG=c" {
		t.Errorf("ScrubEnviron = %q", got)
	}
}
