//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exitInvalidManifest is prune's exit code when a snapshot cannot be read.
const exitInvalidManifest = 13

// TestStraySnapshotFile puts one bad file into snapshots/ in each way a
// disk, a sync tool or a careless copy would, and checks that nothing but
// check and prune stops for it (issue 16, item 2): backup, snapshots,
// restore latest, find, stats, ls and forget planning go on and name the
// file on stderr; check reports it as damage; prune refuses until forget ID
// removes it.
func TestStraySnapshotFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a.txt"), "first\n", 0o644)
	first := e.backup(exitOK, src)
	writeFile(t, filepath.Join(src, "b.txt"), "second\n", 0o644)
	second := e.backup(exitOK, src)
	good := filepath.Join(e.repo, "snapshots", second.SnapshotID)
	record, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}

	// A snapshot file of another repository, sealed with another key.
	other := newEnv(t)
	other.init()
	otherSnap := other.backup(exitOK, src)
	foreign, err := os.ReadFile(filepath.Join(other.repo, "snapshots", otherSnap.SnapshotID))
	if err != nil {
		t.Fatal(err)
	}

	flippedRecord := []byte(string(record))
	flippedRecord[len(flippedRecord)/2] ^= 0x10
	const strayID = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"
	cases := []struct {
		name    string
		file    string // in snapshots/
		content []byte
	}{
		{"bit flipped", strayID, flippedRecord},
		{"truncated", strayID, record[:len(record)/2]},
		{"empty", strayID, nil},
		{"garbage", strayID, []byte("not a snapshot at all\x00\xff")},
		{"other repository", otherSnap.SnapshotID, foreign},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := e.withRepoCopy(t, strings.ReplaceAll(tc.name, " ", "-"))
			stray := filepath.Join(e.repo, "snapshots", tc.file)
			writeFile(t, stray, string(tc.content), 0o600)
			named := "snapshots/" + tc.file

			res := e.expect(exitOK, "snapshots")
			if !strings.Contains(res.Stderr, "1 snapshot file unreadable") || !strings.Contains(res.Stderr, named) {
				t.Errorf("snapshots does not name the unreadable file %s on stderr:\n%s", named, res)
			}
			if !strings.Contains(res.Stdout, shortID(first.SnapshotID)) || !strings.Contains(res.Stdout, shortID(second.SnapshotID)) {
				t.Errorf("snapshots does not list the readable snapshots:\n%s", res)
			}
			res = e.expect(exitOK, "snapshots", "--json")
			if !strings.Contains(res.Stderr, `"message_type":"error"`) || !strings.Contains(res.Stderr, `"item":"`+named+`"`) {
				t.Errorf("snapshots --json gives no error object for %s on stderr:\n%s", named, res)
			}
			if got := e.snapshots(); len(got) != 2 {
				t.Errorf("snapshots --json lists %d snapshots, want the 2 readable ones", len(got))
			}

			writeFile(t, filepath.Join(src, "c.txt"), "third\n", 0o644)
			defer os.Remove(filepath.Join(src, "c.txt"))
			res = e.expect(exitOK, "backup", src)
			if !strings.Contains(res.Stderr, named) {
				t.Errorf("backup does not name the unreadable file:\n%s", res)
			}
			if !strings.Contains(res.Stdout, "parent snapshot "+shortID(second.SnapshotID)) {
				t.Errorf("backup did not take the newest readable snapshot as its parent:\n%s", res)
			}

			target := filepath.Join(t.TempDir(), "restored")
			e.expect(exitOK, "restore", "latest", "--target", target)
			if got := readFile(t, filepath.Join(target, src, "c.txt")); got != "third\n" {
				t.Errorf("restore latest restored c.txt as %q", got)
			}
			e.expect(exitOK, "find", "b.txt")
			e.expect(exitOK, "stats")
			e.expect(exitOK, "ls", "latest")
			e.expect(exitOK, "diff", first.SnapshotID, second.SnapshotID)
			res = e.expect(exitOK, "forget", "--dry-run", "--keep-last", "1")
			if !strings.Contains(res.Stderr, named) {
				t.Errorf("forget does not name the unreadable file:\n%s", res)
			}

			rep, res := e.check()
			if res.Code != exitFailure || !strings.Contains(res.Stdout, tc.file) {
				t.Errorf("check does not report the unreadable file as damage (exit %d, report %+v):\n%s", res.Code, rep, res)
			}

			res = e.expect(exitInvalidManifest, "prune")
			if !strings.Contains(res.Stderr, named) || !strings.Contains(res.Stderr, "nightjar forget "+tc.file) {
				t.Errorf("prune does not refuse naming the file and what to do:\n%s", res)
			}
			e.expect(exitOK, "forget", tc.file)
			if _, err := os.Stat(stray); !os.IsNotExist(err) {
				t.Errorf("forget %s left the file: %v", tc.file, err)
			}
			e.expect(exitOK, "prune")
			if _, res := e.check(); res.Code != exitOK {
				t.Errorf("check after forget and prune:\n%s", res)
			}
		})
	}
}
