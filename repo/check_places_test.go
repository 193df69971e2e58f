package repo_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// snapshotProblems returns the problems of rep that break a snapshot.
func snapshotProblems(rep *repo.CheckReport) []repo.Problem {
	var out []repo.Problem
	for _, p := range rep.Problems {
		if p.Total > 0 {
			out = append(out, p)
		}
	}
	return out
}

// TestCheckAfterHealingBackup loses a pack, lets a backup store its blobs
// again, and checks many times (the index loads in a different order each
// time, so the lost pack's entries are sometimes the first places): no
// check reports a snapshot as damaged, and every one names the stale
// entries of the lost pack as an index problem for repair index.
func TestCheckAfterHealingBackup(t *testing.T) {
	oneCore(t)
	be := memory.New()
	initRepo(t, be)
	first, both := repairSources()
	backupFiles(t, be, first)
	backupFiles(t, be, both)
	r := openRepo(t, be)
	b, _ := r.Index().Lookup(r.BlobID(first[0].data[:repairChunk]))
	damagePack(t, be, repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}, deletePack, 0)
	backupFiles(t, be, both)
	for i := range 20 {
		rep, err := openNoIndex(t, be).Check(context.Background(), repo.CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if bad := snapshotProblems(rep); len(bad) > 0 {
			t.Fatalf("check %d after a healing backup reports snapshots damaged: %+v", i, bad)
		}
		if len(rep.Problems) != 1 || rep.Problems[0].Object != "pack "+b.Pack.String() || !strings.Contains(rep.Problems[0].Error, "repair index") {
			t.Fatalf("check %d: problems%s; want only the stale entries of lost pack %s, naming repair index", i, problemList(rep), b.Pack.Short())
		}
	}
}

// TestCheckReadDataRottenSpareCopy stores a.bin's chunks twice and rots
// one chunk in one of the two packs: check --read-data reports that pack,
// but no snapshot as damaged, as the other copy is whole.
func TestCheckReadDataRottenSpareCopy(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	be := memory.New()
	initRepo(t, be)
	first, _ := repairSources()
	backupFiles(t, be, first)
	before := names(t, be, repo.PackFile)
	r := openNoIndex(t, be)
	data := first[0].data
	if _, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		for off := 0; off < len(data); off += repairChunk {
			chunk := data[off:min(off+repairChunk, len(data))]
			if _, err := w.SaveBlob(ctx, repo.DataBlob, r.BlobID(chunk), chunk); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var spare repo.ID
	for _, name := range names(t, be, repo.PackFile) {
		if !slices.Contains(before, name) {
			spare, _ = repo.ParseID(name)
		}
	}
	h := repo.Handle{Type: repo.PackFile, Name: spare.String()}
	blobs, err := r.ReadPackHeader(ctx, spare, int64(len(load(t, be, h))))
	if err != nil {
		t.Fatal(err)
	}
	damagePack(t, be, h, flipByte, int(blobs[0].Offset)+int(blobs[0].Length)/2)
	for i := range 5 {
		rep, err := openNoIndex(t, be).Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
		if err != nil {
			t.Fatal(err)
		}
		if bad := snapshotProblems(rep); len(bad) > 0 {
			t.Fatalf("check %d reports snapshots damaged by a rotten spare copy: %+v", i, bad)
		}
		if len(rep.Problems) != 1 || rep.Problems[0].Object != "pack "+spare.String() {
			t.Fatalf("check %d: problems%s; want the rotten pack %s only", i, problemList(rep), spare.Short())
		}
	}
}

// TestTrailerCutIsCutForAll cuts a pack 3 bytes after its last blob, short
// of the room a trailer needs, so that every blob's bytes are still there: healing (a backup), check and prune all
// count its copies as not whole, so the backup stores them again, check
// blames no snapshot, and prune keeps the new copies and drops the cut
// pack, even where the cut pack sorts first.
func TestTrailerCutIsCutForAll(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	for seed := range uint64(30) {
		be := memory.New()
		initRepo(t, be)
		a := sourceFile{"a.bin", random(100+seed, 3*repairChunk)}
		snap0, _ := backupFiles(t, be, []sourceFile{a})
		r := openRepo(t, be)
		b, _ := r.Index().Lookup(r.BlobID(a.data[:repairChunk]))
		h := repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}
		data := load(t, be, h)
		blobs, err := r.ReadPackHeader(ctx, b.Pack, int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		last := blobs[len(blobs)-1]
		if err := be.Remove(ctx, h); err != nil {
			t.Fatal(err)
		}
		store(t, be, h, data[:last.Offset+last.Length+3])
		before := names(t, be, repo.PackFile)
		snap1, stats := backupFiles(t, be, []sourceFile{a})
		if stats.LostPacks != 1 {
			t.Fatalf("healing backup found %d lost packs, want the cut one", stats.LostPacks)
		}
		var fresh []string
		for _, name := range names(t, be, repo.PackFile) {
			if !slices.Contains(before, name) {
				fresh = append(fresh, name)
			}
		}
		if slices.ContainsFunc(fresh, func(n string) bool { return n < b.Pack.String() }) {
			continue // the case to test is the cut pack sorting first
		}
		rep, err := openNoIndex(t, be).Check(ctx, repo.CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if bad := snapshotProblems(rep); len(bad) > 0 {
			t.Fatalf("check after the healing backup reports snapshots damaged: %+v", bad)
		}
		if _, err := openRepo(t, be).Prune(ctx, repo.PruneOptions{LeftoverAge: time.Nanosecond}); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names(t, be, repo.PackFile), b.Pack.String()) {
			t.Fatal("prune kept the pack cut short of its trailer")
		}
		assertRestores(t, be, snap0, []sourceFile{a}, "first snapshot after prune")
		assertRestores(t, be, snap1, []sourceFile{a}, "healing snapshot after prune")
		assertCheckClean(t, be, "after prune")
		return
	}
	t.Fatal("no seed gave a cut pack that sorts before the new ones")
}
