//go:build linux

package jobs

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/restore"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// A command source's standard output becomes one file of its snapshot,
// bit-identical, in a snapshot the job's retention, verify and drill
// accept (MadeByJob); a command that fails, cannot start or times out
// saves no snapshot and is a skipped object with its standard error.
func TestCommandSources(t *testing.T) {
	data := make([]byte, 500<<10)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		command    func(t *testing.T, w *hookWorld) []string
		timeout    time.Duration
		withPath   bool // a path source beside it
		wantStatus string
		wantCode   string
		wantReason []string
	}{
		{
			name: "a dump",
			command: func(t *testing.T, w *hookWorld) []string {
				f := filepath.Join(w.dir, "dump")
				if err := os.WriteFile(f, data, 0o600); err != nil {
					t.Fatal(err)
				}
				return script(t, w.dir, "dump.sh", `[ "$NIGHTJAR_SOURCE" = "db.sql" ] && [ -z "$NIGHTJAR_PASSWORD" ] || exit 9
echo "pg_dump: warning: something to note" >&2
cat "`+f+`"`)
			},
			wantStatus: pass.StatusSucceeded,
		},
		{
			name: "a dump cut short by a failure, beside a good path",
			command: func(t *testing.T, w *hookWorld) []string {
				return []string{"/bin/sh", "-c", `head -c 100000 /dev/zero; echo "pg_dump: connection lost" >&2; exit 3`}
			},
			withPath:   true,
			wantStatus: pass.StatusPartialFailure,
			wantCode:   pass.CodeObjectsSkipped,
			wantReason: []string{"command failed: exit status 3: pg_dump: connection lost; no snapshot was saved"},
		},
		{
			name: "the only source fails",
			command: func(t *testing.T, w *hookWorld) []string {
				return []string{"/bin/sh", "-c", `echo "no such database" >&2; exit 3`}
			},
			wantStatus: pass.StatusFailed,
			wantCode:   "ALL_SOURCES_FAILED",
			wantReason: []string{"exit status 3: no such database"},
		},
		{
			name: "a command that cannot start",
			command: func(t *testing.T, w *hookWorld) []string {
				return []string{filepath.Join(w.dir, "no-such-dump")}
			},
			withPath:   true,
			wantStatus: pass.StatusPartialFailure,
			wantCode:   pass.CodeObjectsSkipped,
			wantReason: []string{"command failed: fork/exec"},
		},
		{
			name: "a command past its timeout",
			command: func(t *testing.T, w *hookWorld) []string {
				block := fifo(t, w.dir, "block")
				return []string{"/bin/sh", "-c", `echo "started" >&2; cat "` + block + `"`}
			},
			timeout:    300 * time.Millisecond,
			withPath:   true,
			wantStatus: pass.StatusPartialFailure,
			wantCode:   pass.CodeObjectsSkipped,
			wantReason: []string{"did not end within 300ms and was stopped"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newHookWorld(t)
			ctx := context.Background()
			sources := []SourceSpec{{Path: backup.StreamPath("db.sql"), Command: c.command(t, w), Timeout: c.timeout}}
			if c.withPath {
				sources = append(sources, SourceSpec{Path: w.src})
			}
			res, err := execute(ctx, w.executor(Hooks{}, sources...))
			v := pass.Judge(res, err)
			if v.Status != c.wantStatus || v.Code != c.wantCode {
				t.Fatalf("status %s code %s (%s), want %s %s", v.Status, v.Code, v.Message, c.wantStatus, c.wantCode)
			}
			snaps, err := w.r.Snapshots(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var dump []string
			for _, s := range snaps {
				if len(s.Paths) == 1 && s.Paths[0] == "/db.sql" {
					dump = append(dump, s.ID)
				}
			}
			if c.wantStatus != pass.StatusSucceeded {
				if len(dump) != 0 {
					t.Errorf("a failed command left snapshots %q", dump)
				}
				if len(res.Figures.Skipped) != 1 || res.Figures.Skipped[0].Object != "source /db.sql" {
					t.Fatalf("skipped %+v, want the command source", res.Figures.Skipped)
				}
				for _, want := range c.wantReason {
					if !strings.Contains(res.Figures.Skipped[0].Reason, want) {
						t.Errorf("reason %q lacks %q", res.Figures.Skipped[0].Reason, want)
					}
				}
				if !strings.Contains(res.Output, "== command source db.sql (standard error): ") {
					t.Errorf("output lacks the command's standard error:\n%s", res.Output)
				}
				return
			}
			if len(dump) != 1 || len(res.Snapshots) != 1 || res.Snapshots[0].SnapshotID != dump[0] || res.Snapshots[0].Source != "/db.sql" {
				t.Fatalf("snapshots %q, result %+v: want one of /db.sql", dump, res.Snapshots)
			}
			host, _ := os.Hostname()
			snap, err := w.r.FindSnapshot(ctx, dump[0], nil)
			if err != nil {
				t.Fatal(err)
			}
			if !MadeByJob(hookJob.Name, host, []string{"/db.sql"})(snap) {
				t.Errorf("MadeByJob refuses the command source's snapshot %+v", snap)
			}
			if snap.Run != 41 || len(snap.ID) != 32 {
				t.Errorf("the command source's snapshot %s records run %d: want a 32-hex-digit ID and run 41", snap.ID, snap.Run)
			}
			if err := w.r.LoadIndex(ctx); err != nil {
				t.Fatal(err)
			}
			target := t.TempDir()
			if _, err := restore.Run(ctx, w.r, snap, restore.Options{Target: target, Verify: true}); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(target, "db.sql"))
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("restored %d bytes (%v), not the %d the command wrote", len(got), err, len(data))
			}
			if !strings.Contains(res.Output, "== command source db.sql (standard error): ok\npg_dump: warning: something to note\n") {
				t.Errorf("output lacks the command's standard error:\n%s", res.Output)
			}
		})
	}
}

