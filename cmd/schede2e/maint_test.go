//go:build linux

package schede2e

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A repository with prune = SPEC has a maintenance job of its own,
// repository:NAME: a tick past its slot runs a prune run (kind prune in
// runs). While the prune runs, held in its repository's password command
// until the test releases it, job explain of a backup job of that
// repository names the maintenance, and another tick holds the job's
// queued backup with that reason; the backup runs once the prune has
// ended.
//
// The password command holds the prune run as it opens the repository:
// the tick reads no password before a run needs it.
func TestScheduledPruneHoldsTheRepositorysBackups(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRandomFile(t, filepath.Join(src, "blob"), 5, 2_000_000)
	blocked, release := w.path("block-password"), w.path("release-password")
	w.writeConfig(`[scheduler]
state = "{{state}}"

[repository.main]
path = "{{repo}}"
password_command = "if [ -e {{dir}}/block-password ]; then rm {{dir}}/block-password; while [ ! -e {{dir}}/release-password ] && [ -d {{dir}} ]; do sleep 0.1; done; fi; cat {{pw}}"
password_command_timeout = "1h"
create_if_missing = true
prune = "weekly sun 04:00"
` + job("a", "manual", "", src))

	res := w.must(exitOK, "config", "validate")
	if !strings.Contains(res.Stdout, "repository:main: prune weekly on Sunday at 04:00") {
		t.Errorf("config validate does not list the maintenance:\n%s", res)
	}
	sunday := at(t, "2026-06-07T03:00:00Z") // a Sunday, before the slot
	w.must(exitOK, "job", "run", "a", "--wait", "--at", rfc(sunday))
	w.tick(exitOK, "--at", rfc(sunday)) // nothing due yet

	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	slot := at(t, "2026-06-07T04:00:30Z")
	ticker := w.startNJ("tick", "--json", "--at", rfc(slot))
	var prune runRec
	eventually(t, patience, 100*time.Millisecond, "the prune run is running and opening the repository", func() bool {
		select {
		case <-ticker.done:
			t.Fatalf("the tick ended before the prune was held\n%s", ticker.wait(t, patience))
		default:
		}
		if _, err := os.Stat(blocked); !errors.Is(err, os.ErrNotExist) {
			return false
		}
		for _, r := range w.runs() {
			if r.Job == "repository:main" && r.Status == "running" {
				prune = r
				return true
			}
		}
		return false
	})
	if prune.Kind != "prune" || prune.Trigger != "schedule" {
		t.Errorf("maintenance run %+v, want kind prune, trigger schedule", prune)
	}
	holds := "repository maintenance (prune) of main is running (run "
	later := rfc(slot.Add(30 * time.Second))
	if res := w.must(exitOK, "job", "explain", "a", "--at", later); !strings.Contains(res.Stdout, "a run now would be waiting: "+holds) {
		t.Errorf("job explain a while the prune runs does not name it:\n%s", res)
	}
	w.must(exitOK, "job", "run", "a", "--at", later)
	if res := w.must(exitOK, "job", "explain", "a", "--at", later); !strings.Contains(res.Stdout, "waiting: "+holds) || !strings.Contains(res.Stdout, "job a: waiting") {
		t.Errorf("job explain a with a queued backup while the prune runs:\n%s", res)
	}
	held := w.tick(exitOK, "--at", later)
	if len(held.Started) != 0 || len(held.Held) != 1 || held.Held[0].Job != "a" || !strings.Contains(held.Held[0].Reason, holds) {
		t.Errorf("a tick while the prune runs started %+v and held %+v, want a's backup held by the maintenance", held.Started, held.Held)
	}

	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tickRes := ticker.wait(t, patience)
	var rec passRec
	decodeWhole(t, tickRes, &rec)
	if tickRes.Code != exitOK || len(rec.Finished) != 1 || rec.Finished[0].ID != prune.ID || rec.Finished[0].Status != "succeeded" {
		t.Fatalf("the tick finished %+v, want prune run %d succeeded\n%s", rec.Finished, prune.ID, tickRes)
	}
	if got := runByID(t, w.runsOf("repository:main"), prune.ID); got.Kind != "prune" || got.Counters["packs_deleted"] != 0 {
		t.Errorf("prune run as runs lists it: %+v", got)
	}

	after := w.tick(exitOK, "--at", rfc(slot.Add(time.Minute)))
	if len(after.Finished) != 1 || after.Finished[0].Job != "a" || after.Finished[0].Kind != "backup" || after.Finished[0].Status != "succeeded" {
		t.Errorf("after the prune, the tick finished %+v, want a's held backup succeeded", after.Finished)
	}

	// The maintenance is a job: listed with its kind and next slot, and
	// job run queues a prune run.
	var listed []struct {
		Name    string  `json:"name"`
		Kind    string  `json:"kind"`
		NextRun *string `json:"next_run"`
	}
	decodeWhole(t, w.must(exitOK, "job", "list", "--json", "--at", rfc(slot.Add(time.Minute))), &listed)
	found := false
	for _, j := range listed {
		if j.Name == "repository:main" {
			found = true
			if j.Kind != "prune" || j.NextRun == nil || *j.NextRun != "2026-06-14T04:00:00Z" {
				t.Errorf("job list: %s has kind %q, next run %v; want prune, next Sunday 04:00", j.Name, j.Kind, j.NextRun)
			}
		}
	}
	if !found {
		t.Errorf("job list --json does not list repository:main: %+v", listed)
	}
	var manual runRec
	decodeWhole(t, w.must(exitOK, "job", "run", "repository:main", "--wait", "--json", "--at", rfc(slot.Add(2*time.Minute))), &manual)
	if manual.Kind != "prune" || manual.Trigger != "manual" || manual.Status != "succeeded" {
		t.Errorf("job run repository:main --wait: %+v, want a manual prune run that succeeded", manual)
	}
}

