//go:build linux

package schede2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A job of "daily 02:00" in Europe/Berlin is first seen on the Saturday
// before the clocks go forward, runs on Sunday when the missing 02:00 ends
// (03:00 CEST), and its snapshot brings the deleted source back identical.
func TestScheduledBackupAcrossDSTAndRestore(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutRepository(t)
	src := w.path("src")
	makeTree(t, src, 1)
	want := manifest(t, src)
	w.writeConfig(header("", "") + job("daily", "daily 02:00", `time_zone = "Europe/Berlin"`, src))

	// What the schedule package says: 02:00 does not exist on 2026-03-29,
	// the run is when the gap ends, 03:00 CEST = 01:00 UTC.
	slot := at(t, "2026-03-29T01:00:00Z")
	following := at(t, "2026-03-30T00:00:00Z") // 02:00 CEST
	res := w.run("schedule", "preview", "daily 02:00", "--tz", "Europe/Berlin", "--from", "2026-03-28T12:00:00Z", "--count", "2", "--json")
	var preview struct {
		Slots []time.Time `json:"slots"`
	}
	decodeWhole(t, res, &preview)
	if len(preview.Slots) != 2 || !preview.Slots[0].Equal(slot) || !preview.Slots[1].Equal(following) {
		t.Fatalf("schedule preview gives %v, want [%s %s]", preview.Slots, rfc(slot), rfc(following))
	}

	// First sight: nothing is due, the next run is stored.
	first := w.tick(exitOK, "--at", "2026-03-28T12:00:00Z")
	if n := len(first.Claimed) + len(first.Started) + len(first.Finished); n != 0 {
		t.Fatalf("first sight of the job ran something: %+v", first)
	}
	if _, err := os.Stat(w.repo); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("nothing ran, yet the repository exists (%v)", err)
	}
	if j := w.showJob("daily", at(t, "2026-03-28T12:00:01Z")); j.NextRun == nil || *j.NextRun != rfc(slot) {
		t.Fatalf("next run after first sight: %v, want %s", j.NextRun, rfc(slot))
	}

	second := w.tick(exitOK, "--at", "2026-03-29T01:00:30Z")
	if len(second.Finished) != 1 || second.Finished[0].Status != "succeeded" {
		t.Fatalf("the due tick did not finish one succeeded run: %+v", second)
	}

	runs := w.runs()
	if len(runs) != 1 {
		t.Fatalf("want exactly one run, got %+v", runs)
	}
	r := runs[0]
	if r.Status != "succeeded" || r.Trigger != "schedule" || r.Attempt != 1 || r.Job != "daily" {
		t.Errorf("run: status %s trigger %s attempt %d job %s, want succeeded schedule 1 daily", r.Status, r.Trigger, r.Attempt, r.Job)
	}
	if r.ScheduledAt == nil || !r.ScheduledAt.Equal(slot) {
		t.Errorf("run scheduled at %v, want the slot %s", r.ScheduledAt, rfc(slot))
	}
	if r.MissedSlots != 0 || r.ErrorClass != "" || r.FilesSkipped != 0 || len(r.Skipped) != 0 {
		t.Errorf("a clean on-time run has missed %d, class %q, skipped %d %v", r.MissedSlots, r.ErrorClass, r.FilesSkipped, r.Skipped)
	}
	if r.DelaySeconds == nil || *r.DelaySeconds < 30 || *r.DelaySeconds > 120 {
		t.Errorf("delay_seconds %v: the tick came 30 s after the slot", r.DelaySeconds)
	}
	if r.Files != 6 {
		t.Errorf("run counted %d files, the source has 6", r.Files)
	}
	if len(r.Snapshots) != 1 {
		t.Fatalf("run made %d snapshots, want 1: %+v", len(r.Snapshots), r.Snapshots)
	}
	sid := r.Snapshots[0].SnapshotID
	if !snapshotIDPattern.MatchString(sid) {
		t.Errorf("snapshot ID %q: want 32 hex digits, as the command line gives", sid)
	}
	if r.Snapshots[0].Source != src {
		t.Errorf("snapshot source %q, want %q", r.Snapshots[0].Source, src)
	}

	snaps := w.snapshots()
	i := slices.IndexFunc(snaps, func(s snapRec) bool { return s.ID == sid })
	if len(snaps) != 1 || i < 0 {
		t.Fatalf("repository holds %+v, want exactly the run's snapshot %s", snaps, sid)
	}
	if !slices.Equal(snaps[i].Paths, []string{src}) || !slices.Contains(snaps[i].Tags, "job:daily") {
		t.Errorf("snapshot paths %v tags %v, want [%s] and job:daily", snaps[i].Paths, snaps[i].Tags, src)
	}
	if snaps[i].Run != r.ID || snaps[i].Job != "daily" {
		t.Errorf("snapshot records run %d of job %q, want run %d of daily", snaps[i].Run, snaps[i].Job, r.ID)
	}
	byRunRes := w.run("snapshots", "--json", "-r", w.repo, "--run", strconv.FormatInt(r.ID, 10))
	var byRun []snapRec
	decodeWhole(t, byRunRes, &byRun)
	if byRunRes.Code != exitOK || len(byRun) != 1 || byRun[0].ID != sid {
		t.Errorf("snapshots --run %d: exit %d, %+v; want the run's snapshot %s", r.ID, byRunRes.Code, byRun, sid)
	}

	// The next slot was written at claim time, from the slot.
	j := w.showJob("daily", at(t, "2026-03-29T01:01:00Z"))
	if j.NextRun == nil || *j.NextRun != rfc(following) {
		t.Errorf("next run after the DST run: %v, want %s", j.NextRun, rfc(following))
	}
	if j.LastRun == nil || j.LastRun.ID != r.ID {
		t.Errorf("job show: last run %+v, want run %d", j.LastRun, r.ID)
	}

	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	target := w.path("restored")
	res = w.run("restore", "latest", "-r", w.repo, "--target", target, "--verify")
	if res.Code != exitOK {
		t.Fatalf("restore failed\n%s", res)
	}
	compareTrees(t, want, manifest(t, filepath.Join(target, src)))
}

