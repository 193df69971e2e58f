//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// pruneReport is prune --json.
type pruneReport struct {
	DryRun               bool     `json:"dry_run"`
	MaxUnused            string   `json:"max_unused"`
	MaxRepackSize        int64    `json:"max_repack_size"`
	ForgetsCompleted     []string `json:"forgets_completed"`
	Snapshots            int      `json:"snapshots"`
	BytesUnused          int64    `json:"bytes_unused"`
	PacksDeleted         int      `json:"packs_deleted"`
	BytesDeleted         int64    `json:"bytes_deleted"`
	PacksRepacked        int      `json:"packs_repacked"`
	BytesRepacked        int64    `json:"bytes_repacked"`
	LeftoversDeleted     int      `json:"leftovers_deleted"`
	LeftoverBytesDeleted int64    `json:"leftover_bytes_deleted"`
	LeftoversKept        int      `json:"leftovers_kept"`
	LeftoverBytesKept    int64    `json:"leftover_bytes_kept"`
	TempFilesDeleted     int      `json:"temp_files_deleted"`
	TempFilesKept        int      `json:"temp_files_kept"`
	BytesFreed           int64    `json:"bytes_freed"`
	UnusedLeft           int64    `json:"unused_left"`
	PacksLeft            int      `json:"packs_left"`
	PacksWritten         int      `json:"packs_written"`
}

// pruneFailure is what prune --json prints when it fails.
type pruneFailureReport struct {
	ErrorCode string `json:"error_code"`
	Error     string `json:"error"`
}

func (e *env) prune(want int, args ...string) pruneReport {
	e.t.Helper()
	res := e.expect(want, append([]string{"prune", "--json"}, args...)...)
	var out pruneReport
	decodeJSON(e.t, res, &out)
	return out
}

// plan is what a dry run says, without what only a real run knows.
func (r pruneReport) plan() pruneReport {
	r.DryRun, r.PacksWritten = false, 0
	return r
}

// TestPrune: after forgetting the two oldest of four snapshots, a dry run
// changes no byte and says what the real run then does: the packs only
// they used are deleted, the packs they shared are repacked, the pack
// files are gone and the repository shrank by what it says it freed;
// every snapshot left restores bit-identical, and a second prune has
// nothing to do.
func TestPrune(t *testing.T) {
	t.Parallel()
	f := newCrashFixture(t)
	e := f.template
	e.expect(exitOK, append([]string{"forget"}, crashKeep...)...)
	packsBefore := objects(t, filepath.Join(e.repo, "data"))

	before := repoBytes(t, e.repo)
	dry := e.prune(exitOK, "--dry-run")
	if after := repoBytes(t, e.repo); !reflect.DeepEqual(after, before) {
		t.Fatalf("prune --dry-run changed the repository")
	}
	if !dry.DryRun || dry.PacksDeleted == 0 || dry.PacksRepacked == 0 || dry.BytesFreed == 0 || dry.Snapshots != 2 {
		t.Fatalf("dry run: %+v; want packs to delete and to repack, and 2 snapshots kept", dry)
	}
	text := e.expect(exitOK, "prune", "--dry-run").Stdout
	for _, want := range []string{"would delete:", "would repack:", "would free:", "dry run: nothing was changed"} {
		if !strings.Contains(text, want) {
			t.Errorf("dry run text does not say %q:\n%s", want, text)
		}
	}

	done := e.prune(exitOK)
	if !reflect.DeepEqual(done.plan(), dry.plan()) || done.PacksWritten == 0 {
		t.Errorf("prune did %+v, the dry run said %+v", done, dry)
	}
	packsAfter := objects(t, filepath.Join(e.repo, "data"))
	gone := 0
	var goneBytes int64
	for p, size := range packsBefore {
		if _, ok := packsAfter[p]; !ok {
			gone++
			goneBytes += size
		}
	}
	if gone != dry.PacksDeleted+dry.PacksRepacked || goneBytes != dry.BytesFreed {
		t.Errorf("%d pack files (%d bytes) are gone; the dry run said %d deleted and %d repacked, %d bytes freed",
			gone, goneBytes, dry.PacksDeleted, dry.PacksRepacked, dry.BytesFreed)
	}
	f.verify(t, e)
	again := e.prune(exitOK)
	if again.PacksDeleted != 0 || again.PacksRepacked != 0 || again.BytesFreed != 0 {
		t.Errorf("a second prune still found work: %+v", again)
	}
	if again.UnusedLeft != done.UnusedLeft || done.UnusedLeft > done.BytesUnused/2 {
		t.Errorf("unused bytes left: %d by prune, %d by the next; %d were unused before", done.UnusedLeft, again.UnusedLeft, done.BytesUnused)
	}
	text = e.expect(exitOK, "forget", "--prune", "--keep-last", "1").Stdout
	for _, want := range []string{"forgot 1 snapshots", "prune:", "deleted:", "repacked:", "freed:", "left:"} {
		if !strings.Contains(text, want) {
			t.Errorf("forget --prune's text does not say %q:\n%s", want, text)
		}
	}
}

