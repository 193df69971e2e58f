//go:build linux

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildBigTree writes about 300 MiB of random files (and some small ones)
// below root and returns the total number of bytes.
func buildBigTree(t *testing.T, root string) int64 {
	t.Helper()
	var total int64
	for i := 0; i < 30; i++ {
		dir := filepath.Join(root, fmt.Sprintf("dir%d", i%3))
		mkdirAll(t, dir, 0o755)
		size := (4 + (i*5)%13) << 20
		writeRandom(t, filepath.Join(dir, fmt.Sprintf("big%02d.bin", i)), uint64(1000+i), size)
		total += int64(size)
	}
	small := filepath.Join(root, "small")
	mkdirAll(t, small, 0o755)
	for i := 0; i < 60; i++ {
		size := 1 + (i*7919)%20000
		writeRandom(t, filepath.Join(small, fmt.Sprintf("s%02d", i)), uint64(5000+i), size)
		total += int64(size)
	}
	return total
}

// background is a nightjar process running while the test goes on.
type background struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	Stdout strings.Builder
	Stderr strings.Builder
	cancel context.CancelFunc
}

// start starts nightjar in the background.
func (e *env) start(args ...string) *background {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	bg := &background{done: make(chan struct{}), cancel: cancel}
	bg.cmd = e.command(ctx, nil, args...)
	bg.cmd.Stdout, bg.cmd.Stderr = &bg.Stdout, &bg.Stderr
	if err := bg.cmd.Start(); err != nil {
		cancel()
		e.t.Fatalf("start nightjar %q: %v", args, err)
	}
	go func() {
		bg.err = bg.cmd.Wait()
		cancel()
		close(bg.done)
	}()
	e.t.Cleanup(func() {
		if bg.running() {
			_ = bg.cmd.Process.Kill()
		}
		<-bg.done
	})
	return bg
}

// holdExclusiveLock starts this test binary as a helper process that takes
// the repository's exclusive lock and holds it until it is killed, and
// returns once the lock is held. The process is killed when the test ends.
func (e *env) holdExclusiveLock() *exec.Cmd {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	helper := exec.CommandContext(ctx, os.Args[0])
	helper.Env = append(e.environ(nil), helperEnv+"=hold-exclusive-lock")
	var stderr strings.Builder
	helper.Stderr = &stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		cancel()
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait(); cancel() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "locked" {
		e.t.Fatalf("helper did not take the lock: %q %v\n%s", line, err, stderr.String())
	}
	return helper
}