// A job with one good and one missing source ends partial_failure (exit 3),
// names the missing source with its reason, is not retried, and the good
// source's snapshot is complete.
func TestPartialFailureKeepsTheGoodSource(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	good := w.path("good")
	makeTree(t, good, 2)
	want := manifest(t, good)
	missing := w.path("missing")
	w.writeConfig(header("", "") + job("two", "manual", "", good, missing))

	w.must(exitOK, "job", "run", "two")
	p := w.tick(exitPartial) // with --json, stdout holds only the JSON even on exit 3
	if len(p.Finished) != 1 || p.Finished[0].Status != "partial_failure" {
		t.Fatalf("tick finished %+v, want one partial_failure", p.Finished)
	}

	runs := w.runs()
	if len(runs) != 1 {
		t.Fatalf("want one run and no retry (a partial failure is not retried), got %+v", runs)
	}
	r := runs[0]
	if r.Status != "partial_failure" {
		t.Fatalf("run status %s, want partial_failure", r.Status)
	}
	if r.FilesSkipped < 1 || !strings.Contains(r.Message, "skipped") {
		t.Errorf("files_skipped %d, message %q: want the skipped source counted and said", r.FilesSkipped, r.Message)
	}
	named := false
	for _, s := range r.Skipped {
		if strings.Contains(s.Object, missing) {
			named = true
			if strings.TrimSpace(s.Reason) == "" {
				t.Errorf("skipped %s without a reason", s.Object)
			}
		}
		if strings.Contains(s.Object, good) {
			t.Errorf("the good source is listed as skipped: %+v", s)
		}
	}
	if !named {
		t.Errorf("skipped list %+v does not name the missing source %s", r.Skipped, missing)
	}
	if len(r.Snapshots) != 1 || r.Snapshots[0].Source != good || !snapshotIDPattern.MatchString(r.Snapshots[0].SnapshotID) {
		t.Fatalf("run snapshots %+v, want one of %s with a 32-hex-digit ID", r.Snapshots, good)
	}

	snaps := w.snapshots()
	if len(snaps) != 1 || snaps[0].ID != r.Snapshots[0].SnapshotID || !slices.Equal(snaps[0].Paths, []string{good}) {
		t.Fatalf("repository holds %+v, want only the good source's snapshot %s", snaps, r.Snapshots[0].SnapshotID)
	}
	target := w.path("restored")
	res := w.run("restore", snaps[0].ID, "-r", w.repo, "--target", target, "--verify")
	if res.Code != exitOK {
		t.Fatalf("restore of the good source failed\n%s", res)
	}
	compareTrees(t, want, manifest(t, filepath.Join(target, good)))
	if _, err := os.Lstat(filepath.Join(target, missing)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the missing source appears in the restore: %v", err)
	}
}

