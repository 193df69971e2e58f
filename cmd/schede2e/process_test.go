//go:build linux

package schede2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// heldJobWorld makes a world with one manual job "slow" whose backup
// streams size incompressible bytes from a command source and then waits
// for a FIFO that the test never opens: its run stays running, in the
// middle of its backup, until it is stopped, however loaded the machine.
// Nothing of it becomes a snapshot (a command source's snapshot is saved
// only at the command's end). unhold rewrites the config so that the job
// backs up the same bytes from a folder instead, and ends.
func heldJobWorld(t *testing.T, size int64, schedulerExtra string) (w *world, unhold func()) {
	t.Helper()
	w = newWorld(t)
	src := w.path("slow")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(src, "blob")
	writeRandomFile(t, blob, 7, size)
	hold := w.path("hold")
	if err := syscall.Mkfifo(hold, 0o600); err != nil {
		t.Fatal(err)
	}
	// A command left behind by a killed tick waits on the FIFO: give it
	// its end of file, so that it exits with the test.
	t.Cleanup(func() {
		if f, err := os.OpenFile(hold, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	const retry = "\nretry = { attempts = 3, initial = \"1s\", max = \"2s\" }"
	w.writeConfig(header(schedulerExtra, "") + job("slow", "manual", retry) +
		fmt.Sprintf("  [[job.source]]\n  command = %q\n  name = \"held.bin\"\n", "cat "+blob+"; cat "+hold))
	unhold = func() {
		w.writeConfig(header(schedulerExtra, "") + job("slow", "manual", retry, src))
	}
	return w, unhold
}

// waitUntilBackingUp waits until the run of p is running and its backup is
// under way: it holds a lock in the repository and has written a pack.
func waitUntilBackingUp(t *testing.T, w *world, p *proc) runRec {
	t.Helper()
	var running runRec
	notEnded := func() {
		select {
		case <-p.done:
			t.Fatalf("the tick ended before the test could catch its run running\n%s", p.wait(t, patience))
		default:
		}
	}
	eventually(t, patience, 200*time.Millisecond, "the run is running", func() bool {
		notEnded()
		for _, r := range w.runs() {
			if r.Status == "running" {
				running = r
				return true
			}
		}
		return false
	})
	eventually(t, patience, 100*time.Millisecond, "the backup holds a repository lock and wrote a pack", func() bool {
		notEnded()
		return len(dirEntries(t, filepath.Join(w.repo, "locks"))) > 0 && len(packFiles(t, w.repo)) > 0
	})
	return running
}

// A tick killed with SIGKILL during a backup leaves a running run behind; the
// next tick reclaims it (its runner's process is gone) as failed, transient,
// ORPHANED, and queues a retry that a later tick runs to success. The
// repository is sound afterwards.
func TestKilledTickIsReclaimedAndItsRetrySucceeds(t *testing.T) {
	t.Parallel()
	w, unhold := heldJobWorld(t, 40_000_000, "heartbeat = \"1s\"\nstale_after = \"3s\"")
	w.must(exitOK, "job", "run", "slow")
	p := w.startNJ("tick", "--json")
	running := waitUntilBackingUp(t, w, p)

	p.signal(t, syscall.SIGKILL)
	killed := time.Now()
	if res := p.wait(t, patience); res.Code != -1 {
		t.Fatalf("the tick was not killed\n%s", res)
	}

	// At once: this host's runner is provably gone, no need to wait for stale_after.
	rec := w.tick(exitOK)
	reclaimedAfter := time.Since(killed)
	if len(rec.Reclaimed) != 1 || rec.Reclaimed[0].ID != running.ID {
		t.Fatalf("the next tick reclaimed %+v, want run %d", rec.Reclaimed, running.ID)
	}
	t.Logf("reclaimed %s after the kill: %s", reclaimedAfter.Round(time.Millisecond), rec.Reclaimed[0].Message)
	if len(rec.Started) != 0 {
		t.Errorf("the retry started before its backoff: %+v", rec.Started)
	}

	runs := w.runsOf("slow")
	if len(runs) != 2 {
		t.Fatalf("want the orphaned run and its retry, got %+v", runs)
	}
	old, retry := runs[0], runs[1]
	if old.ID != running.ID || old.Status != "failed" || old.ErrorCode != "ORPHANED" || old.ErrorClass != "transient" || old.EndedAt == nil {
		t.Errorf("orphaned run: id %d status %s code %s class %s ended %v; want run %d failed ORPHANED transient with an end",
			old.ID, old.Status, old.ErrorCode, old.ErrorClass, old.EndedAt, running.ID)
	}
	if len(old.Snapshots) != 0 {
		t.Errorf("the killed run records snapshots %+v", old.Snapshots)
	}
	if retry.Trigger != "retry" || retry.Attempt != 2 || retry.Status != "queued" || retry.NotBefore == nil {
		t.Fatalf("retry: trigger %s attempt %d status %s not_before %v; want retry 2 queued with a not-before",
			retry.Trigger, retry.Attempt, retry.Status, retry.NotBefore)
	}
	if old.EndedAt != nil && retry.NotBefore.Before(old.EndedAt.Add(500*time.Millisecond)) {
		t.Errorf("retry not before %s: want about 1 s (retry initial) after the reclaim at %s", rfc(*retry.NotBefore), rfc(*old.EndedAt))
	}
	if retry.HeldReason == "" {
		t.Errorf("the queued retry waits without a reason")
	}

	// The retry backs up the same bytes from a folder, and ends.
	unhold()
	time.Sleep(time.Until(retry.NotBefore.Add(100 * time.Millisecond)))
	fin := w.tick(exitOK)
	if len(fin.Finished) != 1 || fin.Finished[0].ID != retry.ID || fin.Finished[0].Status != "succeeded" {
		t.Fatalf("the retry tick finished %+v, want run %d succeeded", fin.Finished, retry.ID)
	}
	done := runByID(t, w.runs(), retry.ID)
	if len(done.Snapshots) != 1 {
		t.Fatalf("retry made %d snapshots", len(done.Snapshots))
	}
	snaps := w.snapshots()
	if len(snaps) != 1 || snaps[0].ID != done.Snapshots[0].SnapshotID {
		t.Errorf("repository holds %+v, want only the retry's snapshot %s", snaps, done.Snapshots[0].SnapshotID)
	}
	if res := w.run("check", "-r", w.repo, "--read-data"); res.Code != exitOK {
		t.Errorf("check --read-data after a killed backup and its retry\n%s", res)
	}
}

// SIGTERM during a backup: the tick exits well within 30 s, records the run
// as interrupted and queues it again.
func TestSIGTERMInterruptsTheRunAndQueuesItAgain(t *testing.T) {
	t.Parallel()
	w, _ := heldJobWorld(t, 40_000_000, "")
	w.must(exitOK, "job", "run", "slow")
	p := w.startNJ("tick", "--json")
	running := waitUntilBackingUp(t, w, p)

	sent := time.Now()
	p.signal(t, syscall.SIGTERM)
	res := p.wait(t, patience)
	took := time.Since(sent)
	t.Logf("tick exited %d, %s after SIGTERM", res.Code, took.Round(time.Millisecond))
	if took > 30*time.Second {
		t.Errorf("tick took %s to exit after SIGTERM, want at most 30 s", took)
	}
	if res.Code != exitOK && res.Code != 130 {
		t.Errorf("tick after SIGTERM: exit %d, want 0 (an interruption is not a failure) or 130\n%s", res.Code, res)
	}
	var out passRec
	decodeWhole(t, res, &out)
	if !out.Shutdown {
		t.Errorf("tick --json does not say shutdown")
	}

	runs := w.runsOf("slow")
	if len(runs) != 2 {
		t.Fatalf("want the interrupted run and a new queued one, got %+v", runs)
	}
	old, again := runs[0], runs[1]
	if old.ID != running.ID || old.Status != "interrupted" || old.ErrorCode != "INTERRUPTED" || old.EndedAt == nil {
		t.Errorf("interrupted run: id %d status %s code %s ended %v; want run %d interrupted INTERRUPTED with an end",
			old.ID, old.Status, old.ErrorCode, old.EndedAt, running.ID)
	}
	if again.Status != "queued" || again.Trigger != old.Trigger || again.Attempt != old.Attempt {
		t.Errorf("requeued run: status %s trigger %s attempt %d; want queued %s %d (an interruption uses up no retry)",
			again.Status, again.Trigger, again.Attempt, old.Trigger, old.Attempt)
	}
	if len(out.Finished) != 1 || out.Finished[0].ID != old.ID || out.Finished[0].Status != "interrupted" {
		t.Errorf("tick --json finished %+v, want run %d interrupted", out.Finished, old.ID)
	}
	if len(out.Requeued) != 1 || out.Requeued[0].ID != again.ID {
		ids := []int64{}
		for _, r := range out.Requeued {
			ids = append(ids, r.ID)
		}
		t.Errorf("tick --json lists requeued run IDs %v, want [%d]: the output names a run that does not exist", ids, again.ID)
	}
	if strings.Contains(res.Stderr, "left to orphan reclaim") {
		t.Errorf("the run did not stop in time:\n%s", res.Stderr)
	}
	if locks := dirEntries(t, filepath.Join(w.repo, "locks")); len(locks) != 0 {
		t.Errorf("the interrupted backup left repository locks behind: %v", locks)
	}
}

// While a tick runs a backup, another tick neither runs the job again nor
// takes the live run for orphaned, even after stale_after has passed (the
// heartbeat is renewed); runs cancel then stops the running run at its next
// heartbeat, as cancelled and without a retry.
func TestLiveRunIsLeftAloneAndCancelStopsIt(t *testing.T) {
	t.Parallel()
	w, _ := heldJobWorld(t, 40_000_000, "heartbeat = \"1s\"\nstale_after = \"3s\"")
	w.must(exitOK, "job", "run", "slow")
	p := w.startNJ("tick", "--json")
	running := waitUntilBackingUp(t, w, p)

	other := w.tick(exitOK)
	if len(other.Reclaimed)+len(other.Claimed)+len(other.Started)+len(other.Finished) != 0 {
		t.Errorf("a second tick touched the live run: %+v", other)
	}
	if running.StartedAt == nil {
		t.Fatalf("running run %d has no start", running.ID)
	}
	// Past stale_after since the start: only renewed heartbeats keep it alive.
	time.Sleep(time.Until(running.StartedAt.Add(4500 * time.Millisecond)))
	other = w.tick(exitOK)
	if len(other.Reclaimed) != 0 {
		t.Fatalf("a live run was reclaimed: %+v", other.Reclaimed)
	}
	if r := runByID(t, w.runs(), running.ID); r.Status != "running" {
		t.Fatalf("run %d is %s, want still running", running.ID, r.Status)
	}

	res := w.must(exitOK, "runs", "cancel", strconv.FormatInt(running.ID, 10))
	asked := time.Now()
	if !strings.Contains(res.Stdout, "cancel") {
		t.Errorf("runs cancel of a running run says:\n%s", res)
	}
	done := p.wait(t, patience)
	t.Logf("the tick ended %s after the cancellation, exit %d", time.Since(asked).Round(time.Millisecond), done.Code)
	if done.Code != exitOK {
		t.Errorf("a tick whose run was cancelled by a user: exit %d, want 0\n%s", done.Code, done)
	}
	runs := w.runsOf("slow")
	if len(runs) != 1 {
		t.Fatalf("want only the cancelled run (no retry, no requeue), got %+v", runs)
	}
	if r := runs[0]; r.Status != "cancelled" || r.ErrorClass != "cancelled" || r.EndedAt == nil {
		t.Errorf("cancelled run: status %s class %s ended %v", r.Status, r.ErrorClass, r.EndedAt)
	}
	if n := len(w.snapshots()); n != 0 {
		t.Errorf("a cancelled backup left %d snapshots", n)
	}
}

// nightjar serve keeps passing while a long backup runs: a job queued in
// the meantime runs to its end while the long one is still running, when
// the limits allow two runs. The long run is held by its before hook,
// which waits for a FIFO that the test never opens, so that "still
// running" is an event, not a matter of speed. SIGTERM then stops serve,
// and the long run is interrupted and queued again.
func TestServeStartsOtherRunsDuringALongBackup(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	slow, quick := w.path("slow"), w.path("quick")
	for _, d := range []string{slow, quick} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte(filepath.Base(d)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hold := w.path("hold")
	if err := syscall.Mkfifo(hold, 0o600); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(header("tick_interval = \"1s\"\nmax_concurrent_runs = 2", "max_concurrent_runs = 2") +
		job("slow", "manual", "retention = \"off\"\nverify = \"off\"\n[job.hooks]\nbefore = \"cat "+hold+"\"", slow) +
		job("quick", "manual", "", quick))
	w.must(exitOK, "job", "run", "slow")
	p := w.startNJ("serve")
	var running runRec
	eventually(t, patience, 200*time.Millisecond, "the slow run is running", func() bool {
		runs := w.runsOf("slow")
		if len(runs) == 1 && runs[0].Status == "running" {
			running = runs[0]
			return true
		}
		return false
	})

	w.must(exitOK, "job", "run", "quick")
	eventually(t, patience, 250*time.Millisecond, "the quick job, queued while the slow one runs, succeeded", func() bool {
		runs := w.runsOf("quick")
		return len(runs) == 1 && runs[0].Status == "succeeded"
	})
	if now := runByID(t, w.runs(), running.ID); now.Status != "running" {
		t.Fatalf("the slow run, held by its before hook, is %s", now.Status)
	}

	p.signal(t, syscall.SIGTERM)
	if res := p.wait(t, patience); res.Code != 130 {
		t.Errorf("serve after SIGTERM: exit %d, want 130 as tick (interrupted)\n%s", res.Code, res)
	}
	runs := w.runsOf("slow")
	if len(runs) != 2 || runs[0].Status != "interrupted" || runs[1].Status != "queued" {
		t.Errorf("slow after SIGTERM: %+v, want interrupted and queued again", runs)
	}
}
