//go:build linux

package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashPointEnv names the Unix socket on which a binary built with the
// build tag crashtest announces each change it makes to a repository (see
// package cmd/internal/crashpoint).
const crashPointEnv = "NIGHTJAR_CRASHPOINT"

// killPoint says where a crashing run is killed: at step N, before the
// step's call is made (the process is blocked there: an event, not a
// time); or, inside, once step N is let through, after delay (a random
// moment inside the call or after it). Step 0: never.
type killPoint struct {
	step   int
	inside bool
	delay  time.Duration
}

// crashOutcome is what a crashing run did.
type crashOutcome struct {
	steps  []string // the steps announced, "step N OP OBJECT"
	killed bool     // it died of SIGKILL
	code   int      // its exit code when it was not killed
	stderr string
}

// runCrashing runs bin (built with the tag crashtest) with args, answers
// every step it announces, and kills it (SIGKILL) at kill.
func (e *env) runCrashing(bin string, kill killPoint, args ...string) crashOutcome {
	e.t.Helper()
	// A short folder of its own: a socket's path is at most 108 bytes.
	dir, err := os.MkdirTemp("", "njcp")
	if err != nil {
		e.t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	socket := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	run := *e
	run.bin = bin
	cmd := run.command(ctx, []string{crashPointEnv + "=" + socket}, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		ln.Close()
		e.t.Fatalf("start nightjar %q: %v", args, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		ln.Close() // a process that never connected ends the accept below
		close(exited)
	}()
	type announced struct {
		line string
		conn net.Conn
	}
	steps := make(chan announced)
	go func() {
		defer close(steps)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		lines := bufio.NewScanner(conn)
		for lines.Scan() {
			steps <- announced{lines.Text(), conn}
		}
	}()
	sigkill := func() { _ = cmd.Process.Signal(syscall.SIGKILL) }
	var out crashOutcome
	for s := range steps {
		out.steps = append(out.steps, s.line)
		n := len(out.steps)
		if !strings.HasPrefix(s.line, fmt.Sprintf("step %d ", n)) {
			e.t.Errorf("step %d announced as %q", n, s.line)
		}
		if n == kill.step && !kill.inside {
			sigkill()
			break
		}
		_, _ = s.conn.Write([]byte{'.'})
		if n == kill.step {
			// The one wait on time in these tests, as the issue asks: a
			// random moment inside a step. Nothing is asserted about it
			// but that any such point can be recovered from.
			time.AfterFunc(kill.delay, sigkill)
		}
	}
	for range steps { // the rest, until the killed process's socket closes
	}
	<-exited
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	out.killed = ws.Signaled() && ws.Signal() == syscall.SIGKILL
	out.code = cmd.ProcessState.ExitCode()
	out.stderr = stderr.String()
	return out
}

// stepKind is a step without its number and its object's name (lock
// names are random, those of new packs and index files may be): "remove
// snapshots/".
func stepKind(step string) string {
	f := strings.Fields(step)
	if len(f) != 4 {
		return step
	}
	kind, _, _ := strings.Cut(f[3], "/")
	return f[2] + " " + kind + "/"
}

// crashFixture is a repository of four backdated snapshots of one source,
// made once and copied for every case. Each snapshot holds a file that
// every snapshot shares and one of its own, so that forgetting the two
// oldest leaves packs wholly unused (deleted by prune) and packs partly
// used (repacked).
type crashFixture struct {
	template *env
	src      string
	ids      []string                     // oldest first
	files    map[string]map[string]string // snapshot ID -> file name -> sha256
}

// crashKeep is the policy of the crash cases: the two newest stay.
var crashKeep = []string{"--keep-last", "2"}

func newCrashFixture(t *testing.T) *crashFixture {
	t.Helper()
	return newCrashFixtureWith(t, "")
}

// newCrashFixtureWith is newCrashFixture made, and copied, with the binary
// bin ("": the one under test).
func newCrashFixtureWith(t *testing.T, bin string) *crashFixture {
	t.Helper()
	e := newEnv(t)
	e.bin = bin
	e.init()
	f := &crashFixture{template: e, src: filepath.Join(e.dir, "src"), files: map[string]map[string]string{}}
	mkdirAll(t, f.src, 0o755)
	writeRandom(t, filepath.Join(f.src, "shared.bin"), 7, 700<<10)
	days := []string{"2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"}
	for i, day := range days {
		writeRandom(t, filepath.Join(f.src, "own.bin"), uint64(100+i), 500<<10)
		writeFile(t, filepath.Join(f.src, "note.txt"), "snapshot of "+day+"\n", 0o644)
		// One core, so one data packer: each backup's data is one pack,
		// and the first one mixes data the policy keeps (shared.bin) with
		// data it forgets (own.bin). With more packers that mix depends on
		// scheduling, and whether prune repacks with it.
		res := e.runEnv([]string{"GOMAXPROCS=1"}, "backup", "--json", "--time", day+"T08:00:00Z", f.src)
		if res.Code != exitOK {
			t.Fatalf("backup of %s: want exit %d, got:\n%s", day, exitOK, res)
		}
		var rep backupReport
		decodeJSON(t, res, &rep)
		id := rep.SnapshotID
		f.ids = append(f.ids, id)
		f.files[id] = map[string]string{}
		for _, name := range []string{"shared.bin", "own.bin", "note.txt"} {
			f.files[id][name] = fileHash(t, filepath.Join(f.src, name))
		}
	}
	return f
}

func fileHash(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// copyEnv returns a new env holding a copy of the template's repository.
func (f *crashFixture) copyEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.bin = f.template.bin
	copyDir(t, f.template.repo, e.repo)
	return e
}

// kept returns the IDs that crashKeep keeps, sorted.
func (f *crashFixture) kept() []string {
	kept := slices.Clone(f.ids[len(f.ids)-2:])
	slices.Sort(kept)
	return kept
}

// checkClean runs check --read-data and fails the test unless it is clean.
func checkClean(t *testing.T, e *env) {
	t.Helper()
	ck, res := e.check("--read-data")
	if res.Code != exitOK || !ck.OK {
		t.Errorf("check --read-data is not clean:\n%s", res)
	}
}

// verify proves a repository after a crash and a recovery: it holds every
// snapshot the policy keeps and none that was not there, check
// --read-data is clean, and every snapshot left restores bit-identical.
func (f *crashFixture) verify(t *testing.T, e *env) {
	t.Helper()
	left := e.snapshotIDs()
	for _, id := range f.kept() {
		if !slices.Contains(left, id) {
			t.Errorf("snapshot %s, which the policy keeps, is gone", shortID(id))
		}
	}
	for _, id := range left {
		if _, ok := f.files[id]; !ok {
			t.Errorf("snapshot %s was never made", shortID(id))
		}
	}
	checkClean(t, e)
	for _, id := range left {
		target, err := os.MkdirTemp(e.dir, "restore-"+shortID(id))
		if err != nil {
			t.Fatal(err)
		}
		e.expect(exitOK, "restore", id, "--target", target)
		for name, want := range f.files[id] {
			if got := fileHash(t, filepath.Join(target, f.src, name)); got != want {
				t.Errorf("snapshot %s restores %s with other bytes", shortID(id), name)
			}
		}
		if err := os.RemoveAll(target); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCrashAtEveryStep kills forget --prune and prune (SIGKILL, a real
// process) before each change they make to the repository, one case for
// every step of a clean run, and at a few random moments inside the steps.
// The steps of forget are the first ones of forget --prune (its lock, its
// marks, the snapshots' removal, the marks' removal, its unlock), and the
// repository a forget killed there leaves is the same, so forget alone is
// not run again. After each kill, prune must succeed and complete the work, check
// --read-data must be clean and every snapshot left must restore
// bit-identical; running the interrupted command again must end where a
// clean run ends. Every command of the test runs the binary built with the
// hook (inert without NIGHTJAR_CRASHPOINT) and without the race detector:
// it runs some 450 times, and the other tests run the commands under it.
func TestCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	bin := sharedBinary(t, crashtestBinary)
	f := newCrashFixtureWith(t, bin)

	forgetFirst := func(t *testing.T, e *env) { e.expect(exitOK, append([]string{"forget"}, crashKeep...)...) }
	scenarios := []struct {
		name    string
		args    []string
		prepare func(t *testing.T, e *env) // before the run, with the release binary
	}{
		{"prune", []string{"prune"}, forgetFirst},
		{"forget --prune", append([]string{"forget", "--prune"}, crashKeep...), nil},
	}
	seed := time.Now().UnixNano()
	t.Logf("random kill points from seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			fresh := func(t *testing.T) *env {
				e := f.copyEnv(t)
				if sc.prepare != nil {
					sc.prepare(t, e)
				}
				return e
			}
			clean := fresh(t)
			out := clean.runCrashing(bin, killPoint{}, sc.args...)
			if out.killed || out.code != exitOK || len(out.steps) == 0 {
				t.Fatalf("clean run of %q: exit %d, %d steps:\n%s", sc.args, out.code, len(out.steps), out.stderr)
			}
			t.Logf("a clean run of %q takes %d steps:\n%s", sc.args, len(out.steps), strings.Join(out.steps, "\n"))
			if final := clean.snapshotIDs(); !slices.Equal(final, f.kept()) {
				t.Fatalf("a clean run leaves %v, want %v", final, f.kept())
			}
			points := make([]killPoint, 0, len(out.steps)+2)
			for n := 1; n <= len(out.steps); n++ {
				points = append(points, killPoint{step: n})
			}
			for range 2 {
				points = append(points, killPoint{step: 1 + rng.IntN(len(out.steps)), inside: true, delay: time.Duration(rng.IntN(3000)) * time.Microsecond})
			}
			for _, kp := range points {
				name := fmt.Sprintf("kill at step %d", kp.step)
				if kp.inside {
					name = fmt.Sprintf("kill %s into step %d", kp.delay, kp.step)
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					e := fresh(t)
					got := e.runCrashing(bin, kp, sc.args...)
					if !kp.inside && !got.killed {
						t.Fatalf("the run was not killed at step %d (exit %d after %d steps):\n%s", kp.step, got.code, len(got.steps), got.stderr)
					}
					if !kp.inside && stepKind(got.steps[kp.step-1]) != stepKind(out.steps[kp.step-1]) {
						t.Errorf("killed at %q, where a clean run has %q", got.steps[kp.step-1], out.steps[kp.step-1])
					}
					// The next prune completes what the killed run left.
					e.expect(exitOK, "prune")
					f.verify(t, e)
					// The interrupted command, again, ends where a clean run ends.
					e.expect(exitOK, sc.args...)
					if left := e.snapshotIDs(); !slices.Equal(left, f.kept()) {
						t.Errorf("after the command again: snapshots %v, want %v as after a clean run", left, f.kept())
					}
					var plan pruneReport
					decodeJSON(t, e.expect(exitOK, "prune", "--dry-run", "--json"), &plan)
					if plan.PacksDeleted != 0 || plan.PacksRepacked != 0 || len(plan.ForgetsCompleted) != 0 {
						t.Errorf("after the command again, prune still has work: %+v", plan)
					}
				})
			}
		})
	}
}

// TestReleaseBinaryHasNoCrashPoint: the binary users get holds no crash
// point hook, and NIGHTJAR_CRASHPOINT does nothing to it: naming a socket
// that does not exist, forget --prune still works (the hook would fail to
// connect at the first change).
func TestReleaseBinaryHasNoCrashPoint(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goTool, "tool", "nm", binPath).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm %s: %v\n%s", binPath, err, out)
	}
	if strings.Contains(string(out), "crashpoint.(*hookedBackend)") {
		t.Errorf("the release binary contains the crash point hook")
	}
	f := newCrashFixture(t)
	e := f.template
	res := e.runEnv([]string{crashPointEnv + "=" + filepath.Join(e.dir, "no-such-socket")}, append([]string{"forget", "--prune"}, crashKeep...)...)
	if res.Code != exitOK {
		t.Fatalf("forget --prune with %s set: want exit 0:\n%s", crashPointEnv, res)
	}
	if left := e.snapshotIDs(); !slices.Equal(left, f.kept()) {
		t.Errorf("snapshots left %v, want %v", left, f.kept())
	}
}
