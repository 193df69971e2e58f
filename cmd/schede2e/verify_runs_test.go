//go:build linux

package schede2e

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// verifyRunRec is what runs show --json and job show --json add about
// verification.
type verifyRunRec struct {
	runRec
	Snapshots []struct {
		SnapshotID string   `json:"snapshot_id"`
		Verified   string   `json:"verified"`
		Problems   []string `json:"verify_problems"`
	} `json:"snapshots"`
}

type verifyJobRec struct {
	Verification *struct {
		Snapshots    int      `json:"snapshots"`
		Verified     int      `json:"verified"`
		VerifyFailed []string `json:"verify_failed"`
		LastDeep     *string  `json:"last_deep"`
	} `json:"verification"`
}

type verifySnapRec struct {
	ID           string `json:"id"`
	VerifyFailed bool   `json:"verify_failed"`
	Verification *struct {
		Deep     bool     `json:"deep"`
		OK       bool     `json:"ok"`
		Problems []string `json:"problems"`
	} `json:"verification"`
}

// packFiles returns the pack files of a local repository by path, with
// their sizes.
func packFiles(t *testing.T, repo string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(filepath.Join(repo, "data"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lineWith returns the first line of text that contains every one of subs.
func lineWith(text string, subs ...string) string {
	for _, line := range strings.Split(text, "\n") {
		if !slices.ContainsFunc(subs, func(s string) bool { return !strings.Contains(line, s) }) {
			return line
		}
	}
	return ""
}

// After each succeeded backup the scheduler runs a verify run of the job
// and then its retention (job run --wait runs all three; tick one per
// pass). The first verify is deep, the next within deep_verify_every are
// structural. A chunk corrupted on disk passes a structural verification;
// with deep_verify_every = "always" the verify run reads it, fails with
// VERIFY_FAILED, records verify_failed in the repository, and retention
// still runs and keeps the snapshot without counting it. snapshots, job
// show and runs show show verify_failed, and snapshots and job show still
// do after the state database is deleted.
func TestVerifyRunsAfterBackupsAndMarkFailedSnapshots(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("src")
	makeTree(t, src, 21)
	config := func(deepEvery string) string {
		return header("", `deep_verify_every = "`+deepEvery+`"`) + job("a", "manual", "retention = { last = 1 }\nverify = \"on\"", src)
	}
	w.writeConfig(config("7d"))

	w.must(exitOK, "job", "run", "a", "--wait")
	w.must(exitOK, "job", "run", "a", "--wait")
	runs := w.runsOf("a")
	kinds := []string{}
	for _, r := range runs {
		kinds = append(kinds, r.Kind+" "+r.Status)
	}
	want := []string{"backup succeeded", "verify succeeded", "retention succeeded", "backup succeeded", "verify succeeded", "retention succeeded"}
	if !slices.Equal(kinds, want) {
		t.Fatalf("job a's runs %q, want %q", kinds, want)
	}
	if c := runs[1].Counters; c["deep"] != 1 || c["snapshots_verified"] != 1 || c["bytes_read"] == 0 || c["trees_checked"] == 0 || c["blobs_checked"] == 0 {
		t.Errorf("first verify run counters %v: want one snapshot verified deeply", c)
	}
	if c := runs[4].Counters; c["deep"] != 0 || c["snapshots_verified"] != 1 || c["bytes_read"] != 0 {
		t.Errorf("second verify run counters %v: want one snapshot verified structurally (deep within 7d)", c)
	}
	second := runs[3].Snapshots[0].SnapshotID

	// A third backup with new data, by tick: the backup's pass queues the
	// verify run. Its new data pack is corrupted before the verify runs.
	writeRandomFile(t, filepath.Join(src, "new.bin"), 99, 2<<20)
	before := packFiles(t, w.repo)
	w.must(exitOK, "job", "run", "a")
	pass := w.tick(exitOK)
	if len(pass.Requeued) != 1 || pass.Requeued[0].Kind != "verify" || !strings.Contains(pass.Requeued[0].HeldReason, "after backup run") {
		t.Fatalf("the backup's tick queued %+v, want a verify run after the backup", pass.Requeued)
	}
	third := pass.Finished[0].Snapshots[0].SnapshotID
	var biggest string
	var biggestSize int64
	for p, size := range packFiles(t, w.repo) {
		if _, old := before[p]; !old && size > biggestSize {
			biggest, biggestSize = p, size
		}
	}
	if biggest == "" {
		t.Fatal("the third backup wrote no pack")
	}
	if err := os.Chmod(biggest, 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(biggest)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/3] ^= 1
	if err := os.WriteFile(biggest, data, 0o600); err != nil {
		t.Fatal(err)
	}

	w.writeConfig(config("always"))
	verifyPass := w.tick(exitFailure)
	if len(verifyPass.Finished) != 1 {
		t.Fatalf("the verify tick finished %+v, want the verify run", verifyPass.Finished)
	}
	v := verifyPass.Finished[0]
	if v.Kind != "verify" || v.Status != "failed" || v.ErrorClass != "integrity" || v.ErrorCode != "VERIFY_FAILED" ||
		!strings.Contains(v.Message, third) || !strings.Contains(v.Message, "new.bin") || v.Counters["deep"] != 1 {
		t.Fatalf("verify run %+v: want failed, integrity, VERIFY_FAILED, deep, naming %s and new.bin", v, third)
	}
	if len(verifyPass.Requeued) != 1 || verifyPass.Requeued[0].Kind != "retention" {
		t.Fatalf("the verify tick queued %+v, want the retention run", verifyPass.Requeued)
	}
	retention := w.tick(exitOK)
	if len(retention.Finished) != 1 || retention.Finished[0].Kind != "retention" || retention.Finished[0].Status != "succeeded" {
		t.Fatalf("the retention tick finished %+v, want retention succeeded", retention.Finished)
	}

	// Retention kept the failed snapshot and the newest sound one.
	var ids []string
	for _, s := range w.snapshots() {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	wantIDs := []string{second, third}
	slices.Sort(wantIDs)
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("the repository holds %v, want %v: the failed snapshot kept, not counted", ids, wantIDs)
	}

	shown := func(stage string) {
		t.Helper()
		text := w.run("snapshots", "-r", w.repo)
		if text.Code != exitOK || lineWith(text.Stdout, third[:8], "verify_failed", "new.bin") == "" || lineWith(text.Stdout, second[:8], "verify_failed") != "" {
			t.Errorf("%s: snapshots shows no verify_failed for %s alone, with its problem\n%s", stage, third, text)
		}
		var snaps []verifySnapRec
		decodeWhole(t, w.run("snapshots", "--json", "--verify-failed", "-r", w.repo), &snaps)
		if len(snaps) != 1 || snaps[0].ID != third || !snaps[0].VerifyFailed || snaps[0].Verification == nil ||
			snaps[0].Verification.OK || !snaps[0].Verification.Deep || len(snaps[0].Verification.Problems) == 0 {
			t.Errorf("%s: snapshots --verify-failed --json = %+v, want %s alone, deep, with its problems", stage, snaps, third)
		}
		show := w.must(exitOK, "job", "show", "a")
		if !strings.Contains(show.Stdout, "verify_failed: snapshot "+third) {
			t.Errorf("%s: job show does not name %s as verify_failed\n%s", stage, third, show)
		}
		var j verifyJobRec
		decodeWhole(t, w.must(exitOK, "job", "show", "a", "--json"), &j)
		if j.Verification == nil || !slices.Equal(j.Verification.VerifyFailed, []string{third}) || j.Verification.Snapshots != 2 ||
			j.Verification.Verified != 2 || j.Verification.LastDeep == nil {
			t.Errorf("%s: job show --json verification %+v, want 2 snapshots, both verified, %s failed, a deep one", stage, j.Verification, third)
		}
	}
	shown("with the state database")

	show := w.must(exitOK, "runs", "show", strconv.FormatInt(v.ID, 10))
	if !strings.Contains(show.Stdout, "VERIFY_FAILED") || !strings.Contains(show.Stdout, "verify_failed") {
		t.Errorf("runs show of the verify run does not say verify_failed\n%s", show)
	}
	backupRun := pass.Finished[0].ID
	show = w.must(exitOK, "runs", "show", strconv.FormatInt(backupRun, 10))
	if !strings.Contains(show.Stdout, "snapshot "+third+": verify_failed") {
		t.Errorf("runs show of the backup run does not show its snapshot as verify_failed\n%s", show)
	}
	var rec verifyRunRec
	decodeWhole(t, w.must(exitOK, "runs", "show", strconv.FormatInt(backupRun, 10), "--json"), &rec)
	if len(rec.Snapshots) != 1 || rec.Snapshots[0].Verified != "verify_failed" || len(rec.Snapshots[0].Problems) == 0 {
		t.Errorf("runs show --json of the backup run: snapshots %+v, want %s verify_failed with problems", rec.Snapshots, third)
	}
	var okRec verifyRunRec
	decodeWhole(t, w.must(exitOK, "runs", "show", strconv.FormatInt(runs[3].ID, 10), "--json"), &okRec)
	if len(okRec.Snapshots) != 1 || okRec.Snapshots[0].Verified != "ok" {
		t.Errorf("runs show --json of the second backup run: snapshots %+v, want %s ok", okRec.Snapshots, second)
	}

	// The repository is the truth: without the state database the marks
	// are all still there.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(w.state + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	shown("after the state database was deleted")
	if n := len(w.runs()); n != 0 {
		t.Fatalf("a new state database has %d runs", n)
	}

	// job run --wait fails (exit 1) when the verification of its snapshot
	// fails: the fourth backup uses the corrupted chunk again.
	res := w.must(exitFailure, "job", "run", "a", "--wait")
	if !strings.Contains(res.Stderr, "VERIFY_FAILED") {
		t.Errorf("job run --wait with a failed verification does not say so\n%s", res)
	}
	if got := w.runsOf("a"); len(got) != 3 || got[2].Kind != "retention" || got[2].Status != "succeeded" {
		t.Errorf("job run --wait ran %+v, want backup, verify and retention", got)
	}
	check := w.run("check", "-r", w.repo)
	if check.Code != exitOK || !strings.Contains(check.Stderr, third) {
		t.Errorf("check (structural) of a repository with verify_failed snapshots: want exit 0 and a warning naming %s\n%s", third, check)
	}
}
