package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// sourceFile is a file a test backs up.
type sourceFile struct {
	name string
	data []byte
}

// repairChunk is the size of the chunks backupFiles cuts files into.
const repairChunk = 64 << 10

var fileTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// backupFiles stores files as a backup does (content in chunks, a tree
// for /src and one for the root, a snapshot) in a session that adopts
// and heals (WriteOptions.AdoptPacks), on a repository opened anew.
func backupFiles(t *testing.T, be repo.Backend, files []sourceFile) (*repo.Snapshot, repo.WriteStats) {
	t.Helper()
	ctx := context.Background()
	r := openRepo(t, be)
	var root repo.ID
	written, err := r.WriteSession(ctx, repo.WriteOptions{AdoptPacks: true}, func(ctx context.Context, w *repo.Writer) error {
		var nodes []repo.Node
		for _, f := range files {
			var content []repo.ID
			for off := 0; off < len(f.data); off += repairChunk {
				chunk := f.data[off:min(off+repairChunk, len(f.data))]
				id := r.BlobID(chunk)
				if _, err := w.SaveBlob(ctx, repo.DataBlob, id, chunk); err != nil {
					return err
				}
				content = append(content, id)
			}
			nodes = append(nodes, repo.Node{Name: f.name, Type: repo.NodeFile, Mode: 0o644, Size: uint64(len(f.data)), MTime: fileTime, Content: content})
		}
		src, err := w.SaveTree(ctx, &repo.Tree{Nodes: nodes})
		if err != nil {
			return err
		}
		root, err = w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "src", Type: repo.NodeDir, Mode: 0o755, MTime: fileTime, Subtree: &src}}})
		return err
	})
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	snap := &repo.Snapshot{ID: repo.NewSnapshotID(), Time: time.Now(), Hostname: "host", Paths: []string{"/src"}, Tree: root, ProgramVersion: "test"}
	if err := written.SaveSnapshot(ctx, snap); err != nil {
		t.Fatalf("save snapshot: %v", err)
	}
	return snap, written.Stats()
}

// readBackFiles reads back every file of a snapshot made by backupFiles.
func readBackFiles(ctx context.Context, r *repo.Repository, snap *repo.Snapshot) (map[string][]byte, error) {
	root, err := r.LoadTree(ctx, snap.Tree)
	if err != nil {
		return nil, fmt.Errorf("root tree: %w", err)
	}
	out := map[string][]byte{}
	for _, dir := range root.Nodes {
		tree, err := r.LoadTree(ctx, *dir.Subtree)
		if err != nil {
			return nil, fmt.Errorf("tree of %s: %w", dir.Name, err)
		}
		for _, n := range tree.Nodes {
			var data []byte
			for _, id := range n.Content {
				chunk, err := r.LoadBlob(ctx, id)
				if err != nil {
					return nil, fmt.Errorf("file %s: %w", n.Name, err)
				}
				data = append(data, chunk...)
			}
			out[n.Name] = data
		}
	}
	return out, nil
}

// assertRestores opens the repository anew and restores snap bit for bit.
func assertRestores(t *testing.T, be repo.Backend, snap *repo.Snapshot, files []sourceFile, what string) {
	t.Helper()
	got, err := readBackFiles(context.Background(), openRepo(t, be), snap)
	if err != nil {
		t.Fatalf("%s: restore: %v", what, err)
	}
	if len(got) != len(files) {
		t.Fatalf("%s: restored %d files, want %d", what, len(got), len(files))
	}
	for _, f := range files {
		if !bytes.Equal(got[f.name], f.data) {
			t.Fatalf("%s: %s differs after restore", what, f.name)
		}
	}
}

