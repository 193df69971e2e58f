//go:build linux

package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repairIndexReport is what repair index --json prints.
type repairIndexReport struct {
	DryRun          bool `json:"dry_run"`
	PacksRead       int  `json:"packs_read"`
	UnreadablePacks []struct {
		Pack   string `json:"pack"`
		Reason string `json:"reason"`
	} `json:"unreadable_packs"`
	DamagedIndexFiles []string `json:"damaged_index_files"`
	BlobsDropped      int      `json:"blobs_dropped"`
	IndexFilesWritten int      `json:"index_files_written"`
}

// TestRepairHealsThroughTheBinary loses the pack holding most of a file
// and damages an index file, then goes the way a user would: the next
// backup (whose parent says the file is unchanged) stores the lost data
// again and both snapshots restore; repair index replaces the damaged
// index file and forgets the lost pack; after another backup, check
// --read-data is clean. Repair beside an exclusive lock exits busy.
func TestRepairHealsThroughTheBinary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	bigData := writeRandom(t, filepath.Join(src, "big.bin"), 77, 24<<20)
	writeFile(t, filepath.Join(src, "small.txt"), "small and unharmed\n", 0o644)
	restoreMatches := func(snapshot, what string) {
		t.Helper()
		target := filepath.Join(e.dir, "restore-"+what)
		e.expect(exitOK, "restore", snapshot, "--target", target)
		got, err := os.ReadFile(filepath.Join(target, src, "big.bin"))
		if err != nil || !bytes.Equal(got, bigData) {
			t.Fatalf("%s: big.bin does not restore bit for bit (%v)", what, err)
		}
		if small := readFile(t, filepath.Join(target, src, "small.txt")); small != "small and unharmed\n" {
			t.Fatalf("%s: small.txt restored as %q", what, small)
		}
	}

	first := e.backup(exitOK, src)
	// The largest pack holds only chunks of big.bin: the first 16 MiB.
	packs := objects(t, filepath.Join(e.repo, "data"))
	lost := largest(t, packs)
	if err := os.Remove(lost); err != nil {
		t.Fatal(err)
	}

	// The backup after the damage finds the pack gone and reads big.bin
	// again although the parent says it is unchanged.
	res := e.expect(exitOK, "backup", "--json", src)
	var healing backupReport
	decodeJSON(t, res, &healing)
	if !strings.Contains(res.Stdout, `"lost_packs":1`) || healing.BytesRead < int64(len(bigData)) {
		t.Fatalf("backup after the damage: want lost_packs 1 and big.bin read again, got:\n%s", res)
	}
	restoreMatches(healing.SnapshotID, "healing-backup")
	restoreMatches(first.SnapshotID, "first-after-healing")

	// A damaged index file is named, and backup and restore go on.
	indexes := objects(t, filepath.Join(e.repo, "index"))
	damagedIndex := largest(t, indexes)
	flipByte(t, damagedIndex, indexes[damagedIndex]-10)
	res = e.expect(exitOK, "backup", src)
	if !strings.Contains(res.Stderr, filepath.Base(damagedIndex)[:8]) {
		t.Errorf("backup does not name the damaged index file %s:\n%s", filepath.Base(damagedIndex), res)
	}
	restoreMatches(first.SnapshotID, "first-with-damaged-index")

	helper := e.holdExclusiveLock()
	if res := e.run("repair", "index"); res.Code != exitBusy {
		t.Fatalf("repair index beside an exclusive lock: want exit %d, got:\n%s", exitBusy, res)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	e.expect(exitOK, "unlock")

	res = e.expect(exitOK, "repair", "index", "--json")
	var rep repairIndexReport
	decodeJSON(t, res, &rep)
	if len(rep.DamagedIndexFiles) != 1 || rep.DamagedIndexFiles[0] != filepath.Base(damagedIndex) || rep.IndexFilesWritten == 0 {
		t.Fatalf("repair index: want the damaged index file named and new ones written, got %+v", rep)
	}
	if _, err := os.Stat(damagedIndex); err == nil {
		t.Fatal("the damaged index file is still there after repair index")
	}

	e.backup(exitOK, src)
	ck, res := e.check("--read-data")
	if res.Code != exitOK || !ck.OK {
		t.Fatalf("check --read-data after repair and backup:\n%s", res)
	}
	restoreMatches(first.SnapshotID, "first-after-repair")
	t.Logf("packs damaged 1 (deleted, %d bytes), index files damaged 1 (1 byte flipped): found and healed", packs[lost])
}