// TestPruneDryRunIsTheRealPlan: the figures of a dry run are the real
// run's, also with --max-unused unlimited (nothing repacked) and with
// --max-repack-size 0 (restic's: nothing repacked).
func TestPruneDryRunIsTheRealPlan(t *testing.T) {
	t.Parallel()
	f := newCrashFixture(t)
	f.template.expect(exitOK, append([]string{"forget"}, crashKeep...)...)
	cases := []struct {
		name     string
		args     []string
		repacked bool
	}{
		{"default", nil, true},
		{"unlimited", []string{"--max-unused", "unlimited"}, false},
		{"no repacking", []string{"--max-repack-size", "0"}, false},
		{"all unused repacked", []string{"--max-unused", "0"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := f.template.withRepoCopy(t, strings.ReplaceAll(tc.name, " ", "-"))
			dry := e.prune(exitOK, append([]string{"--dry-run"}, tc.args...)...)
			done := e.prune(exitOK, tc.args...)
			if !reflect.DeepEqual(dry.plan(), done.plan()) {
				t.Errorf("dry run %+v\nreal run %+v", dry, done)
			}
			if (done.PacksRepacked > 0) != tc.repacked || done.PacksDeleted == 0 {
				t.Errorf("%d packs repacked and %d deleted; want repacking: %v, and deleting", done.PacksRepacked, done.PacksDeleted, tc.repacked)
			}
			if !tc.repacked && done.UnusedLeft == 0 {
				t.Errorf("nothing repacked, yet no unused bytes left: %+v", done)
			}
			checkClean(t, e) // TestPrune restores after a prune
		})
	}
}

// TestPruneFlags: a bad limit is a usage error naming what is allowed,
// and changes nothing; so is any argument.
func TestPruneFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a"), "a\n", 0o644)
	e.backup(exitOK, src)
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"percent too high", []string{"--max-unused", "100%"}, "want a percentage below 100 (10%), a size (500M, 5G, 0) or unlimited"},
		{"negative", []string{"--max-unused", "-5%"}, "want a percentage"},
		{"not a limit", []string{"--max-unused", "lots"}, "or unlimited"},
		{"bad repack size", []string{"--max-repack-size", "big"}, "want a size such as 500M or 2G"},
		{"repack size as percent", []string{"--max-repack-size", "10%"}, "want a size such as 500M or 2G"},
		{"an argument", []string{"latest"}, "prune takes no arguments"},
	}
	before := repoBytes(t, e.repo)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := e.run(append([]string{"prune"}, tc.args...)...)
			msg := lines(res.Stderr)
			if res.Code != exitUsage || len(msg) != 1 || !strings.Contains(msg[0], tc.says) {
				t.Errorf("prune %v: exit %d, want %d and one line with %q:\n%s", tc.args, res.Code, exitUsage, tc.says, res)
			}
		})
	}
	if after := repoBytes(t, e.repo); !reflect.DeepEqual(after, before) {
		t.Errorf("a refused prune changed the repository")
	}
}

