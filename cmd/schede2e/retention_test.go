//go:build linux

package schede2e

import (
	"path/filepath"
	"slices"
	"testing"
)

// retentionRec is what job retention --json prints (forget's --dry-run
// document).
type retentionRec struct {
	DryRun bool   `json:"dry_run"`
	Policy string `json:"policy"`
	Groups []struct {
		Group string `json:"group"`
		Keep  []struct {
			ID      string   `json:"id"`
			Reasons []string `json:"reasons"`
		} `json:"keep"`
		Remove []struct {
			ID string `json:"id"`
		} `json:"remove"`
	} `json:"groups"`
	Forgotten []string `json:"forgotten"`
}

// snapshotsOf returns the IDs of the snapshots the runs made, oldest first.
func snapshotsOf(runs []runRec) []string {
	var ids []string
	for _, r := range runs {
		for _, s := range r.Snapshots {
			ids = append(ids, s.SnapshotID)
		}
	}
	return ids
}

func snapshotIDs(snaps []snapRec) []string {
	var ids []string
	for _, s := range snaps {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// job retention lists the job's own snapshots only, with the policy's
// decisions, and changes nothing: another job's snapshots and a
// command-line backup of the same path (even a newer one) are not in it.
func TestJobRetentionListsOnlyTheJobsSnapshotsAndChangesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	srcA, srcB := w.path("a"), w.path("b")
	makeTree(t, srcA, 1)
	makeTree(t, srcB, 2)
	w.writeConfig(header("", "") + job("a", "manual", `retention = "off"`, srcA) + job("b", "manual", `retention = "off"`, srcB))
	for i := 0; i < 3; i++ {
		w.must(exitOK, "job", "run", "a", "--wait")
		w.must(exitOK, "job", "run", "b", "--wait")
	}
	if res := w.run("backup", srcA, "--time", "2099-01-01T00:00:00Z", "-r", w.repo); res.Code != exitOK {
		t.Fatalf("command-line backup failed\n%s", res)
	}
	before := snapshotIDs(w.snapshots())
	own := snapshotsOf(w.runsOf("a"))
	if len(own) != 3 || len(before) != 7 {
		t.Fatalf("job a made %v, the repository holds %v: want 3 of 7", own, before)
	}

	w.writeConfig(header("", "") + job("a", "manual", `retention = { last = 2 }`, srcA) + job("b", "manual", `retention = "off"`, srcB))
	var out retentionRec
	decodeWhole(t, w.must(exitOK, "job", "retention", "a", "--json"), &out)
	if !out.DryRun || out.Policy != "keep 2 last snapshots" || len(out.Groups) != 1 {
		t.Fatalf("job retention = %+v, want a dry run of keep 2 last snapshots over one group", out)
	}
	g := out.Groups[0]
	var kept []string
	for _, k := range g.Keep {
		kept = append(kept, k.ID)
	}
	if !slices.Equal(kept, []string{own[2], own[1]}) || len(g.Remove) != 1 || g.Remove[0].ID != own[0] {
		t.Errorf("keep %v, remove %+v; want keep %v, remove %s", kept, g.Remove, []string{own[2], own[1]}, own[0])
	}
	if !slices.Equal(g.Keep[0].Reasons, []string{"last", "newest"}) {
		t.Errorf("the newest of job a's snapshots stays for %v, want [last newest]", g.Keep[0].Reasons)
	}
	if !slices.Equal(out.Forgotten, []string{own[0]}) {
		t.Errorf("would forget %v, want %v", out.Forgotten, own[:1])
	}
	if after := snapshotIDs(w.snapshots()); !slices.Equal(after, before) {
		t.Errorf("job retention changed the repository: %v, was %v", after, before)
	}

	w.writeConfig(header("", "") + job("a", "manual", `retention = "off"`, srcA))
	decodeWhole(t, w.must(exitOK, "job", "retention", "a", "--json"), &out)
	if out.Policy != "off" || len(out.Groups) != 0 {
		t.Errorf("retention off: %+v, want policy off and no groups", out)
	}
	if res := w.nj("job", "retention", "nope"); res.Code != exitUsage {
		t.Errorf("job retention of an unknown job: exit %d, want %d\n%s", res.Code, exitUsage, res)
	}
}

// A job's retention runs as scheduled work: each succeeded backup queues a
// run of kind retention (job run --wait runs it too, tick at its next
// pass), which forgets the job's snapshots beyond its policy and none of
// another job's in the same repository. What stays checks clean and
// restores bit-identical.
func TestRetentionRunsAfterEachBackupAndKeepsOtherJobsSnapshots(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	srcA, srcB := w.path("a"), w.path("b")
	makeTree(t, srcA, 11)
	makeTree(t, srcB, 12)
	w.writeConfig(header("", "") + job("a", "manual", `retention = { last = 2 }`, srcA) + job("b", "manual", `retention = { last = 10 }`, srcB))

	for i := 0; i < 3; i++ {
		w.must(exitOK, "job", "run", "a", "--wait")
		w.must(exitOK, "job", "run", "b", "--wait")
	}
	// The same by tick: the backup's pass queues the retention run, the
	// next pass runs it.
	w.must(exitOK, "job", "run", "a")
	first := w.tick(exitOK)
	if len(first.Finished) != 1 || first.Finished[0].Kind != "backup" || first.Finished[0].Status != "succeeded" {
		t.Fatalf("the first tick finished %+v, want a's backup", first.Finished)
	}
	if len(first.Requeued) != 1 || first.Requeued[0].Kind != "retention" || first.Requeued[0].Job != "a" {
		t.Fatalf("the first tick queued %+v, want a retention run of job a", first.Requeued)
	}
	second := w.tick(exitOK)
	if len(second.Finished) != 1 || second.Finished[0].ID != first.Requeued[0].ID || second.Finished[0].Status != "succeeded" {
		t.Fatalf("the second tick finished %+v, want retention run %d succeeded", second.Finished, first.Requeued[0].ID)
	}

	var backupsA, retentionA []runRec
	for _, r := range w.runsOf("a") {
		switch r.Kind {
		case "backup":
			backupsA = append(backupsA, r)
		case "retention":
			retentionA = append(retentionA, r)
		default:
			t.Errorf("run %d of job a has kind %q", r.ID, r.Kind)
		}
	}
	if len(backupsA) != 4 || len(retentionA) != 4 {
		t.Fatalf("job a has %d backup and %d retention runs, want 4 of each", len(backupsA), len(retentionA))
	}
	forgotten := int64(0)
	for i, r := range retentionA {
		if r.Status != "succeeded" || r.ID != backupsA[i].ID+1 {
			t.Errorf("retention run %+v: want succeeded, right after backup run %d", r, backupsA[i].ID)
		}
		forgotten += r.Counters["snapshots_forgotten"]
		if kept := r.Counters["snapshots_kept"]; kept != int64(min(i+1, 2)) {
			t.Errorf("retention run %d kept %d snapshots, want %d", r.ID, kept, min(i+1, 2))
		}
	}
	if forgotten != 2 {
		t.Errorf("job a's retention runs forgot %d snapshots in all, want 2", forgotten)
	}
	for _, r := range w.runsOf("b") {
		if r.Kind == "retention" && (r.Status != "succeeded" || r.Counters["snapshots_forgotten"] != 0) {
			t.Errorf("job b's retention run %+v: want succeeded, nothing forgotten", r)
		}
	}

	ownA := snapshotsOf(backupsA)
	want := append([]string{ownA[2], ownA[3]}, snapshotsOf(w.runsOf("b"))...)
	slices.Sort(want)
	snaps := w.snapshots()
	if got := snapshotIDs(snaps); !slices.Equal(got, want) {
		t.Fatalf("the repository holds %v, want job a's 2 newest and all 3 of job b: %v", got, want)
	}
	if res := w.run("check", "--read-data", "-r", w.repo); res.Code != exitOK {
		t.Fatalf("check --read-data after retention\n%s", res)
	}
	sources := map[string]string{}
	for _, r := range append(backupsA, w.runsOf("b")...) {
		for _, s := range r.Snapshots {
			sources[s.SnapshotID] = s.Source
		}
	}
	for _, s := range snaps {
		target := w.path("restore-" + s.ID)
		if res := w.run("restore", s.ID, "-r", w.repo, "--target", target, "--verify"); res.Code != exitOK {
			t.Fatalf("restore %s\n%s", s.ID, res)
		}
		src := sources[s.ID]
		compareTrees(t, manifest(t, src), manifest(t, filepath.Join(target, src)))
	}
}