// Four tick processes started at once on ten due jobs: each job runs once,
// in exactly one of them, and makes one snapshot.
func TestFourConcurrentTicksRunEachJobOnce(t *testing.T) {
	t.Parallel()
	// The repository exists beforehand (newWorld): this test is about
	// claiming (the creation race of a new repository has its own test).
	w := newWorld(t)
	cfg := header("max_concurrent_runs = 10", "max_concurrent_runs = 10")
	const jobs = 10
	for i := range jobs {
		dir := w.path(fmt.Sprintf("src%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "file.txt"), []byte(fmt.Sprintf("content of job %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg += job(fmt.Sprintf("job%d", i), "hourly :00", "", dir)
	}
	w.writeConfig(cfg)
	w.must(exitOK, "job", "list", "--at", "2026-05-01T10:30:00Z") // first sight: next runs at 11:00

	var procs []*proc
	for range 4 {
		procs = append(procs, w.startNJ("tick", "--json", "--at", "2026-05-01T11:00:10Z"))
	}
	finishedBy := map[int64]int{}
	claimedBy := map[int64]int{}
	for i, p := range procs {
		res := p.wait(t, patience)
		if res.Code != exitOK {
			t.Errorf("tick %d: want exit 0\n%s", i, res)
			continue
		}
		var out passRec
		decodeWhole(t, res, &out)
		for _, r := range out.Claimed {
			claimedBy[r.ID]++
		}
		for _, r := range out.Finished {
			finishedBy[r.ID]++
		}
		t.Logf("tick %d: claimed %d, started %d, finished %d, held %d", i, len(out.Claimed), len(out.Started), len(out.Finished), len(out.Held))
	}
	for id, n := range claimedBy {
		if n != 1 {
			t.Errorf("run %d was claimed by %d processes", id, n)
		}
	}
	for id, n := range finishedBy {
		if n != 1 {
			t.Errorf("run %d was finished by %d processes", id, n)
		}
	}
	if len(finishedBy) != jobs {
		t.Errorf("the ticks finished %d runs, want %d", len(finishedBy), jobs)
	}

	runs := w.runs()
	perJob := map[string]int{}
	snapIDs := map[string]bool{}
	for _, r := range runs {
		perJob[r.Job]++
		if r.Status != "succeeded" || r.Trigger != "schedule" || r.Attempt != 1 {
			t.Errorf("run %d of %s: %s (%s, attempt %d) %s", r.ID, r.Job, r.Status, r.Trigger, r.Attempt, r.Message)
		}
		if r.ScheduledAt == nil || !r.ScheduledAt.Equal(at(t, "2026-05-01T11:00:00Z")) {
			t.Errorf("run %d scheduled at %v, want 11:00", r.ID, r.ScheduledAt)
		}
		if len(r.Snapshots) != 1 {
			t.Errorf("run %d made %d snapshots", r.ID, len(r.Snapshots))
		}
		for _, s := range r.Snapshots {
			snapIDs[s.SnapshotID] = true
		}
	}
	for i := range jobs {
		if n := perJob[fmt.Sprintf("job%d", i)]; n != 1 {
			t.Errorf("job%d has %d runs, want exactly 1", i, n)
		}
	}
	if len(runs) != jobs {
		t.Errorf("%d runs in all, want %d", len(runs), jobs)
	}
	snaps := w.snapshots()
	if len(snaps) != jobs {
		t.Errorf("repository holds %d snapshots, want %d", len(snaps), jobs)
	}
	for _, s := range snaps {
		if !snapIDs[s.ID] {
			t.Errorf("snapshot %s is not recorded by any run", s.ID)
		}
	}
}

// Several runs that start at once into a repository that does not exist
// yet (create_if_missing = true, as on a fresh server) must all succeed:
// one creates it, the others use it.
func TestFirstRunsIntoANewRepositoryAllSucceed(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutRepository(t)
	cfg := header("max_concurrent_runs = 4", "max_concurrent_runs = 4")
	for i := range 4 {
		dir := w.path(fmt.Sprintf("src%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte(fmt.Sprintf("%d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg += job(fmt.Sprintf("job%d", i), "hourly :00", "", dir)
	}
	w.writeConfig(cfg)
	w.tick(exitOK, "--at", "2026-05-01T10:30:00Z")
	res := w.nj("tick", "--json", "--at", "2026-05-01T11:00:05Z")
	var out passRec
	decodeWhole(t, res, &out)
	if len(out.Started) != 4 {
		t.Fatalf("want the four runs started together, got %d\n%s", len(out.Started), res)
	}
	for _, r := range out.Finished {
		if r.Status != "succeeded" {
			t.Errorf("run %d of %s: %s [%s/%s] %s", r.ID, r.Job, r.Status, r.ErrorClass, r.ErrorCode, r.Message)
		}
	}
	if res.Code != exitOK {
		t.Errorf("tick exit %d, want 0", res.Code)
	}
	if n := len(w.snapshots()); n != 4 {
		t.Errorf("repository holds %d snapshots, want 4", n)
	}
}