// TestPruneBusy: beside an exclusive lock prune answers busy at once,
// naming the holder, and changes nothing; a dry run takes no lock and
// still answers.
func TestPruneBusy(t *testing.T) {
	t.Parallel()
	f := newCrashFixture(t)
	e := f.template
	e.expect(exitOK, append([]string{"forget"}, crashKeep...)...)
	helper := e.holdExclusiveLock()
	before := repoBytes(t, filepath.Join(e.repo, "data"))
	res := e.run("prune")
	if msg := lines(res.Stderr); res.Code != exitBusy || len(msg) != 1 || !strings.Contains(msg[0], "exclusive lock for e2e exclusive holder") {
		t.Errorf("prune beside an exclusive lock: exit %d, want %d and one line naming the holder:\n%s", res.Code, exitBusy, res)
	}
	res = e.run("forget", "--prune", "--keep-last", "1")
	if res.Code != exitBusy {
		t.Errorf("forget --prune beside an exclusive lock: exit %d, want %d:\n%s", res.Code, exitBusy, res)
	}
	if dry := e.prune(exitOK, "--dry-run"); dry.PacksDeleted == 0 {
		t.Errorf("a dry run beside the lock found nothing to delete: %+v", dry)
	}
	if after := repoBytes(t, filepath.Join(e.repo, "data")); !reflect.DeepEqual(after, before) {
		t.Errorf("a busy prune changed the packs")
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()
	if got := e.prune(exitOK); got.PacksDeleted == 0 {
		t.Errorf("prune once the holder was killed deleted nothing: %+v", got)
	}
}

// TestPruneInvalidManifest: a snapshot file or a tree that cannot be read
// stops prune with invalid_manifest (exit 13) naming the snapshot, in its
// one line and in --json, and not one byte of the repository changes.
func TestPruneInvalidManifest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func(t *testing.T) (*env, string) // a damaged repository and the snapshot it names
	}{
		{"snapshot file", func(t *testing.T) (*env, string) {
			f := newCrashFixture(t)
			f.template.expect(exitOK, append([]string{"forget"}, crashKeep...)...)
			flipByte(t, filepath.Join(f.template.repo, "snapshots", f.ids[3]), 40)
			return f.template, f.ids[3]
		}},
		{"tree", func(t *testing.T) (*env, string) {
			// One backup with one packer: a pack of file data, and a
			// small one of trees.
			e := newEnv(t)
			e.init()
			src := filepath.Join(e.dir, "src")
			mkdirAll(t, src, 0o755)
			writeRandom(t, filepath.Join(src, "data.bin"), 3, 300<<10)
			res := e.runEnv([]string{"GOMAXPROCS=1"}, "backup", "--json", src)
			if res.Code != exitOK {
				t.Fatalf("backup:\n%s", res)
			}
			var b backupReport
			decodeJSON(t, res, &b)
			id := b.SnapshotID
			packs := objects(t, filepath.Join(e.repo, "data"))
			if len(packs) != 2 {
				t.Fatalf("one backup made %d packs, want 2 (data and trees)", len(packs))
			}
			smallest := ""
			for p, size := range packs {
				if smallest == "" || size < packs[smallest] {
					smallest = p
				}
			}
			flipByte(t, smallest, packs[smallest]/2)
			return e, id
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, damaged := tc.damage(t)
			before := repoBytes(t, e.repo)
			res := e.run("prune")
			msg := lines(res.Stderr)
			if res.Code != 13 || len(msg) != 1 || !strings.Contains(msg[0], "invalid_manifest") || !strings.Contains(msg[0], damaged) {
				t.Errorf("prune: exit %d, want 13 and one line with invalid_manifest and snapshot %s:\n%s", res.Code, damaged, res)
			}
			res = e.run("prune", "--json")
			var fail pruneFailureReport
			decodeJSON(t, res, &fail)
			if res.Code != 13 || fail.ErrorCode != "invalid_manifest" || !strings.Contains(fail.Error, damaged) {
				t.Errorf("prune --json: exit %d, %+v; want 13 and error_code invalid_manifest naming %s", res.Code, fail, damaged)
			}
			if tc.name == "tree" {
				// forget reads snapshot files only: it keeps the one
				// snapshot, then prune stops.
				res = e.run("forget", "--prune", "--keep-last", "1", "--json")
				if res.Code != 13 || !strings.Contains(res.Stdout, `"error_code": "invalid_manifest"`) {
					t.Errorf("forget --prune: exit %d, want 13 and prune_error invalid_manifest:\n%s", res.Code, res)
				}
			}
			if after := repoBytes(t, e.repo); !reflect.DeepEqual(after, before) {
				t.Errorf("the repository changed although prune stopped")
			}
		})
	}
}