// assertCheckClean runs check --read-data on a repository opened anew.
func assertCheckClean(t *testing.T, be repo.Backend, what string) {
	t.Helper()
	rep, err := openNoIndex(t, be).Check(context.Background(), repo.CheckOptions{ReadDataFraction: 1})
	if err != nil {
		t.Fatalf("%s: check: %v", what, err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("%s: check --read-data found problems:%s", what, problemList(rep))
	}
}

// packDamage is one way a pack can be damaged; flipAt is where in the
// blob a byte is flipped (for "flip").
type packDamage string

const (
	flipByte   packDamage = "flip"
	truncate   packDamage = "truncate"
	deletePack packDamage = "delete"
)

// damagePack damages pack h; for flipByte the byte at offset is inverted.
// It returns how many bytes it changed (flipped or cut off, or the
// pack's size when deleted).
func damagePack(t *testing.T, be repo.Backend, h repo.Handle, how packDamage, offset int) int {
	t.Helper()
	data := load(t, be, h)
	if err := be.Remove(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	switch how {
	case flipByte:
		store(t, be, h, flipped(data, offset))
		return 1
	case truncate:
		store(t, be, h, data[:len(data)/2])
		return len(data) - len(data)/2
	}
	return len(data)
}

// The files of the repair tests: a.bin and b.bin go into packs of their
// own (two sessions); a.bin's pack, or the trees of the second snapshot,
// are damaged.
func repairSources() (first, both []sourceFile) {
	a := sourceFile{"a.bin", random(11, 5*repairChunk+100)}
	b := sourceFile{"b.bin", random(12, 3*repairChunk)}
	return []sourceFile{a}, []sourceFile{a, b}
}

// TestRepairHealsDamagedPacks damages a data pack and a tree pack in each
// way, backs up the same files again, repairs, and backs up once more:
// the snapshots made before, during and after restore bit for bit, and
// check --read-data is clean. A deleted or cut pack is healed by the
// first backup already; a flipped byte needs repair packs to be found.
func TestRepairHealsDamagedPacks(t *testing.T) {
	var damaged, changedBytes, found, healed int
	for _, kind := range []repo.BlobType{repo.DataBlob, repo.TreeBlob} {
		for _, how := range []packDamage{flipByte, truncate, deletePack} {
			t.Run(kind.String()+"/"+string(how), func(t *testing.T) {
				oneCore(t)
				be := memory.New()
				initRepo(t, be)
				first, both := repairSources()
				snap0, _ := backupFiles(t, be, first)
				snap1, _ := backupFiles(t, be, both)

				// The blob to damage: a.bin's first chunk, or snap1's
				// root tree; its pack holds other blobs too.
				r := openRepo(t, be)
				target := snap1.Tree
				if kind == repo.DataBlob {
					target = r.BlobID(first[0].data[:repairChunk])
				}
				b, ok := r.Index().Lookup(target)
				if !ok {
					t.Fatal("target blob not indexed")
				}
				pack := repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}
				changedBytes += damagePack(t, be, pack, how, int(b.Offset)+int(b.Length)/2)
				damaged++
				if _, err := readBackFiles(context.Background(), openRepo(t, be), snap1); err == nil {
					t.Fatal("snapshot restores after its pack was damaged: the damage missed")
				}

				// The next backup of the same files heals what it can
				// see: a pack gone or cut short.
				snap2, stats := backupFiles(t, be, both)
				if how != flipByte {
					if stats.LostPacks != 1 || stats.LostBlobs == 0 {
						t.Fatalf("backup after the damage: %d lost packs, %d lost blobs; want 1 and some", stats.LostPacks, stats.LostBlobs)
					}
					assertRestores(t, be, snap2, both, "snapshot of the backup after the damage")
					assertRestores(t, be, snap1, both, "snapshot from before the damage, after the healing backup")
				}

				// Repair: the index is rebuilt from the packs; a pack with
				// a flipped byte is found by reading it whole.
				r = openRepo(t, be)
				if how == flipByte {
					res, err := r.RepairPacks(context.Background(), repo.RepairPacksOptions{})
					if err != nil {
						t.Fatalf("repair packs: %v", err)
					}
					if len(res.DamagedPacks) != 1 || res.DamagedPacks[0].Pack != b.Pack || res.BlobsLost != 1 || res.PacksRemoved != 1 {
						t.Fatalf("repair packs: %+v, want pack %s damaged with one blob lost, and removed", res, b.Pack.Short())
					}
					if res.BlobsSalvaged == 0 || res.PacksWritten == 0 {
						t.Fatalf("repair packs salvaged %d blobs into %d packs, want the pack's other blobs", res.BlobsSalvaged, res.PacksWritten)
					}
					if slices.Contains(names(t, be, repo.PackFile), b.Pack.String()) {
						t.Fatal("the damaged pack is still there")
					}
					found++
				} else {
					res, err := r.RepairIndex(context.Background(), repo.RepairIndexOptions{})
					if err != nil {
						t.Fatalf("repair index: %v", err)
					}
					if how == truncate && (len(res.UnreadablePacks) != 1 || res.UnreadablePacks[0].Pack != b.Pack || (kind == repo.DataBlob && res.UnreadablePacks[0].KeptBlobs == 0)) {
						t.Fatalf("repair index named %v as unreadable, want the cut pack %s with its intact blobs kept", res.UnreadablePacks, b.Pack.Short())
					}
					if how == truncate {
						// The cut pack's intact first half stays indexed
						// until repair packs salvages it (a small tree
						// pack cut in half keeps nothing).
						pres, err := openRepo(t, be).RepairPacks(context.Background(), repo.RepairPacksOptions{})
						if err != nil || pres.BlobsLost != 0 || pres.PacksRemoved != 1 {
							t.Fatalf("repair packs after repair index: %+v, %v; want the cut pack salvaged, nothing lost", pres, err)
						}
					}
					found++
				}
				snap3, _ := backupFiles(t, be, both)
				for _, s := range []struct {
					snap  *repo.Snapshot
					files []sourceFile
					what  string
				}{{snap0, first, "first snapshot"}, {snap1, both, "damaged snapshot"}, {snap2, both, "snapshot after the damage"}, {snap3, both, "snapshot after repair"}} {
					assertRestores(t, be, s.snap, s.files, s.what)
				}
				assertCheckClean(t, be, "after repair and backup")
				healed++
			})
		}
	}
	t.Logf("packs damaged %d (%d bytes flipped, cut off or deleted), found %d, healed %d", damaged, changedBytes, found, healed)
}

// TestDamagedIndexFileIsContained damages an index file (a flipped byte,
// a truncation): opening, backing up and restoring go on, with the file
// named; repair index replaces it, and check is clean after.
func TestDamagedIndexFileIsContained(t *testing.T) {
	for _, how := range []packDamage{flipByte, truncate} {
		t.Run(string(how), func(t *testing.T) {
			oneCore(t)
			be := memory.New()
			initRepo(t, be)
			first, both := repairSources()
			snap0, _ := backupFiles(t, be, first)
			snap1, _ := backupFiles(t, be, both)
			indexes := names(t, be, repo.IndexFile)
			sort.Strings(indexes)
			victim := repo.Handle{Type: repo.IndexFile, Name: indexes[0]}
			size := len(load(t, be, victim))
			damagePack(t, be, victim, how, size-20)

			r := openRepo(t, be) // fails the test if the index does not load
			bad, fromHeaders := r.IndexDamage()
			if len(bad) != 1 || bad[0].Name != victim.Name || !errors.Is(bad[0].Err, repo.ErrIntegrity) {
				t.Fatalf("index damage %v, want %s named", bad, victim.Name)
			}
			if fromHeaders == 0 {
				t.Fatal("no pack was indexed from its header in place of the damaged index file")
			}
			assertRestores(t, be, snap0, first, "first snapshot with a damaged index file")
			assertRestores(t, be, snap1, both, "second snapshot with a damaged index file")
			snap2, _ := backupFiles(t, be, both)
			assertRestores(t, be, snap2, both, "backup with a damaged index file")

			rep, err := openNoIndex(t, be).Check(context.Background(), repo.CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if findProblem(rep, "index "+victim.Name) == nil {
				t.Fatalf("check does not report the damaged index file:%s", problemList(rep))
			}

			before := names(t, be, repo.IndexFile)
			res, err := openRepo(t, be).RepairIndex(context.Background(), repo.RepairIndexOptions{})
			if err != nil {
				t.Fatalf("repair index: %v", err)
			}
			if !slices.Equal(res.DamagedIndexFiles, []string{victim.Name}) || res.IndexFilesRemoved != len(before) {
				t.Fatalf("repair index: %+v, want the damaged file named and every old file removed", res)
			}
			if slices.Contains(names(t, be, repo.IndexFile), victim.Name) {
				t.Fatal("the damaged index file is still there")
			}
			if bad, _ := openRepo(t, be).IndexDamage(); len(bad) != 0 {
				t.Fatalf("index damage after repair: %v", bad)
			}
			for _, s := range []*repo.Snapshot{snap1, snap2} {
				assertRestores(t, be, s, both, "after repair index")
			}
			assertCheckClean(t, be, "after repair index")
		})
	}
}

// openNoIndex opens the repository in be without loading the index.
func openNoIndex(t *testing.T, be repo.Backend) *repo.Repository {
	t.Helper()
	r, err := repo.Open(context.Background(), be, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// cloneBackend copies every object of be into a new memory backend.
func cloneBackend(t *testing.T, be repo.Backend) *memory.Backend {
	t.Helper()
	out := memory.New()
	for _, ft := range []repo.FileType{repo.ConfigFile, repo.KeyFile, repo.PackFile, repo.IndexFile, repo.SnapshotFile,
		repo.LockFile, repo.PinFile, repo.ForgetFile, repo.VerifyFile} {
		for _, name := range names(t, be, ft) {
			h := repo.Handle{Type: ft, Name: name}
			store(t, out, h, load(t, be, h))
		}
	}
	return out
}

// killedAfter is a backend whose process dies after n changes: every
// Save and Remove after the nth fails, as if nothing ran any more.
type killedAfter struct {
	repo.Backend
	changes, n int
}

var errKilled = errors.New("killed")

func (k *killedAfter) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if k.changes >= k.n {
		return errKilled
	}
	k.changes++
	return k.Backend.Save(ctx, h, data)
}

func (k *killedAfter) Remove(ctx context.Context, h repo.Handle) error {
	if k.changes >= k.n {
		return errKilled
	}
	k.changes++
	return k.Backend.Remove(ctx, h)
}

// TestRepairIndexSurvivesKills stops repair index after each of its
// changes (index files written, old ones removed): the repository opens
// every time, every snapshot restores, and a second repair finishes the
// work.
func TestRepairIndexSurvivesKills(t *testing.T) {
	oneCore(t)
	be := memory.New()
	initRepo(t, be)
	first, both := repairSources()
	snap0, _ := backupFiles(t, be, first)
	snap1, _ := backupFiles(t, be, both)
	indexes := names(t, be, repo.IndexFile)
	sort.Strings(indexes)
	victim := repo.Handle{Type: repo.IndexFile, Name: indexes[0]}
	damagePack(t, be, victim, flipByte, 40)

	kills := 0
	for n := 0; ; n++ {
		clone := cloneBackend(t, be)
		killed := &killedAfter{Backend: clone, n: n}
		_, err := openNoIndex(t, killed).RepairIndex(context.Background(), repo.RepairIndexOptions{})
		if err == nil {
			if n == 0 {
				t.Fatal("repair index changed nothing")
			}
			break
		}
		if !errors.Is(err, errKilled) {
			t.Fatalf("repair index killed after %d changes: %v", n, err)
		}
		kills++
		assertRestores(t, clone, snap0, first, fmt.Sprintf("first snapshot, repair killed after %d changes", n))
		assertRestores(t, clone, snap1, both, fmt.Sprintf("second snapshot, repair killed after %d changes", n))
		if _, err := openNoIndex(t, clone).RepairIndex(context.Background(), repo.RepairIndexOptions{}); err != nil {
			t.Fatalf("repair index after a kill after %d changes: %v", n, err)
		}
		if bad, _ := openRepo(t, clone).IndexDamage(); len(bad) != 0 {
			t.Fatalf("second repair after a kill after %d changes left damage: %v", n, bad)
		}
		assertCheckClean(t, clone, fmt.Sprintf("second repair after a kill after %d changes", n))
	}
	if kills < 3 {
		t.Fatalf("repair was killed at %d points only, want every write and removal", kills)
	}
	t.Logf("repair index killed at %d points", kills)
}

// TestRepairSnapshotsLeavesOutWhatIsLost loses a.bin's pack and repairs
// the index; repair snapshots then writes copies without a.bin, that
// name it and restore, and with Forget removes the damaged originals, so
// that check is clean again.
func TestRepairSnapshotsLeavesOutWhatIsLost(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	be := memory.New()
	initRepo(t, be)
	first, both := repairSources()
	snap0, _ := backupFiles(t, be, first)
	snap1, _ := backupFiles(t, be, both)
	r := openRepo(t, be)
	b, _ := r.Index().Lookup(r.BlobID(first[0].data[:repairChunk]))
	damagePack(t, be, repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}, deletePack, 0)
	if _, err := openRepo(t, be).RepairIndex(ctx, repo.RepairIndexOptions{}); err != nil {
		t.Fatal(err)
	}

	dry, err := openRepo(t, be).RepairSnapshots(ctx, repo.RepairSnapshotsOptions{DryRun: true, Forget: false})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Repaired) != 2 || len(names(t, be, repo.SnapshotFile)) != 2 {
		t.Fatalf("dry run: %+v, with %d snapshot files; want 2 found damaged and nothing written", dry, len(names(t, be, repo.SnapshotFile)))
	}
	res, err := openRepo(t, be).RepairSnapshots(ctx, repo.RepairSnapshotsOptions{Forget: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshots != 2 || len(res.Repaired) != 2 {
		t.Fatalf("repair snapshots: %+v, want both snapshots repaired", res)
	}
	r = openRepo(t, be)
	for _, rs := range res.Repaired {
		if !rs.Forgotten {
			t.Fatalf("original %s not forgotten", rs.Original)
		}
		if len(rs.Removed) != 1 || rs.Removed[0].Path != "/src/a.bin" {
			t.Fatalf("snapshot %s: removed %v, want /src/a.bin", rs.Original, rs.Removed)
		}
		copied, err := r.LoadSnapshot(ctx, rs.Repaired)
		if err != nil {
			t.Fatal(err)
		}
		orig := snap0
		want := []sourceFile{}
		if rs.Original == snap1.ID {
			orig, want = snap1, both[1:]
		}
		if !copied.Time.Equal(orig.Time) || !slices.Equal(copied.Paths, orig.Paths) || !slices.Contains(copied.Tags, repo.RepairedTag) ||
			!copied.Summary.Partial || len(copied.Summary.Skipped) != 1 || copied.Summary.Skipped[0].Path != "/src/a.bin" {
			t.Fatalf("repaired snapshot %+v does not keep the original's time and paths, or lacks the tag and the record of a.bin", copied)
		}
		assertRestores(t, be, copied, want, "repaired snapshot")
	}
	if got := names(t, be, repo.SnapshotFile); len(got) != 2 || slices.Contains(got, snap0.ID) || slices.Contains(got, snap1.ID) {
		t.Fatalf("snapshot files %v, want the two copies only", got)
	}
	assertCheckClean(t, be, "after repair snapshots --forget")
}

// TestRepairDryRunChangesNothing runs repair index and repair packs as
// dry runs on a damaged repository: they find the damage and leave every
// file as it was.
func TestRepairDryRunChangesNothing(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	be := memory.New()
	initRepo(t, be)
	first, both := repairSources()
	backupFiles(t, be, first)
	backupFiles(t, be, both)
	r := openRepo(t, be)
	b, _ := r.Index().Lookup(r.BlobID(first[0].data[:repairChunk]))
	damagePack(t, be, repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}, flipByte, int(b.Offset)+10)
	before := cloneBackend(t, be)

	packs, err := openRepo(t, be).RepairPacks(ctx, repo.RepairPacksOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(packs.DamagedPacks) != 1 || packs.DamagedPacks[0].BlobsLost != 1 {
		t.Fatalf("dry run of repair packs: %+v, want one damaged pack with one blob lost", packs)
	}
	index, err := openRepo(t, be).RepairIndex(ctx, repo.RepairIndexOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if index.IndexFilesWritten != 0 || index.IndexFilesRemoved != 0 || index.PacksRead == 0 {
		t.Fatalf("dry run of repair index: %+v", index)
	}
	for _, ft := range []repo.FileType{repo.PackFile, repo.IndexFile, repo.SnapshotFile} {
		got, want := names(t, be, ft), names(t, before, ft)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("a dry run changed the %s files", ft)
		}
	}
}

// TestPruneAfterHealingBackup prunes a repository healed by a backup but
// not repaired: the index still lists the lost pack beside the new
// copies, and prune keeps the copies, so every snapshot still restores
// and check --read-data is clean after.
func TestPruneAfterHealingBackup(t *testing.T) {
	oneCore(t)
	be := memory.New()
	initRepo(t, be)
	first, both := repairSources()
	snap0, _ := backupFiles(t, be, first)
	snap1, _ := backupFiles(t, be, both)
	r := openRepo(t, be)
	b, _ := r.Index().Lookup(r.BlobID(first[0].data[:repairChunk]))
	damagePack(t, be, repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}, deletePack, 0)
	snap2, stats := backupFiles(t, be, both)
	if stats.LostPacks != 1 {
		t.Fatalf("healing backup found %d lost packs, want 1", stats.LostPacks)
	}
	if _, err := openRepo(t, be).Prune(context.Background(), repo.PruneOptions{LeftoverAge: time.Nanosecond}); err != nil {
		t.Fatalf("prune after a healing backup: %v", err)
	}
	assertRestores(t, be, snap0, first, "first snapshot after prune")
	assertRestores(t, be, snap1, both, "second snapshot after prune")
	assertRestores(t, be, snap2, both, "healing snapshot after prune")
	assertCheckClean(t, be, "prune after a healing backup")
}
