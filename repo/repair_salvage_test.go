package repo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// headerDamage is a way to damage a pack's header or trailer, leaving
// every blob intact: where, counted from the pack's end, a byte is
// flipped, or how many bytes are cut off the end.
var headerDamage = []struct {
	name     string
	flipFrom int // flip the byte this far before the end (0: none)
	cut      int // bytes cut off the end (0: none)
}{
	{name: "header flip", flipFrom: 8 + 5},
	{name: "trailer flip", flipFrom: 3},
	{name: "trailer cut", cut: 3},
	{name: "header cut", cut: 8 + 5},
}

// damageHeader damages the header or trailer of the pack holding a.bin's
// first chunk, and returns that pack.
func damageHeader(t *testing.T, be repo.Backend, first []sourceFile, flipFrom, cut int) repo.ID {
	t.Helper()
	r := openRepo(t, be)
	b, ok := r.Index().Lookup(r.BlobID(first[0].data[:repairChunk]))
	if !ok {
		t.Fatal("target blob not indexed")
	}
	h := repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}
	data := load(t, be, h)
	if err := be.Remove(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if flipFrom > 0 {
		store(t, be, h, flipped(data, len(data)-flipFrom))
	} else {
		store(t, be, h, data[:len(data)-cut])
	}
	return b.Pack
}

// TestRepairPacksSalvagesByIndex damages only the header or trailer of a
// pack: repair packs reads its blobs through the index, stores them
// again, and loses none; the snapshot restores after, and check is clean.
func TestRepairPacksSalvagesByIndex(t *testing.T) {
	for _, d := range headerDamage {
		t.Run(d.name, func(t *testing.T) {
			oneCore(t)
			be := memory.New()
			initRepo(t, be)
			first, _ := repairSources()
			snap, _ := backupFiles(t, be, first)
			pack := damageHeader(t, be, first, d.flipFrom, d.cut)
			res, err := openRepo(t, be).RepairPacks(context.Background(), repo.RepairPacksOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.BlobsLost != 0 || res.PacksRemoved != 1 || len(res.DamagedPacks) != 1 || res.DamagedPacks[0].Pack != pack {
				t.Fatalf("repair packs: lost %d, removed %d, damaged %+v; want the damaged pack salvaged whole", res.BlobsLost, res.PacksRemoved, res.DamagedPacks)
			}
			if res.BlobsSalvaged == 0 {
				t.Fatal("repair packs salvaged nothing")
			}
			assertRestores(t, be, snap, first, "after repair packs")
			assertCheckClean(t, be, "after repair packs")
		})
	}
}

// TestRepairIndexKeepsHeaderlessEntries damages only the header or
// trailer of a pack: repair index keeps the old entries of its intact
// blobs and names the pack for repair packs; the snapshot restores.
func TestRepairIndexKeepsHeaderlessEntries(t *testing.T) {
	for _, d := range headerDamage {
		t.Run(d.name, func(t *testing.T) {
			oneCore(t)
			be := memory.New()
			initRepo(t, be)
			first, _ := repairSources()
			snap, _ := backupFiles(t, be, first)
			pack := damageHeader(t, be, first, d.flipFrom, d.cut)
			res, err := openRepo(t, be).RepairIndex(context.Background(), repo.RepairIndexOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.BlobsDropped != 0 {
				t.Errorf("repair index dropped %d blobs that still read", res.BlobsDropped)
			}
			if len(res.UnreadablePacks) != 1 || res.UnreadablePacks[0].Pack != pack || res.UnreadablePacks[0].KeptBlobs == 0 ||
				!strings.Contains(res.UnreadablePacks[0].Reason, "header damaged: run repair packs") {
				t.Fatalf("unreadable packs %+v; want the damaged pack named, its entries kept", res.UnreadablePacks)
			}
			assertRestores(t, be, snap, first, "after repair index")
			// repair packs then salvages it.
			if res, err := openRepo(t, be).RepairPacks(context.Background(), repo.RepairPacksOptions{}); err != nil || res.BlobsLost != 0 {
				t.Fatalf("repair packs after repair index: %+v, %v", res, err)
			}
			assertRestores(t, be, snap, first, "after repair packs")
		})
	}
}

// TestRepairPacksSurvivesKills stops repair packs, salvaging a pack whose
// header is damaged, after each of its changes (packs and index files
// written, the damaged pack deleted, index files replaced): every
// snapshot restores each time, and a second run finishes the work with
// nothing lost and check clean.
func TestRepairPacksSurvivesKills(t *testing.T) {
	oneCore(t)
	be := memory.New()
	initRepo(t, be)
	first, both := repairSources()
	snap0, _ := backupFiles(t, be, first)
	snap1, _ := backupFiles(t, be, both)
	damageHeader(t, be, first, headerDamage[0].flipFrom, 0)
	kills := 0
	for n := 0; ; n++ {
		clone := cloneBackend(t, be)
		killed := &killedAfter{Backend: clone, n: n}
		_, err := openRepo(t, killed).RepairPacks(context.Background(), repo.RepairPacksOptions{})
		if err == nil {
			if n == 0 {
				t.Fatal("repair packs changed nothing")
			}
			break
		}
		if !errors.Is(err, errKilled) {
			t.Fatalf("repair packs killed after %d changes: %v", n, err)
		}
		kills++
		what := fmt.Sprintf("repair packs killed after %d changes", n)
		assertRestores(t, clone, snap0, first, "first snapshot, "+what)
		assertRestores(t, clone, snap1, both, "second snapshot, "+what)
		res, err := openRepo(t, clone).RepairPacks(context.Background(), repo.RepairPacksOptions{})
		if err != nil || res.BlobsLost != 0 {
			t.Fatalf("repair packs after it was killed after %d changes: %+v, %v", n, res, err)
		}
		assertRestores(t, clone, snap1, both, "second snapshot, second run after "+what)
		assertCheckClean(t, clone, "second run after "+what)
	}
	if kills < 3 {
		t.Fatalf("repair packs was killed at %d points only, want every write and removal", kills)
	}
	t.Logf("repair packs killed at %d points", kills)
}