// TestPruneLeftovers: a pack that no index lists (what a killed backup
// leaves) is kept while it is young, since a backup may still be writing
// it, and reported; once older than the stated age it is deleted. So is a
// temporary file of a killed write.
func TestPruneLeftovers(t *testing.T) {
	t.Parallel()
	f := newCrashFixture(t)
	e := f.template
	packs := objects(t, filepath.Join(e.repo, "data"))
	some := largest(t, packs)
	data, err := os.ReadFile(some)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("ab", 32)[:len(filepath.Base(some))]
	leftover := filepath.Join(e.repo, "data", name[:2], name)
	mkdirAll(t, filepath.Dir(leftover), 0o700)
	writeFile(t, leftover, string(data), 0o600)
	temp := filepath.Join(e.repo, "tmp", "killed-write")
	writeFile(t, temp, "half a pack", 0o600)

	young := e.prune(exitOK)
	if young.LeftoversKept != 1 || young.LeftoverBytesKept != int64(len(data)) || young.LeftoversDeleted != 0 {
		t.Errorf("a young leftover: %+v; want it kept and counted", young)
	}
	if young.TempFilesKept != 1 || young.TempFilesDeleted != 0 {
		t.Errorf("a young temporary file: %+v; want it kept and counted", young)
	}
	text := e.expect(exitOK, "prune").Stdout
	if !strings.Contains(text, "kept 1 packs no index lists") || !strings.Contains(text, "younger than 2h") {
		t.Errorf("prune does not say why it kept the leftover:\n%s", text)
	}
	if _, err := os.Stat(leftover); err != nil {
		t.Fatalf("the young leftover is gone: %v", err)
	}
	old := time.Now().Add(-3 * time.Hour)
	for _, p := range []string{leftover, temp} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	gone := e.prune(exitOK)
	if gone.LeftoversDeleted != 1 || gone.LeftoverBytesDeleted != int64(len(data)) || gone.LeftoversKept != 0 {
		t.Errorf("an old leftover: %+v; want it deleted and counted", gone)
	}
	if gone.TempFilesDeleted != 1 || gone.TempFilesKept != 0 {
		t.Errorf("an old temporary file: %+v; want it deleted and counted", gone)
	}
	if _, err := os.Stat(temp); !os.IsNotExist(err) {
		t.Errorf("the old temporary file is still there: %v", err)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("the old leftover is still there: %v", err)
	}
	checkClean(t, e)
}

// TestForgetPrune: forget --prune forgets, then prunes, and says both in
// one JSON document; with --dry-run neither changes a byte.
func TestForgetPrune(t *testing.T) {
	t.Parallel()
	f := newCrashFixture(t)
	e := f.template
	before := repoBytes(t, e.repo)
	var dry struct {
		forgetReport
		Prune *pruneReport `json:"prune"`
	}
	decodeJSON(t, e.expect(exitOK, append([]string{"forget", "--prune", "--dry-run", "--json"}, crashKeep...)...), &dry)
	if after := repoBytes(t, e.repo); !reflect.DeepEqual(after, before) {
		t.Fatalf("forget --prune --dry-run changed the repository")
	}
	if len(dry.Forgotten) != 2 || dry.Prune == nil || !dry.Prune.DryRun {
		t.Fatalf("dry run: %+v, prune %+v; want 2 forgotten and a prune dry run", dry.forgetReport, dry.Prune)
	}
	var got struct {
		forgetReport
		Prune *pruneReport `json:"prune"`
	}
	decodeJSON(t, e.expect(exitOK, append([]string{"forget", "--prune", "--json", "--max-unused", "0"}, crashKeep...)...), &got)
	wantGone := slices.Clone(f.ids[:2])
	slices.Sort(wantGone)
	if !slices.Equal(got.Forgotten, wantGone) || got.Prune == nil || got.Prune.PacksDeleted == 0 || got.Prune.PacksRepacked == 0 || got.Prune.MaxUnused != "0" {
		t.Fatalf("forget --prune: %+v, prune %+v; want %v forgotten and their packs deleted and repacked with max-unused 0", got.forgetReport, got.Prune, wantGone)
	}
	if left := e.snapshotIDs(); !slices.Equal(left, f.kept()) {
		t.Errorf("snapshots left %v, want %v", left, f.kept())
	}
	f.verify(t, e)
}
