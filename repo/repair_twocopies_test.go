package repo_test

import (
	"context"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// TestRepairPacksTwoDamagedCopies stores a.bin's chunks twice, by two
// sessions that do not see each other, and rots a different chunk in each
// of the two packs: every chunk still reads from one copy, and repair
// packs must keep every one of them.
func TestRepairPacksTwoDamagedCopies(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	be := memory.New()
	initRepo(t, be)
	first, _ := repairSources()
	snap, _ := backupFiles(t, be, first)
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
	victims := []repo.ID{r.BlobID(data[:repairChunk]), r.BlobID(data[repairChunk : 2*repairChunk])}
	sizes := map[repo.ID]int64{}
	if err := be.List(ctx, repo.PackFile, func(name string, size int64) error {
		id, err := repo.ParseID(name)
		sizes[id] = size
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// The two packs holding the first chunk; in the i-th, victims[i] rots.
	rotted := 0
	for id, size := range sizes {
		blobs, err := r.ReadPackHeader(ctx, id, size)
		if err != nil {
			t.Fatal(err)
		}
		var at = map[repo.ID]repo.PackedBlob{}
		for _, b := range blobs {
			at[b.ID] = b
		}
		if _, ok := at[victims[0]]; !ok {
			continue
		}
		if rotted == 2 {
			t.Fatal("the first chunk lies in more than two packs")
		}
		b := at[victims[rotted]]
		damagePack(t, be, repo.Handle{Type: repo.PackFile, Name: id.String()}, flipByte, int(b.Offset)+int(b.Length)/2)
		rotted++
	}
	if rotted != 2 {
		t.Fatalf("the first chunk lies in %d packs, want 2", rotted)
	}
	assertRestores(t, be, snap, first, "before repair: every chunk reads from one copy")
	res, err := openRepo(t, be).RepairPacks(ctx, repo.RepairPacksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.BlobsLost != 0 || res.PacksRemoved != 2 {
		t.Fatalf("repair packs: lost %d, removed %d (damaged %+v); want 0 lost, 2 removed", res.BlobsLost, res.PacksRemoved, res.DamagedPacks)
	}
	assertRestores(t, be, snap, first, "after repair packs")
	assertCheckClean(t, be, "after repair packs")
}
