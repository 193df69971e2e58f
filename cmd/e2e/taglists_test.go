//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestTagLists: a tag flag's value is a comma-separated list, as in
// restic. backup --tag a,b adds both tags; snapshots --tag a,b and forget
// --keep-tag a,b need both, and a repeated flag accepts either list. Other
// repeatable flags keep their commas: an exclude pattern may hold one.
func TestTagLists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "keep.txt"), "kept\n", 0o644)
	writeFile(t, filepath.Join(src, "a,b.txt"), "left out\n", 0o644)

	both := e.backup(exitOK, "--time", "2026-10-01T00:00:00Z", "--tag", "audit,legal", "--exclude", "a,b.txt", src).SnapshotID
	audit := e.backup(exitOK, "--time", "2026-10-02T00:00:00Z", "--tag", "audit", src).SnapshotID
	legal := e.backup(exitOK, "--time", "2026-10-03T00:00:00Z", "--tag", "legal", src).SnapshotID
	newest := e.backup(exitOK, "--time", "2026-10-04T00:00:00Z", src).SnapshotID

	tagsOf := map[string][]string{}
	for _, s := range e.snapshots() {
		tagsOf[s.ID] = s.Tags
	}
	if got := tagsOf[both]; !slices.Contains(got, "audit") || !slices.Contains(got, "legal") {
		t.Errorf("backup --tag audit,legal gave tags %v, want audit and legal", got)
	}

	shown := func(args ...string) []string {
		t.Helper()
		var out []snapshotReport
		decodeJSON(t, e.expect(exitOK, append([]string{"snapshots", "--json"}, args...)...), &out)
		var ids []string
		for _, s := range out {
			ids = append(ids, s.ID)
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
	if got, want := shown("--tag", "audit,legal"), sorted(both); !slices.Equal(got, want) {
		t.Errorf("snapshots --tag audit,legal = %v, want only %v", got, want)
	}
	if got, want := shown("--tag", "audit,legal", "--tag", "legal"), sorted(both, legal); !slices.Equal(got, want) {
		t.Errorf("snapshots --tag audit,legal --tag legal = %v, want %v", got, want)
	}

	restored := filepath.Join(e.dir, "restored")
	e.expect(exitOK, "restore", both, "--target", restored)
	if _, err := os.Lstat(filepath.Join(restored, src, "a,b.txt")); !os.IsNotExist(err) {
		t.Errorf("--exclude a,b.txt did not leave out a,b.txt (lstat: %v)", err)
	}
	if _, err := os.Lstat(filepath.Join(restored, src, "keep.txt")); err != nil {
		t.Errorf("keep.txt was not backed up: %v", err)
	}

	got := e.forget(exitOK, "--keep-last", "1", "--keep-tag", "audit,legal")
	if want := sorted(audit, legal); !slices.Equal(sorted(got.Forgotten...), want) {
		t.Errorf("forget --keep-tag audit,legal removed %v, want %v (a snapshot needs both tags to stay)", got.Forgotten, want)
	}
	if left, want := e.snapshotIDs(), sorted(both, newest); !slices.Equal(left, want) {
		t.Errorf("snapshots left %v, want %v", left, want)
	}
}
