//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyDir copies a folder tree of regular files.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(dst, fi.Mode().Perm())
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy %s: %v", from, err)
	}
}

// withRepoCopy returns an env for subtest t that works on a copy of the
// repository, so that each subtest damages its own.
func (e *env) withRepoCopy(t *testing.T, name string) *env {
	t.Helper()
	c := *e
	c.t = t
	c.repo = filepath.Join(e.dir, "repo-"+name)
	copyDir(t, e.repo, c.repo)
	return &c
}

// TestTamper damages repository files in the ways a disk or an attacker
// would and checks that check, check --read-data and restore notice.
func TestTamper(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	big := filepath.Join(src, "big.bin")
	bigData := writeRandom(t, big, 40, 40<<20)
	small := filepath.Join(src, "small.txt")
	writeFile(t, small, "small and unharmed\n", 0o644)

	// With one packer the packs fill one after another: the full-size
	// packs then hold only chunks of big.bin, and the trees go into the
	// last, smaller one.
	res := e.runEnv([]string{"GOMAXPROCS=1"}, "backup", "--json", src)
	if res.Code != exitOK {
		t.Fatalf("backup:\n%s", res)
	}
	var b backupReport
	decodeJSON(t, res, &b)

	t.Run("pack byte", func(t *testing.T) {
		t.Parallel()
		e := e.withRepoCopy(t, "pack")
		pack := largest(t, objects(t, filepath.Join(e.repo, "data")))
		fi, err := os.Stat(pack)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() < 16<<20 {
			t.Fatalf("largest pack has %d bytes: the test's assumption that a full pack holds only file data fails", fi.Size())
		}
		flipByte(t, pack, fi.Size()/2)
		packName := filepath.Base(pack)

		if ck, res := e.check(); res.Code != exitOK {
			t.Logf("structural check (allowed to fail or pass) exited %d: %+v", res.Code, ck.Problems)
		}
		ck, res := e.check("--read-data")
		if res.Code != exitFailure || ck.OK {
			t.Fatalf("check --read-data of a damaged pack: want exit %d and ok=false:\n%s", exitFailure, res)
		}
		namesPack, affectsBig := false, false
		for _, p := range ck.Problems {
			if strings.Contains(p.Object, packName) {
				namesPack = true
			}
			seen := map[string]int{}
			for _, a := range p.Affected {
				if seen[a.Snapshot+" "+a.Path]++; seen[a.Snapshot+" "+a.Path] == 2 {
					t.Errorf("problem %s lists snapshot %s path %s more than once", p.Object, shortID(a.Snapshot), a.Path)
				}
				if a.Snapshot == b.SnapshotID && a.Path == big {
					affectsBig = true
				}
				if a.Path == small {
					t.Errorf("problem %s claims to affect %s, whose data is intact", p.Object, small)
				}
			}
		}
		if !namesPack {
			t.Errorf("check --read-data does not name pack %s:\n%s", packName, res.Stdout)
		}
		if !affectsBig {
			t.Errorf("check --read-data does not name snapshot %s and path %s as affected:\n%s", b.SnapshotID, big, res.Stdout)
		}
		text := e.run("check", "--read-data")
		if text.Code != exitFailure {
			t.Errorf("check --read-data (text): want exit %d:\n%s", exitFailure, text)
		}
		for _, want := range []string{packName[:8], shortID(b.SnapshotID), big} {
			if !strings.Contains(text.Stdout, want) {
				t.Errorf("check --read-data output does not mention %q:\n%s", want, text.Stdout)
			}
		}

		target := filepath.Join(e.dir, "restore-damaged")
		rres := e.run("restore", "latest", "--target", target)
		if rres.Code == exitOK {
			t.Errorf("restore of a snapshot with a damaged chunk succeeded:\n%s", rres)
		}
		if got, err := os.ReadFile(filepath.Join(target, big)); err == nil && !bytes.Equal(got, bigData) {
			t.Errorf("restore wrote %d bytes of wrong data into %s", len(got), big)
		}
		// big.bin is restored in parts side by side; the failed one takes
		// the temporary file with it.
		_ = filepath.Walk(target, func(p string, _ os.FileInfo, err error) error {
			if err == nil && strings.HasPrefix(filepath.Base(p), ".nightjar-restore-") {
				t.Errorf("failed restore left a temporary file behind: %q", p)
			}
			return nil
		})
		// Damage to one file does not keep the others from being restored.
		only := filepath.Join(e.dir, "restore-small")
		e.expect(exitOK, "restore", "latest", "--target", only, "--include", small, "--verify")
		if got := readFile(t, filepath.Join(only, small)); got != "small and unharmed\n" {
			t.Errorf("small.txt restored as %q", got)
		}
	})

	t.Run("snapshot byte", func(t *testing.T) {
		t.Parallel()
		e := e.withRepoCopy(t, "snapshot")
		p := filepath.Join(e.repo, "snapshots", b.SnapshotID)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		flipByte(t, p, fi.Size()/2)
		ck, res := e.check()
		if res.Code != exitFailure || ck.OK {
			t.Fatalf("check of a damaged snapshot: want exit %d:\n%s", exitFailure, res)
		}
		named := false
		for _, pr := range ck.Problems {
			if strings.Contains(pr.Object, "snapshot") && strings.Contains(pr.Object, b.SnapshotID) {
				named = true
			}
		}
		if !named {
			t.Errorf("check does not name snapshot %s:\n%s", b.SnapshotID, res.Stdout)
		}
	})

	t.Run("index deleted", func(t *testing.T) {
		t.Parallel()
		e := e.withRepoCopy(t, "index")
		idx := largest(t, objects(t, filepath.Join(e.repo, "index")))
		if err := os.Remove(idx); err != nil {
			t.Fatal(err)
		}
		ck, res := e.check()
		if ck.UnindexedPacks == 0 && res.Code == exitOK {
			t.Fatalf("check does not notice a deleted index file:\n%s", res)
		}
		t.Logf("after deleting %s: check exit %d, %d unindexed packs, %d problems", filepath.Base(idx), res.Code, ck.UnindexedPacks, len(ck.Problems))

		next := e.backup(exitOK, src)
		if next.AdoptedPacks == 0 {
			t.Errorf("the backup after losing an index adopted no packs")
		}
		if next.BytesAdded > 1<<20 {
			t.Errorf("the backup after losing an index added %d bytes: it stored the data again instead of adopting the packs", next.BytesAdded)
		}
		ck, res = e.check("--read-data")
		if res.Code != exitOK || !ck.OK || ck.UnindexedPacks != 0 {
			t.Errorf("check --read-data after adoption: want exit 0, no unindexed packs:\n%s", res)
		}
		target := filepath.Join(e.dir, "restore-adopted")
		e.expect(exitOK, "restore", b.SnapshotID, "--target", target, "--verify")
		if !bytes.Equal([]byte(readFile(t, filepath.Join(target, big))), bigData) {
			t.Error("big.bin restored from adopted packs differs")
		}
	})

	t.Run("index byte", func(t *testing.T) {
		t.Parallel()
		e := e.withRepoCopy(t, "index-byte")
		idx := largest(t, objects(t, filepath.Join(e.repo, "index")))
		fi, err := os.Stat(idx)
		if err != nil {
			t.Fatal(err)
		}
		flipByte(t, idx, fi.Size()/2)
		ck, res := e.check()
		if res.Code != exitFailure || ck.OK {
			t.Fatalf("check of a damaged index file: want exit %d:\n%s", exitFailure, res)
		}
		named := false
		for _, pr := range ck.Problems {
			if strings.Contains(pr.Object, filepath.Base(idx)) {
				named = true
			}
		}
		if !named {
			t.Errorf("check does not name index %s:\n%s", filepath.Base(idx), res.Stdout)
		}
	})

	// Structural damage to packs: the structural check alone must see it.
	packCases := []struct {
		name   string
		damage func(t *testing.T, pack string)
	}{
		{"pack deleted", func(t *testing.T, pack string) {
			if err := os.Remove(pack); err != nil {
				t.Fatal(err)
			}
		}},
		{"pack truncated", func(t *testing.T, pack string) {
			fi, err := os.Stat(pack)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(pack, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, c := range packCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := e.withRepoCopy(t, fmt.Sprintf("structural%d", i))
			pack := largest(t, objects(t, filepath.Join(e.repo, "data")))
			c.damage(t, pack)
			ck, res := e.check()
			if res.Code != exitFailure || ck.OK {
				t.Fatalf("structural check: want exit %d:\n%s", exitFailure, res)
			}
			affectsBig := false
			for _, p := range ck.Problems {
				for _, a := range p.Affected {
					if a.Snapshot == b.SnapshotID && a.Path == big {
						affectsBig = true
					}
				}
			}
			if !affectsBig || !strings.Contains(res.Stdout, filepath.Base(pack)[:8]) {
				t.Errorf("check does not name pack %s and the affected snapshot %s path %s:\n%s",
					filepath.Base(pack), shortID(b.SnapshotID), big, res.Stdout)
			}
		})
	}

	t.Run("key byte", func(t *testing.T) {
		t.Parallel()
		e := e.withRepoCopy(t, "key")
		key := largest(t, objects(t, filepath.Join(e.repo, "keys")))
		fi, err := os.Stat(key)
		if err != nil {
			t.Fatal(err)
		}
		flipByte(t, key, fi.Size()-10)
		res := e.run("snapshots")
		if res.Code == exitOK || strings.Contains(res.Stderr, "goroutine ") {
			t.Errorf("a damaged key file (the only one) still opens, or crashes:\n%s", res)
		}
		t.Logf("damaged key file: exit %d: %s", res.Code, strings.TrimSpace(res.Stderr))
	})

	t.Run("config byte", func(t *testing.T) {
		t.Parallel()
		e := e.withRepoCopy(t, "config")
		p := filepath.Join(e.repo, "config")
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		flipByte(t, p, fi.Size()/2)
		res := e.run("snapshots")
		if res.Code == exitOK || res.Code == exitWrongPassword {
			t.Errorf("a damaged config: want a failure that is not \"wrong password\":\n%s", res)
		}
		if strings.Contains(res.Stderr, "goroutine ") {
			t.Errorf("crash:\n%s", res)
		}
	})
}