// Cancelling a run stops its command source with its process group, and
// the after hook runs all the same, told that the run was cancelled.
func TestCancelStopsACommandSourceAndRunsAfter(t *testing.T) {
	w := newHookWorld(t)
	ready := fifo(t, w.dir, "ready")
	block := fifo(t, w.dir, "block")
	dump := script(t, w.dir, "dump.sh", `printf 'partial dump'
cat "`+block+`" &
echo $! > "`+ready+`"
wait`)
	e := w.executor(Hooks{After: w.logger(t, "after", 0), OnFailure: w.logger(t, "fail", 0)},
		SourceSpec{Path: backup.StreamPath("db.sql"), Command: dump})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan pass.Verdict, 1)
	go func() {
		res, err := execute(ctx, e)
		done <- pass.Judge(res, err)
	}()
	pidText, err := os.ReadFile(ready)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if v := <-done; v.Status != pass.StatusCancelled {
		t.Errorf("status %s (%s), want cancelled", v.Status, v.Message)
	}
	if !endsSoon(t, child) {
		t.Errorf("the command's child %d still runs after the cancellation", child)
	}
	if got := w.lines(t); strings.Join(got, ",") != "after cancelled CANCELLED" {
		t.Errorf("hooks after the cancellation: %q, want after alone, with status cancelled", got)
	}
	if snaps, err := w.r.Snapshots(context.Background()); err != nil || len(snaps) != 0 {
		t.Errorf("snapshots after a cancelled dump: %d (%v), want none", len(snaps), err)
	}
}

// A command that exits but leaves a process holding its output open (a
// daemon it started) does not hold the run: killGrace after the command
// exited, the rest of its group is killed and the source fails, saying
// why, with no snapshot.
func TestCommandSourceLeavingItsOutputOpenFails(t *testing.T) {
	w := newHookWorld(t)
	pidFile := filepath.Join(w.dir, "child.pid")
	dump := script(t, w.dir, "dump.sh", `sleep 30 2>/dev/null &
echo $! > "`+pidFile+`"
echo data`)
	res, err := execute(context.Background(), w.executor(Hooks{},
		SourceSpec{Path: backup.StreamPath("db.sql"), Command: dump}, SourceSpec{Path: w.src}))
	if v := pass.Judge(res, err); v.Status != pass.StatusPartialFailure {
		t.Fatalf("status %s (%s), want partial_failure", v.Status, v.Message)
	}
	const want = "the command exited but a process it started kept its output open; no snapshot was saved"
	if len(res.Figures.Skipped) != 1 || res.Figures.Skipped[0].Object != "source /db.sql" ||
		!strings.Contains(res.Figures.Skipped[0].Reason, want) {
		t.Errorf("skipped %+v, want the command source: %s", res.Figures.Skipped, want)
	}
	if len(res.Snapshots) != 1 || res.Snapshots[0].Source != w.src {
		t.Errorf("snapshots %+v: want only the path's", res.Snapshots)
	}
	pidText, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if child, _ := strconv.Atoi(strings.TrimSpace(string(pidText))); !endsSoon(t, child) {
		t.Errorf("the command's child %d still runs", child)
	}
}
