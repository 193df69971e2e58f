//go:build linux

package schede2e

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// A second SIGINT while tick or serve waits for its runs to stop ends the
// process at once, and both exit 130 (interrupted). The run is held in its
// after hook, which a shutdown leaves to finish until shortly before the
// end of the wait, so the second signal surely arrives during the wait; the
// test waits for the first signal's notice before it sends the second.
func TestSecondSignalStopsTickAndServeAtOnce(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"tick", "serve"} {
		t.Run(command, func(t *testing.T) {
			w := newWorld(t)
			src := w.path("src")
			if err := os.MkdirAll(src, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, "f"), []byte("f\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			hold, mark := w.path("hold"), w.path("in-after")
			if err := syscall.Mkfifo(hold, 0o600); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { // the hook's cat, left behind by the exit, ends too
				if f, err := os.OpenFile(hold, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
			w.writeConfig(header("tick_interval = \"1m\"", "") +
				job("held", "manual", "retention = \"off\"\nverify = \"off\"\n[job.hooks]\nafter = \"touch "+mark+"; cat "+hold+"\"", src))
			w.must(exitOK, "job", "run", "held")

			stderrPath := w.path(command + ".stderr")
			stderr, err := os.Create(stderrPath)
			if err != nil {
				t.Fatal(err)
			}
			defer stderr.Close()
			ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
			defer cancel()
			cmd := w.command(ctx, command, "--config", w.cfg)
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
			})
			exited := func() bool {
				select {
				case err := <-done:
					t.Fatalf("%s ended before the second signal: %v\n%s", command, err, readFile(t, stderrPath))
				default:
				}
				return false
			}
			eventually(t, patience, 100*time.Millisecond, "the run is in its after hook", func() bool {
				exited()
				_, err := os.Stat(mark)
				return err == nil
			})
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			eventually(t, patience, 50*time.Millisecond, "the first signal's notice", func() bool {
				exited()
				return strings.Contains(readFile(t, stderrPath), "a second signal stops at once")
			})
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			err = <-done
			code := cmd.ProcessState.ExitCode()
			out := readFile(t, stderrPath)
			if code != 130 {
				t.Fatalf("%s after a second SIGINT: exit %d (%v), want 130\n%s", command, code, err, out)
			}
			if !strings.Contains(out, "second signal: stopped at once") {
				t.Errorf("%s does not say the second signal stopped it:\n%s", command, out)
			}
			if runs := w.runsOf("held"); len(runs) != 1 || runs[0].Status != "running" {
				t.Errorf("runs after the second signal: %+v, want the held run left running, for the next pass to reclaim", runs)
			}
		})
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A tick killed during a backup leaves its run running; when the state
// database was damaged meanwhile, the next tick finds that (quick_check
// after an unclean stop) and says in one line what to do, with exit 14,
// before it writes anything into the file.
func TestTickAfterACrashReportsADamagedStateDatabase(t *testing.T) {
	t.Parallel()
	w, _ := heldJobWorld(t, 40_000_000, "")
	w.must(exitOK, "job", "run", "slow")
	p := w.startNJ("tick")
	waitUntilBackingUp(t, w, p)
	p.signal(t, syscall.SIGKILL)
	if res := p.wait(t, patience); res.Code != -1 {
		t.Fatalf("the tick was not killed\n%s", res)
	}

	// Move the WAL into the file, then ruin the file's last page, as a
	// disk that lost a write would.
	sdb, err := sql.Open("sqlite", w.state)
	if err != nil {
		t.Fatal(err)
	}
	var pageSize int64
	if err := sdb.QueryRow("PRAGMA page_size").Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if _, err := sdb.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	if err := sdb.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(w.state, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, int(pageSize)), fi.Size()-pageSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	res := w.must(14, "tick")
	line := strings.TrimSpace(res.Stderr)
	if strings.Contains(line, "\n") || !strings.Contains(line, "state database "+w.state+" is damaged") ||
		!strings.Contains(line, "nothing in it is needed to restore") || !strings.Contains(line, "move it aside") {
		t.Errorf("tick on a damaged state database: want one line naming it and saying what to do:\n%s", res)
	}
}

// A tick killed after its run wrote the snapshot but before it recorded
// the run's end (here: in the run's after hook, which a FIFO holds) leaves
// the run running in the state database with its snapshot in the
// repository. The next tick records the run with that snapshot instead of
// retrying it: the history never loses a snapshot. Its after hook never
// ended, so the run is partial, with the hook named as skipped.
func TestKilledRunWhoseSnapshotIsWrittenIsRecordedWithIt(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hold, mark := w.path("hold"), w.path("in-after")
	if err := syscall.Mkfifo(hold, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(hold, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	w.writeConfig(header("", "") +
		job("held", "manual", "retention = \"off\"\nverify = \"off\"\n[job.hooks]\nafter = \"touch "+mark+"; cat "+hold+"\"", src))
	w.must(exitOK, "job", "run", "held")
	p := w.startNJ("tick")
	eventually(t, patience, 100*time.Millisecond, "the run is in its after hook", func() bool {
		select {
		case <-p.done:
			t.Fatalf("the tick ended before its run reached the after hook\n%s", p.wait(t, patience))
		default:
		}
		_, err := os.Stat(mark)
		return err == nil
	})
	p.signal(t, syscall.SIGKILL)
	if res := p.wait(t, patience); res.Code != -1 {
		t.Fatalf("the tick was not killed\n%s", res)
	}
	snaps := w.snapshots()
	runs := w.runsOf("held")
	if len(snaps) != 1 || len(runs) != 1 || runs[0].Status != "running" {
		t.Fatalf("after the kill: snapshots %+v, runs %+v; want one snapshot and the run left running", snaps, runs)
	}

	next := w.tick(exitPartial)
	if len(next.Reclaimed) != 0 {
		t.Errorf("the next tick reclaimed %+v, want the run recorded from its snapshot", next.Reclaimed)
	}
	runs = w.runsOf("held")
	if len(runs) != 1 {
		t.Fatalf("runs %+v, want the one run and no retry", runs)
	}
	r := runs[0]
	if r.Status != "partial_failure" || len(r.Snapshots) != 1 || r.Snapshots[0].SnapshotID != snaps[0].ID ||
		!strings.Contains(r.Message, "recorded by a later pass") || !strings.Contains(r.Message, "hook after") {
		t.Errorf("run after the next tick: %s %q snapshots %+v; want partial_failure with snapshot %s, recorded later, naming the after hook",
			r.Status, r.Message, r.Snapshots, snaps[0].ID)
	}
}
