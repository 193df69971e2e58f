//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// A repository one of whose data packs was deleted: restore brings back
// everything else, bit-exact and with its metadata (the folder that held
// the lost file included), names the lost file on stderr and in --json,
// and exits 3, never 130 ("context canceled"). A restore that can bring
// back nothing exits 1.
func TestRestoreWithADeletedDataPack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	// The lost file's content goes into the repository first, alone, so
	// that its data packs hold nothing else.
	seed := filepath.Join(e.dir, "seed")
	mkdirAll(t, seed, 0o755)
	content := writeRandom(t, filepath.Join(seed, "gone.bin"), 77, 2<<20)
	before := objects(t, filepath.Join(e.repo, "data"))
	lonely := e.backup(exitOK, seed)
	var lostPacks []string
	for name, size := range objects(t, filepath.Join(e.repo, "data")) {
		// Its data packs: new, and bigger than a tree pack of one folder.
		if _, old := before[name]; !old && size >= 1<<20 {
			lostPacks = append(lostPacks, name)
		}
	}
	if len(lostPacks) == 0 {
		t.Fatal("found no data pack of the first backup")
	}

	src := filepath.Join(e.dir, "src")
	rt := buildRichTree(t, src)
	mkdirAll(t, filepath.Join(src, "lost"), 0o755)
	if err := os.WriteFile(filepath.Join(src, "lost", "gone.bin"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(src, "lost"), 0o750); err != nil {
		t.Fatal(err)
	}
	want := scanTree(t, src)
	e.backup(exitOK, src)
	for _, name := range lostPacks {
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}

	for _, json := range []bool{false, true} {
		target := filepath.Join(e.dir, "restore")
		args := []string{"restore", "latest", "--target", target}
		if json {
			target += "-json"
			args = []string{"restore", "latest", "--target", target, "--json"}
		}
		res := e.run(args...)
		if res.Code != exitPartial {
			t.Fatalf("restore with a data pack deleted: want exit %d, got:\n%s", exitPartial, res)
		}
		if strings.Contains(res.Stderr, "context canceled") || !strings.Contains(res.Stderr, "/lost/gone.bin") {
			t.Errorf("stderr does not name the lost file, or speaks of a cancellation:\n%s", res.Stderr)
		}
		if json {
			var rr restoreReport
			decodeJSON(t, res, &rr)
			if len(rr.Skipped) != 1 || !strings.HasSuffix(rr.Skipped[0].Path, "/lost/gone.bin") || rr.Damaged != 1 ||
				rr.FilesSkipped != 1 || rr.Files != int64(rt.files) || !rr.Partial {
				t.Errorf("restore --json says %+v, want only gone.bin not restored, as damage, and %d files restored", rr, rt.files)
			}
			if n := strings.Count(res.Stderr, `"message_type":"error"`); n != 1 {
				t.Errorf("stderr holds %d error objects, want one for gone.bin:\n%s", n, res.Stderr)
			}
		}
		got := scanTree(t, filepath.Join(target, src))
		delete(want, "lost/gone.bin")
		compareTrees(t, want, got, rt.owners)
	}

	// The first snapshot held nothing but the lost file.
	res := e.run("restore", lonely.SnapshotID, "--target", filepath.Join(e.dir, "nothing"))
	if res.Code != exitFailure || !strings.Contains(res.Stderr, "nothing could be restored") || !strings.Contains(res.Stderr, "gone.bin") {
		t.Errorf("restore of a snapshot whose only file is lost: want exit %d naming it, got:\n%s", exitFailure, res)
	}
}

// restore --include makes only the folders on the paths it restores, as
// restic does, each with the mode and time of the snapshot: not the
// folders where the pattern could have matched but nothing did.
func TestRestoreIncludeMakesOnlyTheFoldersOnItsPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	for _, d := range []string{"a", "b/c", "d"} {
		mkdirAll(t, filepath.Join(src, d), 0o755)
	}
	writeFile(t, filepath.Join(src, "a", "x.pdf"), "pdf", 0o644)
	writeFile(t, filepath.Join(src, "b", "c", "y.txt"), "text", 0o644)
	if err := os.Chmod(filepath.Join(src, "a"), 0o750); err != nil {
		t.Fatal(err)
	}
	stamp := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(src, "a"), stamp, stamp); err != nil {
		t.Fatal(err)
	}
	want := scanTree(t, src)
	e.backup(exitOK, src)
	target := filepath.Join(e.dir, "restore")
	e.expect(exitOK, "restore", "latest", "--target", target, "--include", "*.pdf")
	got := scanTree(t, filepath.Join(target, src))
	var paths []string
	for p := range got {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	if strings.Join(paths, ",") != ".,a,a/x.pdf" {
		t.Errorf("restore --include '*.pdf' made %q, want only the folders on the path to a/x.pdf", paths)
	}
	if g, w := got["a"], want["a"]; g.Perm != w.Perm || g.MTime != w.MTime {
		t.Errorf("folder a restored with mode %04o and mtime %d, want %04o and %d", g.Perm, g.MTime, w.Perm, w.MTime)
	}
}