func (bg *background) running() bool {
	select {
	case <-bg.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and reports whether the process was still running,
// that is, whether it died of the signal rather than ending by itself.
func (bg *background) kill() bool {
	_ = bg.cmd.Process.Signal(syscall.SIGKILL)
	<-bg.done
	ws, ok := bg.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// wait waits for the process to end and returns its exit code.
func (bg *background) wait() int {
	<-bg.done
	return bg.cmd.ProcessState.ExitCode()
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// TestCrashSafety kills a running backup at several points. Each time the
// repository must pass check --read-data, hold no snapshot of the killed
// run, and a following backup must succeed, reuse the packs the killed one
// finished, and restore to an exact copy of the source.
func TestCrashSafety(t *testing.T) {
	// Parallel with the others: the kill point that is a time (300 ms
	// after the start) stays early in a backup of 300 MiB at 75 MiB/s
	// however busy the machine is, and the test asserts nothing that
	// depends on where in the backup a kill falls.
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	total := buildBigTree(t, src)
	want := scanTree(t, src)
	// About 3 seconds for the whole tree after the first second's burst, so
	// that the kill points below fall in the middle of the backup.
	const rate = "75MiB"

	// The points are where the backup is, not how long it ran, so that a
	// busy machine does not move them.
	points := []struct {
		name  string
		delay time.Duration // kill this long after the start, or
		packs int           // once this many packs are on disk (with delay 0)
	}{
		{"300ms after the start", 300 * time.Millisecond, 0},
		{"after the first pack", 0, 1},
		{"after 8 packs (about half)", 0, 8},
	}
	// The binary users get, without the race detector: each point moves
	// some 900 MiB through backup, check --read-data and restore --verify,
	// which a race-detecting build takes minutes of processor time for.
	// What this test looks at is what a SIGKILL leaves on disk, which the
	// race detector cannot see; the same commands run under it in the
	// other tests.
	bin := sharedBinary(t, staticBinary)
	for _, pt := range points {
		t.Run(pt.name, func(t *testing.T) {
			e := newEnv(t)
			e.bin = bin
			e.init()
			data := filepath.Join(e.repo, "data")
			bg := e.start("backup", "--json", "--bandwidth", rate, src)
			if pt.delay > 0 {
				time.Sleep(pt.delay)
			} else if !waitFor(patience, func() bool { return len(objects(t, data)) >= pt.packs || !bg.running() }) {
				t.Fatalf("no %d packs within %s", pt.packs, patience)
			}
			if !bg.kill() {
				t.Fatalf("the backup ended before it was killed (%v):\n%s\n%s", bg.err, bg.Stdout.String(), bg.Stderr.String())
			}
			packs := objects(t, data)
			var packBytes int64
			for _, s := range packs {
				packBytes += s
			}
			if len(packs) < pt.packs {
				t.Fatalf("killed with %d packs on disk, want at least %d", len(packs), pt.packs)
			}
			staleLocks := len(objects(t, filepath.Join(e.repo, "locks")))
			t.Logf("killed with %d packs (%d MiB) on disk and %d lock files left", len(packs), packBytes>>20, staleLocks)
			if pt.packs > 0 && staleLocks == 0 {
				t.Errorf("the killed backup left no lock file: did it hold one while writing packs?")
			}

			if snaps := e.snapshots(); len(snaps) != 0 {
				t.Errorf("the killed backup left a snapshot: %+v", snaps)
			}
			ck, res := e.check("--read-data")
			if res.Code != exitOK || !ck.OK {
				t.Fatalf("check --read-data after the kill:\n%s", res)
			}
			if n := len(objects(t, filepath.Join(e.repo, "locks"))); n != 0 {
				t.Errorf("%d lock files remain after the next command: the dead process's lock was not cleared", n)
			}

			next := e.backup(exitOK, src)
			if next.AdoptedPacks != ck.UnindexedPacks {
				t.Errorf("adopted_packs = %d, check counted %d unindexed packs", next.AdoptedPacks, ck.UnindexedPacks)
			}
			if len(packs) > 0 {
				if next.AdoptedPacks == 0 {
					t.Errorf("%d packs were written before the kill, the next backup adopted none", len(packs))
				}
				// Random data does not compress: a full backup adds at least
				// the source's size. The packs already written are not
				// written again (1% slack for metadata).
				if limit := total - packBytes + total/100; next.BytesAdded > limit {
					t.Errorf("bytes_added = %d MiB, want at most %d MiB: the finished packs (%d MiB) were stored again",
						next.BytesAdded>>20, limit>>20, packBytes>>20)
				}
			}
			if next.BytesAdded >= total+total/100 {
				t.Errorf("bytes_added = %d, more than a full backup of %d bytes", next.BytesAdded, total)
			}

			target := filepath.Join(e.dir, "restore")
			e.expect(exitOK, "restore", next.SnapshotID, "--target", target, "--verify")
			compareTrees(t, want, scanTree(t, filepath.Join(target, src)), isRoot())

			// The data was read back by restore --verify; the structure is
			// enough here.
			ck, res = e.check()
			if res.Code != exitOK || !ck.OK || ck.UnindexedPacks != 0 {
				t.Errorf("check after the next backup: want ok and no unindexed packs:\n%s", res)
			}
		})
	}
}

// TestLocking: a running backup holds a shared lock that does not stop a
// check; a live exclusive lock makes both busy (exit 11); the lock of a
// killed process stops nothing.
func TestLocking(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeRandom(t, filepath.Join(src, "data.bin"), 7, 28<<20)

	t.Run("check beside a running backup", func(t *testing.T) {
		e := *e
		e.t = t
		// At 1 KiB/s the 28 MiB take about eight hours: the backup cannot
		// end by itself while the test runs, however loaded the machine,
		// so that the overlap below is decided by events, not by timing.
		// The test ends it with SIGINT.
		bg := e.start("backup", "--json", "--bandwidth", "1KiB", src)
		locks := filepath.Join(e.repo, "locks")
		if !waitFor(commandTimeout, func() bool { return len(objects(t, locks)) > 0 || !bg.running() }) || !bg.running() {
			t.Fatalf("the backup took no lock or ended early:\n%s", bg.Stderr.String())
		}
		res := e.run("check")
		if res.Code != exitOK {
			t.Errorf("check beside a running backup: want exit 0:\n%s", res)
		}
		// A second backup runs beside the first: both hold shared locks.
		other := filepath.Join(e.dir, "other")
		mkdirAll(t, other, 0o755)
		writeRandom(t, filepath.Join(other, "other.bin"), 8, 3<<20)
		e.backup(exitOK, other)
		if !bg.running() {
			t.Fatalf("the throttled backup ended by itself:\n%s", bg.Stderr.String())
		}
		if err := bg.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if code := bg.wait(); code != exitInterrupted {
			t.Fatalf("the interrupted backup exited %d, want %d:\n%s", code, exitInterrupted, bg.Stderr.String())
		}
		ck, res := e.check("--read-data")
		if res.Code != exitOK || !ck.OK || ck.Snapshots != 1 {
			t.Errorf("check --read-data after a backup beside an interrupted one: want ok and 1 snapshot:\n%s", res)
		}
		if n := len(objects(t, locks)); n != 0 {
			t.Errorf("%d locks remain after both ended", n)
		}
	})

	t.Run("exclusive lock, live and dead", func(t *testing.T) {
		e := *e
		e.t = t
		before := len(e.snapshots())
		helper := e.holdExclusiveLock()

		for _, args := range [][]string{{"check"}, {"backup", src}} {
			res := e.run(args...)
			if res.Code != exitBusy {
				t.Errorf("%s under a live exclusive lock: want exit %d:\n%s", args[0], exitBusy, res)
			}
			if msg := lines(res.Stderr); len(msg) != 1 || !strings.Contains(msg[0], "busy") || !strings.Contains(msg[0], "exclusive") {
				t.Errorf("%s under a live exclusive lock: want one line saying busy and naming the exclusive lock:\n%s", args[0], res)
			}
		}
		if n := len(e.snapshots()); n != before {
			t.Errorf("a backup refused as busy made a snapshot")
		}

		if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var exitErr *exec.ExitError
		if err := helper.Wait(); !errors.As(err, &exitErr) {
			t.Fatalf("helper: %v", err)
		}
		locks := filepath.Join(e.repo, "locks")
		if len(objects(t, locks)) == 0 {
			t.Fatal("the killed holder's lock file is gone: the test cannot show that a dead lock is recognised")
		}
		res := e.run("check")
		if res.Code != exitOK {
			t.Errorf("check after the exclusive holder died: want exit 0:\n%s", res)
		}
		e.backup(exitOK, src)
		if n := len(objects(t, locks)); n != 0 {
			t.Errorf("%d lock files remain: the dead lock was not removed", n)
		}
	})
}

// TestBandwidth: the limit is shared by all sources. Three folders of
// 4 MiB at 4 MiB/s take at least as long as one of 12 MiB: (12-4)/4 = 2
// seconds after the first second's burst, where limits of their own would
// let each folder through in its burst at once. Only the lower bound is
// asserted, which load cannot break; that the limiter is not slower than
// its rate is backup/limit's TestSharedRate, on a clock of its own.
func TestBandwidth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	var three []string
	for i := 0; i < 3; i++ {
		dir := filepath.Join(e.dir, fmt.Sprintf("part%d", i))
		mkdirAll(t, dir, 0o755)
		writeRandom(t, filepath.Join(dir, "data.bin"), uint64(300+i), 4<<20)
		three = append(three, dir)
	}
	one := filepath.Join(e.dir, "whole")
	mkdirAll(t, one, 0o755)
	writeRandom(t, filepath.Join(one, "data.bin"), 400, 12<<20)

	b3 := e.backup(exitOK, append([]string{"--bandwidth", "4MiB"}, three...)...)
	b1 := e.backup(exitOK, "--bandwidth", "4MiB", one)
	t.Logf("three sources: %.2fs, one source: %.2fs", b3.Seconds, b1.Seconds)
	if b3.BytesRead != 12<<20 || b1.BytesRead != 12<<20 {
		t.Fatalf("bytes_read %d and %d, want 12 MiB each", b3.BytesRead, b1.BytesRead)
	}
	for _, c := range []struct {
		name string
		secs float64
	}{{"three sources", b3.Seconds}, {"one source", b1.Seconds}} {
		if c.secs < 1.9 {
			t.Errorf("%s: %.2fs, want at least 2s (12 MiB at 4 MiB/s after a 4 MiB burst)", c.name, c.secs)
		}
	}
}

// TestChangedDuringRead changes a file while the backup reads it (slowly,
// through --bandwidth): the backup must report it.
func TestChangedDuringRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	file := filepath.Join(src, "busy.bin")
	writeRandom(t, file, 77, 12<<20)

	// 12 MiB at 4 MiB/s: the read lasts about 2 seconds after the burst.
	bg := e.start("backup", "--json", "--bandwidth", "4MiB", src)
	locks := filepath.Join(e.repo, "locks")
	if !waitFor(patience, func() bool { return len(objects(t, locks)) > 0 || !bg.running() }) || !bg.running() {
		t.Fatalf("the backup took no lock or ended early:\n%s", bg.Stderr.String())
	}
	time.Sleep(500 * time.Millisecond)
	if !bg.running() {
		t.Fatal("the backup ended before the file could be changed")
	}
	// Same size, new content at the start and a new mtime.
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("changed while read"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	code := bg.wait()
	res := result{Args: []string{"backup"}, Code: code, Stdout: bg.Stdout.String(), Stderr: bg.Stderr.String()}
	if code != exitOK && code != exitPartial {
		t.Fatalf("backup of a file that changed:\n%s", res)
	}
	var b backupReport
	decodeJSON(t, res, &b)
	if len(b.ChangedDuring) != 1 || b.ChangedDuring[0] != file {
		t.Errorf("changed_during_read = %q, want [%q]", b.ChangedDuring, file)
	}
	if !strings.Contains(res.Stderr, file) {
		t.Errorf("no warning on stderr names %s:\n%s", file, res)
	}
}
