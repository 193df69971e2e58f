package repo_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// errConnReset is a storage error that says nothing about the data.
var errConnReset = errors.New("connection reset by peer")

// resettingPacks fails every read of a pack with errConnReset while on.
type resettingPacks struct {
	repo.Backend
	on atomic.Bool
}

func (b *resettingPacks) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile && b.on.Load() {
		return nil, errConnReset
	}
	return b.Backend.Load(ctx, h, offset, length)
}

func (b *resettingPacks) Unwrap() repo.Backend { return b.Backend }

// TestRepairSnapshotsStopsOnStorageError: a storage error while repair
// snapshots --forget reads a tree ends the repair with that error; no
// snapshot is forgotten or written, and the snapshot still restores.
func TestRepairSnapshotsStopsOnStorageError(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	initRepo(t, mem)
	first, _ := repairSources()
	snap, _ := backupFiles(t, mem, first)
	before := names(t, mem, repo.SnapshotFile)
	be := &resettingPacks{Backend: mem}
	r := openRepo(t, be)
	be.on.Store(true)
	res, err := r.RepairSnapshots(ctx, repo.RepairSnapshotsOptions{Forget: true})
	be.on.Store(false)
	if !errors.Is(err, errConnReset) {
		t.Fatalf("repair snapshots over a failing storage: %+v, %v; want the storage error", res, err)
	}
	if got := names(t, mem, repo.SnapshotFile); !slices.Equal(got, before) {
		t.Fatalf("snapshot files %v after the failed repair, want %v", got, before)
	}
	assertRestores(t, mem, snap, first, "after the failed repair")
}

// TestRepairSnapshotsForgetsByProtocol: --forget removes the damaged
// originals as forget does, with their verification records and no mark
// left behind, and keeps a pinned original.
func TestRepairSnapshotsForgetsByProtocol(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	be := memory.New()
	initRepo(t, be)
	first, both := repairSources()
	snap0, _ := backupFiles(t, be, first)
	snap1, _ := backupFiles(t, be, both)
	r := openRepo(t, be)
	if err := r.SaveVerification(ctx, &repo.Verification{Snapshot: snap0.ID, OK: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Pin(ctx, snap1.ID, "keep for the test"); err != nil {
		t.Fatal(err)
	}
	b, _ := r.Index().Lookup(r.BlobID(first[0].data[:repairChunk]))
	damagePack(t, be, repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}, deletePack, 0)
	if _, err := openRepo(t, be).RepairIndex(ctx, repo.RepairIndexOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := openRepo(t, be).RepairSnapshots(ctx, repo.RepairSnapshotsOptions{Forget: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Repaired) != 2 || !slices.Equal(res.KeptPinned, []string{snap1.ID}) {
		t.Fatalf("repair snapshots: %+v; want both repaired, %s kept for its pin", res, snap1.ID)
	}
	for _, rs := range res.Repaired {
		if rs.Forgotten != (rs.Original == snap0.ID) {
			t.Errorf("original %s forgotten: %v", rs.Original, rs.Forgotten)
		}
	}
	snaps := names(t, be, repo.SnapshotFile)
	if slices.Contains(snaps, snap0.ID) || !slices.Contains(snaps, snap1.ID) {
		t.Errorf("snapshot files %v: want %s gone, pinned %s kept", snaps, snap0.ID, snap1.ID)
	}
	if v := names(t, be, repo.VerifyFile); len(v) != 0 {
		t.Errorf("verification records %v left of forgotten snapshots", v)
	}
	if m := names(t, be, repo.ForgetFile); len(m) != 0 {
		t.Errorf("forget marks %v left behind", m)
	}
}
