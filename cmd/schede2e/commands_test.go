//go:build linux

package schede2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/internal/buildbin"
)

// job run queues (and says so), a second job run is a conflict, runs cancel
// cancels a queued run, job run --wait runs it; a paused job is not
// claimed when due, and job resume computes its next run from then on.
func TestJobRunCancelPauseResume(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutRepository(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(header("", "") + job("j", "daily 02:00", "", src))

	// The first half runs on the real clock.
	res := w.must(exitOK, "job", "run", "j")
	if !strings.Contains(res.Stdout, "queued") || strings.Contains(res.Stdout, "succeeded") {
		t.Errorf("job run must say that the run is queued, not that it ran:\n%s", res)
	}
	runs := w.runs()
	if len(runs) != 1 || runs[0].Status != "queued" || runs[0].Trigger != "manual" {
		t.Fatalf("after job run: %+v, want one queued manual run", runs)
	}
	first := runs[0]
	if _, err := os.Stat(w.repo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("job run without --wait touched the repository (%v)", err)
	}

	res = w.must(exitConflict, "job", "run", "j")
	if !strings.Contains(res.Stderr, "active") {
		t.Errorf("the conflict does not say why:\n%s", res)
	}
	if n := len(w.runs()); n != 1 {
		t.Errorf("a refused job run left %d runs, want 1", n)
	}

	res = w.must(exitOK, "job", "explain", "j")
	if !strings.Contains(res.Stdout, fmt.Sprintf("run %d", first.ID)) {
		t.Errorf("job explain does not mention the queued run %d:\n%s", first.ID, res)
	}

	w.must(exitOK, "runs", "cancel", strconv.FormatInt(first.ID, 10))
	if r := runByID(t, w.runs(), first.ID); r.Status != "cancelled" || r.StartedAt != nil {
		t.Errorf("cancelled queued run: status %s started %v, want cancelled, never started", r.Status, r.StartedAt)
	}

	res = w.must(exitOK, "job", "run", "j", "--wait")
	if !strings.Contains(res.Stdout, "succeeded") {
		t.Errorf("job run --wait must say how the run ended:\n%s", res)
	}
	runs = w.runsOf("j")
	if len(runs) != 2 || runs[1].Status != "succeeded" || runs[1].Trigger != "manual" || len(runs[1].Snapshots) != 1 {
		t.Fatalf("after job run --wait: %+v, want a second, succeeded manual run with a snapshot", runs)
	}

	shown := w.showJob("j", time.Time{})
	if shown.NextRun == nil {
		t.Fatal("job show gives no next run for a daily job")
	}
	next, err := time.Parse(time.RFC3339, *shown.NextRun)
	if err != nil {
		t.Fatal(err)
	}
	if next.Hour() != 2 || next.Minute() != 0 || !next.After(time.Now()) || next.After(time.Now().Add(24*time.Hour)) {
		t.Fatalf("next run %s: want the next 02:00 UTC", rfc(next))
	}

	// --at is refused on a state database that passes on the real clock
	// drove: it would write runs and next-run times dated at another time.
	res = w.must(exitUsage, "tick", "--at", rfc(next.Add(30*time.Second)))
	if !strings.Contains(res.Stderr, "--at refused") || strings.Count(strings.TrimSpace(res.Stderr), "\n") != 0 || res.Stdout != "" {
		t.Errorf("tick --at on a live state database: want one line saying --at is refused:\n%s", res)
	}

	// From here on the clock is simulated, on a state database of its own
	// where the job is first seen an hour before its next slot.
	w.state = filepath.Join(w.dir, "state", "simulated.db")
	w.writeConfig(header("", "") + job("j", "daily 02:00", "", src))
	w.tick(exitOK, "--at", rfc(next.Add(-time.Hour)))
	w.must(exitOK, "job", "pause", "j")
	p := w.tick(exitOK, "--at", rfc(next.Add(30*time.Second)))
	if len(p.Claimed)+len(p.Started)+len(p.Finished) != 0 {
		t.Errorf("a paused job ran at its slot: %+v", p)
	}
	if n := len(w.runs()); n != 0 {
		t.Errorf("%d runs after the paused slot, want none", n)
	}
	res = w.must(exitOK, "job", "explain", "j", "--at", rfc(next.Add(40*time.Second)))
	if !strings.Contains(res.Stdout, "paused") {
		t.Errorf("job explain does not say the job is paused:\n%s", res)
	}
	if j := w.showJob("j", next.Add(50*time.Second)); !j.Paused || j.State != "paused" {
		t.Errorf("job show of a paused job: paused %v state %s", j.Paused, j.State)
	}

	// Run by hand, a paused job is refused in one line that says how to
	// go on, and nothing is queued; --force queues it once, audited as
	// forced, and the job stays paused.
	res = w.must(exitConflict, "job", "run", "j")
	if line := strings.TrimSpace(res.Stderr); strings.Contains(line, "\n") || !strings.Contains(line, "paused") ||
		!strings.Contains(line, "job resume j") || !strings.Contains(line, "--force") || res.Stdout != "" {
		t.Errorf("job run of a paused job: want one line saying it is paused and how to resume:\n%s", res)
	}
	if n := len(w.runs()); n != 0 {
		t.Errorf("%d runs after a refused job run, want none", n)
	}
	// So is a drill by hand.
	res = w.must(exitConflict, "drill", "j")
	if line := strings.TrimSpace(res.Stderr); strings.Contains(line, "\n") || !strings.Contains(line, "paused") ||
		!strings.Contains(line, "job resume j") || !strings.Contains(line, "drill --force j") || res.Stdout != "" {
		t.Errorf("drill of a paused job: want one line saying it is paused and how to go on:\n%s", res)
	}
	if n := len(w.runs()); n != 0 {
		t.Errorf("%d runs after a refused drill, want none", n)
	}
	res = w.must(exitOK, "job", "run", "j", "--force")
	forced := w.runs()
	if len(forced) != 1 || forced[0].Status != "queued" || forced[0].Trigger != "manual" {
		t.Fatalf("job run --force of a paused job: runs %+v, want one queued manual run", forced)
	}
	var audit []struct {
		Action string `json:"action"`
		Detail string `json:"detail"`
	}
	decodeWhole(t, w.must(exitOK, "audit", "--json", "--job", "j"), &audit)
	if len(audit) == 0 || audit[0].Action != "trigger" || !strings.Contains(audit[0].Detail, "forced although the job is paused") {
		t.Errorf("audit after job run --force: %+v, want the trigger recorded as forced", audit)
	}
	if j := w.showJob("j", next.Add(55*time.Second)); !j.Paused {
		t.Error("job run --force resumed the job; it must stay paused")
	}
	w.must(exitOK, "runs", "cancel", strconv.FormatInt(forced[0].ID, 10))

	// Resumed three days and ten hours later: the next run is the next 02:00
	// after the resume, not the slot missed while paused.
	resumed := next.Add(3*24*time.Hour + 10*time.Hour)
	want := next.Add(4 * 24 * time.Hour)
	w.must(exitOK, "job", "resume", "j", "--at", rfc(resumed))
	j := w.showJob("j", resumed.Add(time.Second))
	if j.Paused || j.NextRun == nil || *j.NextRun != rfc(want) {
		t.Errorf("after resume: paused %v, next run %v; want %s", j.Paused, j.NextRun, rfc(want))
	}
	p = w.tick(exitOK, "--at", rfc(resumed.Add(10*time.Second)))
	if len(p.Claimed)+len(p.Started)+len(p.Finished) != 0 {
		t.Errorf("the resumed job fired at once: %+v", p)
	}
	res = w.must(exitOK, "job", "explain", "j", "--at", rfc(resumed.Add(20*time.Second)))
	if !strings.Contains(res.Stdout, "next run") || !strings.Contains(res.Stdout, want.Format("2006-01-02 15:04")) {
		t.Errorf("job explain does not give the next run %s:\n%s", rfc(want), res)
	}

	// And it does fire at that slot.
	p = w.tick(exitOK, "--at", rfc(want.Add(30*time.Second)))
	if len(p.Finished) != 1 || p.Finished[0].Trigger != "schedule" || p.Finished[0].Status != "succeeded" {
		t.Errorf("at its next slot the resumed job ran %+v, want one succeeded scheduled run", p.Finished)
	}
}

// job run --wait whose run another nightjar process admits first waits for
// that process to end the run and reports how it ended: a script doing
// "job run X --wait && next" must not go on while the backup runs. Both
// processes run the binary built with the tag crashtest, and the test
// orders them by events: the --wait process is held at the hold point
// job-run-queued (between queueing the run and its own pass) while a tick
// admits the run; the tick is held in its run's password command (which
// reads a FIFO the test writes) while the --wait process's pass finds the
// run under way and says it waits; then the tick goes on and ends the run.
func TestJobRunWaitWaitsForARunAnotherProcessAdmitted(t *testing.T) {
	t.Parallel()
	bin, cleanup, err := buildbin.BuildTagged("crashtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	w := newWorld(t)
	w.bin = bin
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRandomFile(t, filepath.Join(src, "blob"), 11, 100_000)
	fifo := w.path("password.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(`[scheduler]
state = "{{state}}"

[repository.main]
path = "{{repo}}"
password_command = "cat {{dir}}/password.fifo"
create_if_missing = true
` + job("j", "manual", "", src))
	// Short folders of their own: a socket's path is at most 108 bytes.
	sockets, err := os.MkdirTemp("", "njhp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockets) })
	listen := func(name string) (net.Listener, string) {
		path := filepath.Join(sockets, name)
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln, path
	}
	holdLn, holdSocket := listen("h")

	// The --wait process, in text mode: its "waiting" line is the event
	// that its pass has found the run under way.
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	t.Cleanup(cancel)
	waiter := w.command(ctx, "job", "run", "j", "--wait", "--config", w.cfg)
	waiter.Env = append(waiter.Env, "NIGHTJAR_HOLDPOINT=job-run-queued:"+holdSocket)
	stdout, err := waiter.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var waiterErr strings.Builder
	waiter.Stderr = &waiterErr
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	lines, waiterOut := make(chan string, 100), make(chan struct{})
	go func() {
		defer close(waiterOut)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = waiter.Process.Kill()
			<-waiterOut
			_ = waiter.Wait()
		}
	})

	hold, announced := acceptAnnounced(t, holdLn, waiterOut, "the job run --wait process at its hold point")
	if announced != "hold job-run-queued" {
		t.Fatalf("the hold point announced %q, want %q", announced, "hold job-run-queued")
	}
	runs := w.runs()
	if len(runs) != 1 || runs[0].Status != "queued" {
		t.Fatalf("at the hold point: runs %+v, want one queued run", runs)
	}
	id := runs[0].ID

	ticker := w.startNJ("tick", "--json")
	// Opening a FIFO to write blocks until its reader opens it: the
	// tick's password command.
	opened := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
		}
		opened <- f
	}()
	var password *os.File
	select {
	case password = <-opened:
		t.Cleanup(func() { password.Close() })
	case <-ticker.done:
		// A reader of its own ends the open above.
		if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-opened
			f.Close()
		}
		t.Fatalf("the tick ended before it read the password\n%s", ticker.wait(t, patience))
	}
	if running := w.runs()[0]; running.ID != id || running.Status != "running" {
		t.Fatalf("with the tick held in the password command: run %+v, want run %d running", running, id)
	}

	if err := hold.Close(); err != nil { // releases the --wait process
		t.Fatal(err)
	}
	waiting := fmt.Sprintf("run %d of job j is being run by another nightjar process", id)
	var printed []string
	for line := range lines {
		printed = append(printed, line)
		if strings.HasPrefix(line, waiting) {
			break
		}
	}
	if n := len(printed); n == 0 || !strings.HasPrefix(printed[n-1], waiting) {
		_ = waiter.Wait()
		waited = true
		t.Fatalf("job run --wait ended (%v) without waiting for the tick's run %d, which is held:\n%s\n%s",
			waiter.ProcessState, id, strings.Join(printed, "\n"), waiterErr.String())
	}

	// Let the tick open the repository and end the run.
	if _, err := password.WriteString(testPassword + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := password.Close(); err != nil {
		t.Fatal(err)
	}
	tickRes := ticker.wait(t, patience)
	var rec passRec
	decodeWhole(t, tickRes, &rec)
	if tickRes.Code != exitOK || len(rec.Finished) != 1 || rec.Finished[0].ID != id || rec.Finished[0].Status != "succeeded" ||
		len(rec.Finished[0].Snapshots) != 1 {
		t.Fatalf("the tick finished %+v, want run %d succeeded with one snapshot\n%s", rec.Finished, id, tickRes)
	}

	for line := range lines {
		printed = append(printed, line)
	}
	err = waiter.Wait()
	waited = true
	reported := fmt.Sprintf("run %d of job j: succeeded (snapshots %s;", id, rec.Finished[0].Snapshots[0].SnapshotID[:8])
	if last := printed[len(printed)-1]; err != nil || !strings.HasPrefix(last, reported) {
		t.Errorf("job run --wait: %v, last line %q; want exit %d and a last line starting %q\n%s\n%s",
			err, last, exitOK, reported, strings.Join(printed, "\n"), waiterErr.String())
	}
}

// acceptAnnounced accepts the one connection of a process held by the
// crashtest build's hook and returns it with the first line the process
// announced on it; the test fails if the process ends first.
func acceptAnnounced(t *testing.T, ln net.Listener, ended <-chan struct{}, what string) (net.Conn, string) {
	t.Helper()
	type accepted struct {
		conn net.Conn
		line string
		err  error
	}
	got := make(chan accepted, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			got <- accepted{err: err}
			return
		}
		line, err := bufio.NewReader(conn).ReadString('\n')
		got <- accepted{conn, strings.TrimSuffix(line, "\n"), err}
	}()
	select {
	case a := <-got:
		if a.err != nil {
			t.Fatalf("%s: %v", what, a.err)
		}
		t.Cleanup(func() { a.conn.Close() })
		return a.conn, a.line
	case <-ended:
		ln.Close() // ends the accept
		t.Fatalf("%s: the process ended first", what)
		return nil, ""
	}
}

// config validate names every problem on its own line with its line
// number; a broken config makes tick exit 2 without creating or changing
// the state database.
func TestBrokenConfigIsRejectedAndChangesNothing(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutRepository(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	broken := `[scheduler]
state = "{{state}}"
heartbeat_every = "10s"

[repository.main]
path = "{{repo}}"
password_file = "{{pw}}"
create_if_missing = true

[[job]]
name = "a"
repository = "main"
schedule = "daily 02:00"
time_zone = "Europe/Berln"
depends_on = ["b"]
  [[job.source]]
  path = "{{dir}}/src"

[[job]]
name = "b"
repository = "main"
schedule = "daily 03:00"
depends_on = ["a"]
  [[job.source]]
  path = "{{dir}}/src"
`
	// Lines: 3 the unknown key, 14 the zone, 15 and 23 the depends_on of the cycle.
	w.writeConfig(broken)
	res := w.must(exitUsage, "config", "validate")
	lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
	if len(lines) != 3 {
		t.Fatalf("want three problems, one a line, got %d lines\n%s", len(lines), res)
	}
	lineOf := regexp.MustCompile(regexp.QuoteMeta(filepath.Base(w.cfg)) + `:(\d+): `)
	expect := []struct {
		what  string
		lines []int
		text  []string
	}{
		{"unknown key", []int{3}, []string{"heartbeat_every", "unknown key"}},
		{"unknown time zone", []int{14}, []string{"Europe/Berln"}},
		{"dependency cycle", []int{15, 23}, []string{"cycle"}},
	}
	for _, e := range expect {
		found := false
		for _, l := range lines {
			if !strings.Contains(l, e.text[0]) {
				continue
			}
			found = true
			m := lineOf.FindStringSubmatch(l)
			if m == nil {
				t.Errorf("%s: no line number in %q", e.what, l)
				continue
			}
			n, _ := strconv.Atoi(m[1])
			if !containsInt(e.lines, n) {
				t.Errorf("%s reported at line %d, want %v: %q", e.what, n, e.lines, l)
			}
			for _, s := range e.text[1:] {
				if !strings.Contains(l, s) {
					t.Errorf("%s: %q does not say %q", e.what, l, s)
				}
			}
		}
		if !found {
			t.Errorf("no problem line names the %s (%q)\n%s", e.what, e.text[0], res)
		}
	}
	if !strings.Contains(res.Stderr, "a → b → a") && !strings.Contains(res.Stderr, "b → a → b") {
		t.Errorf("the cycle is not spelled out:\n%s", res.Stderr)
	}
	res = w.must(exitUsage, "config", "validate", "--json")
	var v struct {
		Valid    bool     `json:"valid"`
		Problems []string `json:"problems"`
	}
	decodeWhole(t, res, &v)
	if v.Valid || len(v.Problems) != 3 {
		t.Errorf("config validate --json: valid %v with %d problems, want false with 3", v.Valid, len(v.Problems))
	}

	// No state database yet: a broken config creates none.
	stateDir := filepath.Dir(w.state)
	w.must(exitUsage, "tick")
	if _, err := os.Stat(stateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tick with a broken config created %s (%v)", stateDir, err)
	}

	// An existing state database is left byte for byte as it was.
	good := header("", "") + job("a", "daily 02:00", `time_zone = "Europe/Berlin"`, src)
	w.writeConfig(good)
	w.tick(exitOK, "--at", "2026-04-01T12:00:00Z")
	before := folderState(t, stateDir)
	if len(before) == 0 {
		t.Fatal("the good tick made no state database")
	}
	w.writeConfig(broken)
	time.Sleep(20 * time.Millisecond) // so that a write would change a modification time
	w.must(exitUsage, "tick", "--at", "2026-04-02T12:00:00Z")
	w.must(exitUsage, "job", "list")
	w.must(exitUsage, "runs")
	after := folderState(t, stateDir)
	if len(before) != len(after) {
		t.Errorf("state folder had %d files, has %d after a broken config", len(before), len(after))
	}
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			t.Errorf("%s disappeared", name)
		case !bytes.Equal(a.data, b.data) || !a.mtime.Equal(b.mtime):
			t.Errorf("%s changed after commands with a broken config", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared after commands with a broken config", name)
		}
	}
	if _, err := os.Stat(w.repo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a broken config created the repository (%v)", err)
	}
}

func containsInt(list []int, n int) bool {
	for _, v := range list {
		if v == n {
			return true
		}
	}
	return false
}

type fileState struct {
	data  []byte
	mtime time.Time
}

// folderState reads every file of a folder with its modification time.
func folderState(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	for _, name := range dirEntries(t, dir) {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = fileState{data: data, mtime: fi.ModTime()}
	}
	return out
}

// b depends on a; both are due in the same tick with one run at a time: a
// runs, b is held with a reason that names the dependency, and the next
// tick runs b after a succeeded.
func TestDependencyHoldsUntilPredecessorSucceeded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	srcA, srcB := w.path("a"), w.path("b")
	for _, d := range []string{srcA, srcB} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// b is declared first, so that file order does not decide for the test.
	w.writeConfig(header("max_concurrent_runs = 1", "") +
		job("b", "hourly :00", `depends_on = ["a"]`, srcB) +
		job("a", "hourly :00", "", srcA))
	w.tick(exitOK, "--at", "2026-06-01T09:30:00Z")

	p := w.tick(exitOK, "--at", "2026-06-01T10:00:05Z")
	if len(p.Claimed) != 2 {
		t.Fatalf("want both jobs claimed, got %+v", p.Claimed)
	}
	if len(p.Finished) != 1 || p.Finished[0].Job != "a" || p.Finished[0].Status != "succeeded" {
		t.Fatalf("tick finished %+v, want only a, succeeded", p.Finished)
	}
	if len(p.Held) != 1 || p.Held[0].Job != "b" || !strings.Contains(p.Held[0].Reason, "dependency a") {
		t.Fatalf("tick held %+v, want b with a reason naming dependency a", p.Held)
	}
	b := w.runsOf("b")
	if len(b) != 1 || b[0].Status != "queued" || !strings.Contains(b[0].HeldReason, "dependency a") {
		t.Fatalf("runs of b: %+v, want one queued run whose held_reason names dependency a", b)
	}
	// When b was held, a had just been started in the same admission: the
	// stored reason should not claim it was still queued.
	if strings.Contains(b[0].HeldReason, "is queued") {
		t.Errorf("held reason %q says a is queued, but a's run %d was started in that very admission", b[0].HeldReason, p.Finished[0].ID)
	}

	p = w.tick(exitOK, "--at", "2026-06-01T10:01:00Z")
	if len(p.Finished) != 1 || p.Finished[0].Job != "b" || p.Finished[0].Status != "succeeded" {
		t.Fatalf("the next tick finished %+v, want b, succeeded", p.Finished)
	}
	a := w.runsOf("a")
	b = w.runsOf("b")
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("runs: a %+v, b %+v; want one each", a, b)
	}
	if b[0].HeldReason != "" {
		t.Errorf("b ran but still carries the held reason %q", b[0].HeldReason)
	}
	if a[0].EndedAt == nil || b[0].StartedAt == nil || b[0].StartedAt.Before(*a[0].EndedAt) {
		t.Errorf("b started %v, before a ended %v", b[0].StartedAt, a[0].EndedAt)
	}
}

// job explain and tick read the admission state through one store query, so
// they agree. The reproduction of issue 12, part 6: b succeeds; a second
// run of b is queued and cancelled (it never started); a, which depends on
// b, is queued. explain must say that nothing holds a back, and the next
// tick runs it.
func TestExplainAndTickAgreeAfterACancelledQueuedRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(header("", "") + job("b", "manual", "", src) + job("a", "manual", `depends_on = ["b"]`, src))

	w.must(exitOK, "job", "run", "b", "--wait")
	var second runRec
	decodeWhole(t, w.must(exitOK, "job", "run", "b", "--json"), &second)
	w.must(exitOK, "runs", "cancel", strconv.FormatInt(second.ID, 10))
	var queued runRec
	decodeWhole(t, w.must(exitOK, "job", "run", "a", "--json"), &queued)

	var explain struct {
		State   string   `json:"state"`
		Reasons []string `json:"reasons"`
	}
	decodeWhole(t, w.must(exitOK, "job", "explain", "a", "--json"), &explain)
	if explain.State != "starting" || strings.Contains(strings.Join(explain.Reasons, "\n"), "dependency b") {
		t.Errorf("job explain a: state %q, reasons %q; want starting, not held by dependency b", explain.State, explain.Reasons)
	}
	p := w.tick(exitOK)
	if len(p.Finished) != 1 || p.Finished[0].ID != queued.ID || p.Finished[0].Status != "succeeded" {
		t.Errorf("tick finished %+v, want run %d of a, succeeded, as explain said", p.Finished, queued.ID)
	}
}

// Every --json output of the scheduler commands is one JSON document and
// nothing else; empty lists are [] and not null.
func TestJSONOutputsAreWholeDocuments(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(header("", "") + job("m", "manual", "", src) + job("s", "every 6h", `depends_on = ["m"]`, src))

	res := w.must(exitOK, "runs", "--json")
	if strings.TrimSpace(res.Stdout) != "[]" {
		t.Errorf("runs --json with no runs: %q, want []", res.Stdout)
	}
	var tick map[string]json.RawMessage
	res = w.must(exitOK, "tick", "--json")
	decodeWhole(t, res, &tick)
	for _, k := range []string{"claimed", "started", "finished", "requeued", "reclaimed", "lost", "held", "missed", "warnings"} {
		if v, ok := tick[k]; !ok || string(v) == "null" {
			t.Errorf("tick --json: %s is %s, want a list", k, v)
		}
	}

	var jobs []jobRec
	decodeWhole(t, w.must(exitOK, "job", "list", "--json"), &jobs)
	if len(jobs) != 2 || jobs[0].Name != "m" || jobs[1].Name != "s" || len(jobs[1].DependsOn) != 1 {
		t.Errorf("job list --json: %+v", jobs)
	}
	var one jobRec
	decodeWhole(t, w.must(exitOK, "job", "show", "s", "--json"), &one)
	if one.Name != "s" || one.NextRun == nil {
		t.Errorf("job show --json: %+v", one)
	}
	var explain struct {
		Job     string   `json:"job"`
		State   string   `json:"state"`
		Reasons []string `json:"reasons"`
	}
	decodeWhole(t, w.must(exitOK, "job", "explain", "s", "--json"), &explain)
	if explain.Job != "s" || explain.State == "" || len(explain.Reasons) == 0 {
		t.Errorf("job explain --json: %+v", explain)
	}
	var queued runRec
	decodeWhole(t, w.must(exitOK, "job", "run", "m", "--json"), &queued)
	if queued.ID == 0 || queued.Status != "queued" || queued.Kind != "backup" {
		t.Errorf("job run --json: %+v", queued)
	}
	var shown runRec
	decodeWhole(t, w.must(exitOK, "runs", "show", strconv.FormatInt(queued.ID, 10), "--json"), &shown)
	if shown.Kind != "backup" || shown.Counters == nil {
		t.Errorf("runs show --json: kind %q, counters %v; want backup and an object", shown.Kind, shown.Counters)
	}
	if shown.ID != queued.ID {
		t.Errorf("runs show --json: %+v", shown)
	}
	var list []runRec
	decodeWhole(t, w.must(exitOK, "runs", "--job", "m", "--limit", "5", "--json"), &list)
	if len(list) != 1 || list[0].Skipped == nil || list[0].Snapshots == nil {
		t.Errorf("runs --job m --json: %+v (skipped and snapshots must be lists)", list)
	}
	var valid struct {
		Valid bool `json:"valid"`
	}
	decodeWhole(t, w.must(exitOK, "config", "validate", "--json"), &valid)
	if !valid.Valid {
		t.Error("config validate --json of a good config is not valid")
	}
}

// The snapshot ID carries the run ID so that a snapshot can be traced to
// its run "even when the database is lost". When it is lost, run IDs start
// again at 1, and the next backup into the same repository must still
// work (the same happens to two hosts with their own state databases that
// share one repository).
func TestBackupsGoOnAfterTheStateDatabaseIsLost(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	makeTree(t, src, 3)
	w.writeConfig(header("", "") + job("j", "manual", "", src))
	w.must(exitOK, "job", "run", "j", "--wait")

	stateDir := filepath.Dir(w.state)
	if err := os.RemoveAll(stateDir); err != nil {
		t.Fatal(err)
	}
	res := w.nj("job", "run", "j", "--wait", "--json")
	var r runRec
	decodeWhole(t, res, &r)
	if res.Code != exitOK || r.Status != "succeeded" {
		t.Errorf("the first backup after losing the state database: exit %d, run %d %s [%s/%s] %s",
			res.Code, r.ID, r.Status, r.ErrorClass, r.ErrorCode, r.Message)
	}
	if n := len(w.snapshots()); n != 2 {
		t.Errorf("repository holds %d snapshots, want 2", n)
	}
}

// Slots missed while no tick ran: catch_up = "once" makes one catch-up run
// that counts them, catch_up = "skip" runs nothing; both wait for the next
// slot afterwards.
func TestMissedSlotsCatchUpOnceOrSkip(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(header("", "") +
		job("once", "hourly :00", `catch_up = "once"`, src) +
		job("skip", "hourly :00", `catch_up = "skip"`, src))
	w.tick(exitOK, "--at", "2026-07-01T10:30:00Z")

	// Off from 10:30 to 15:10: the slots 11:00 to 15:00 passed (15:00 by
	// more than the 5 minutes of on_time_grace).
	p := w.tick(exitOK, "--at", "2026-07-01T15:10:00Z")
	if len(p.Missed) != 2 {
		t.Errorf("tick --json lists %d jobs with missed slots, want 2", len(p.Missed))
	}
	once := w.runsOf("once")
	if len(once) != 1 || once[0].Trigger != "catch_up" || once[0].Status != "succeeded" || once[0].MissedSlots != 5 {
		t.Errorf("runs of once: %+v, want one succeeded catch_up run with 5 missed slots", once)
	} else if once[0].ScheduledAt == nil || !once[0].ScheduledAt.Equal(at(t, "2026-07-01T15:00:00Z")) {
		t.Errorf("the catch-up run stands for %v, want the latest slot 15:00", once[0].ScheduledAt)
	}
	if skip := w.runsOf("skip"); len(skip) != 0 {
		t.Errorf("catch_up = skip ran %+v", skip)
	}
	for _, name := range []string{"once", "skip"} {
		j := w.showJob(name, at(t, "2026-07-01T15:11:00Z"))
		if j.NextRun == nil || *j.NextRun != "2026-07-01T16:00:00Z" {
			t.Errorf("job %s: next run %v, want 16:00", name, j.NextRun)
		}
	}
}

// A job removed from the config is soft-deleted: its queued run is
// cancelled, its history stays listed, and it can no longer be run.
func TestRemovedJobKeepsItsHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(header("", "") + job("keep", "manual", "", src) + job("gone", "manual", "", src))
	w.must(exitOK, "job", "run", "gone")

	w.writeConfig(header("", "") + job("keep", "manual", "", src))
	var jobs []jobRec
	decodeWhole(t, w.must(exitOK, "job", "list", "--json"), &jobs)
	if len(jobs) != 1 || jobs[0].Name != "keep" {
		t.Errorf("job list after removing gone: %+v", jobs)
	}
	res := w.must(exitOK, "runs", "--job", "gone", "--json")
	var runs []runRec
	decodeWhole(t, res, &runs)
	if len(runs) != 1 || runs[0].Status != "cancelled" || runs[0].Message == "" {
		t.Errorf("history of the removed job: %+v, want its queued run, cancelled with a message", runs)
	}
	w.must(exitUsage, "job", "run", "gone")
	if p := w.tick(exitOK); len(p.Started) != 0 {
		t.Errorf("a tick started %+v for a removed job", p.Started)
	}
}

// The same unknown key in two jobs is two problems, one for each line:
// not the same lines over and over.
func TestUnknownKeyInTwoJobsIsReportedOncePerLine(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.writeConfig(`[scheduler]
state = "{{state}}"

[repository.main]
path = "{{repo}}"
password_file = "{{pw}}"

[[job]]
name = "a"
repository = "main"
schedule = "daily 02:00"
tag = ["x"]
  [[job.source]]
  path = "{{dir}}"

[[job]]
name = "b"
repository = "main"
schedule = "daily 03:00"
tag = ["y"]
  [[job.source]]
  path = "{{dir}}"
`)
	res := w.must(exitUsage, "config", "validate")
	lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
	if len(lines) != 2 {
		t.Errorf("want two problems (line 12 and line 20), got %d lines:\n%s", len(lines), res.Stderr)
	}
	for _, n := range []int{12, 20} {
		if !strings.Contains(res.Stderr, fmt.Sprintf(":%d: ", n)) {
			t.Errorf("no problem names line %d:\n%s", n, res.Stderr)
		}
	}
}
