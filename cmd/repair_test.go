package cmd

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repair packs and repair snapshots through the command line: a flipped
// byte in a data pack is found and salvaged around, the snapshot that
// needed the lost chunk gets a repaired copy without the file, and check
// --read-data is clean after.
func TestRepairPacksAndSnapshots(t *testing.T) {
	e := newCLIEnv(t)
	dir := e.initRepo("repo")
	src := filepath.Join(e.dir, "src")
	writeTree(t, src, map[string]string{"small.txt": "small and unharmed\n"})
	big := make([]byte, 6<<20)
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(src, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	orig := e.backupSnapshot(dir, src)

	// The largest pack holds chunks of big.bin only; a third of the way
	// in is a blob, not the header at the end.
	var pack string
	var size int64
	err := filepath.WalkDir(filepath.Join(dir, "data"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Size() > size {
			pack, size = p, fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	data[size/3] ^= 1
	if err := os.Chmod(pack, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pack, data, 0o600); err != nil {
		t.Fatal(err)
	}

	type packsReport struct {
		DryRun       bool `json:"dry_run"`
		DamagedPacks []struct {
			Pack      string `json:"pack"`
			BlobsLost int    `json:"blobs_lost"`
		} `json:"damaged_packs"`
		PacksRemoved int `json:"packs_removed"`
	}
	var dry, done packsReport
	res := e.expect(ExitOK, "repair", "packs", "-r", dir, "--dry-run", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &dry); err != nil || len(dry.DamagedPacks) != 1 || dry.DamagedPacks[0].Pack != filepath.Base(pack) || dry.PacksRemoved != 0 {
		t.Fatalf("repair packs --dry-run: want the flipped pack found and nothing removed (%v):\n%s", err, res.stdout)
	}
	if _, err := os.Stat(pack); err != nil {
		t.Fatalf("a dry run removed the damaged pack: %v", err)
	}
	res = e.expect(ExitOK, "repair", "packs", "-r", dir, "--json")
	if err := json.Unmarshal([]byte(res.stdout), &done); err != nil || len(done.DamagedPacks) != 1 || done.DamagedPacks[0].BlobsLost != 1 || done.PacksRemoved != 1 {
		t.Fatalf("repair packs: want one pack with one blob lost, removed (%v):\n%s", err, res.stdout)
	}

	var snaps struct {
		Repaired []struct {
			Original  string `json:"original"`
			Repaired  string `json:"repaired"`
			Forgotten bool   `json:"forgotten"`
			Removed   []struct {
				Path string `json:"path"`
			} `json:"removed"`
		} `json:"repaired"`
	}
	res = e.expect(ExitOK, "repair", "snapshots", "-r", dir, "--forget", "--json")
	if err := json.Unmarshal([]byte(res.stdout), &snaps); err != nil || len(snaps.Repaired) != 1 || snaps.Repaired[0].Original != orig ||
		!snaps.Repaired[0].Forgotten || len(snaps.Repaired[0].Removed) != 1 || !strings.HasSuffix(snaps.Repaired[0].Removed[0].Path, "/big.bin") {
		t.Fatalf("repair snapshots --forget: want %s repaired without big.bin and forgotten (%v):\n%s", orig, err, res.stdout)
	}
	if ids := objectNames(t, dir, "snapshots"); len(ids) != 1 || ids[0] != snaps.Repaired[0].Repaired {
		t.Fatalf("snapshots %v, want only the repaired copy %s", ids, snaps.Repaired[0].Repaired)
	}
	e.expect(ExitOK, "check", "-r", dir, "--read-data")
	target := filepath.Join(e.dir, "restore")
	e.expect(ExitOK, "restore", "-r", dir, "latest", "--target", target)
	if got, err := os.ReadFile(filepath.Join(target, src, "small.txt")); err != nil || string(got) != "small and unharmed\n" {
		t.Fatalf("small.txt from the repaired snapshot: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(target, src, "big.bin")); !os.IsNotExist(err) {
		t.Fatalf("big.bin, whose chunk was lost, was restored from the repaired snapshot: %v", err)
	}
}

// Bad repair command lines are usage errors, found before anything is
// opened.
func TestRepairBadCommandLines(t *testing.T) {
	e := newCLIEnv(t)
	dir := e.initRepo("repo")
	for _, args := range [][]string{
		{"repair", "index", "-r", dir, "extra"},
		{"repair", "packs", "-r", dir, "not-a-pack"},
		{"repair", "snapshots", "-r", dir, "--forget", "--dry-run"},
	} {
		res := e.run(args...)
		if res.code != ExitUsage || len(lines(res.stderr)) != 1 || res.stdout != "" {
			t.Errorf("nightjar %s: exit %d, want %d and one line on stderr:\n%s%s", strings.Join(args, " "), res.code, ExitUsage, res.stdout, res.stderr)
		}
	}
}