// A job with drill = SPEC has a drill job of its own, JOB:drill, whose
// slots queue drill runs that the executor runs as drills of the job: with
// no snapshot yet one fails with NO_SNAPSHOT (not retried); after a backup
// one restores and compares the job's snapshot; slots missed while no tick
// ran are caught up by one run.
func TestScheduledDrillRunsAsADrillOfItsJob(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	writeRandomFile(t, filepath.Join(src, "blob"), 9, 300_000)
	w.writeConfig(header("", "") + job("a", "manual", `drill = "monthly 1 03:00"`, src))
	w.tick(exitOK, "--at", "2026-05-31T12:00:00Z") // the drill's first slot: June 1 03:00

	drillOf := func(p passRec) runRec {
		t.Helper()
		if len(p.Finished) != 1 || p.Finished[0].Job != "a:drill" || p.Finished[0].Kind != "drill" {
			t.Fatalf("the tick finished %+v, want one drill run of a:drill", p.Finished)
		}
		return p.Finished[0]
	}
	none := drillOf(w.tick(exitFailure, "--at", "2026-06-01T03:00:30Z")) // a failed run: exit 1
	if none.Trigger != "schedule" || none.Status != "failed" || none.ErrorCode != "NO_SNAPSHOT" || none.ErrorClass != "config" {
		t.Errorf("drill before any backup: %+v, want failed with NO_SNAPSHOT, class config", none)
	}
	if runs := w.runsOf("a:drill"); len(runs) != 1 {
		t.Errorf("runs of a:drill %+v, want the one failed run and no retry", runs)
	}

	w.must(exitOK, "job", "run", "a", "--wait", "--at", "2026-06-15T12:00:00Z")
	ok := drillOf(w.tick(exitOK, "--at", "2026-07-01T03:00:30Z"))
	if ok.Trigger != "schedule" || ok.Status != "succeeded" || ok.Counters["files_checked"] != 1 || ok.Counters["bytes_checked"] != 300_000 {
		t.Errorf("drill after a backup: %+v, want succeeded, one file of 300000 bytes checked", ok)
	}

	late := drillOf(w.tick(exitOK, "--at", "2026-09-01T05:00:00Z"))
	if late.Trigger != "catch_up" || late.MissedSlots != 2 || late.Status != "succeeded" {
		t.Errorf("drill after two missed slots: %+v, want one succeeded catch-up run for 2 missed slots", late)
	}
	// A drill by hand of a job with a drill schedule is a run of the
	// same scheduled work, listed with the scheduled ones.
	w.must(exitOK, "drill", "a", "--at", "2026-09-02T12:00:00Z")
	if runs := w.runsOf("a:drill"); len(runs) != 4 || runs[3].Kind != "drill" || runs[3].Trigger != "manual" || runs[3].Status != "succeeded" {
		t.Errorf("runs of a:drill %+v, want the manual drill last of 4", runs)
	}
	if runs := w.runsOf("a"); len(runs) != 1 || runs[0].Kind != "backup" {
		t.Errorf("runs of job a %+v, want only its backup: drills are runs of a:drill", runs)
	}
}
