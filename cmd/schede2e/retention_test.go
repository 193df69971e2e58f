package schede2e

import (
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
