package repo_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// pruneBlobSize is the size of every data blob of the prune fixture:
// random, so that it does not compress and every blob's sealed length is
// the same.
const pruneBlobSize = 8 << 10

// pruneFixture is a repository whose snapshot "keep" stays and whose
// snapshot "old" is forgotten, with its data in packs of known use:
//
//	gone    4 blobs of old only: wholly unused once old is forgotten
//	mostly  1 blob of keep, 3 of old: 3/4 unused
//	little  3 blobs of keep, 1 of old: 1/4 unused
//	used    4 blobs of keep: wholly used
//	shared  2 blobs both snapshots use
//	trees   the trees of both snapshots: partly unused
//
// Each pack is written by a write session of its own (one packer), so
// that which blobs share a pack is fixed.
type pruneFixture struct {
	be    repo.Backend
	r     *repo.Repository
	keep  *repo.Snapshot
	old   *repo.Snapshot
	packs map[string]repo.ID
	files map[string][]byte // keep's files: name -> content
}

func newPruneFixture(t *testing.T, be repo.Backend) *pruneFixture {
	t.Helper()
	onePacker(t)
	ctx := context.Background()
	f := &pruneFixture{be: be, r: initRepo(t, be), packs: map[string]repo.ID{}, files: map[string][]byte{}}
	var keepNodes, oldNodes []repo.Node
	n := 0
	file := func(name string) repo.Node {
		n++
		data := random(uint64(n), pruneBlobSize)
		return repo.Node{Name: name, Type: repo.NodeFile, Size: uint64(len(data)), Mode: 0o644,
			Content: []repo.ID{saveBlob(t, f.r, data)}}
	}
	session := func(name string, keep, old int) {
		t.Helper()
		before := names(t, be, repo.PackFile)
		for i := range keep {
			nd := file(fmt.Sprintf("%s-keep-%d", name, i))
			keepNodes = append(keepNodes, nd)
			f.files[nd.Name] = random(uint64(n), pruneBlobSize)
		}
		for i := range old {
			oldNodes = append(oldNodes, file(fmt.Sprintf("%s-old-%d", name, i)))
		}
		flush(t, f.r)
		f.packs[name] = onlyNewPack(t, be, before)
	}
	session("gone", 0, 4)
	session("mostly", 1, 3)
	session("little", 3, 1)
	session("used", 4, 0)
	before := names(t, be, repo.PackFile)
	for i := range 2 {
		nd := file(fmt.Sprintf("shared-%d", i))
		keepNodes, oldNodes = append(keepNodes, nd), append(oldNodes, nd)
		f.files[nd.Name] = random(uint64(n), pruneBlobSize)
	}
	flush(t, f.r)
	f.packs["shared"] = onlyNewPack(t, be, before)
	before = names(t, be, repo.PackFile)
	byName := func(a, b repo.Node) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(keepNodes, byName)
	slices.SortFunc(oldNodes, byName)
	sub := saveTree(t, f.r, &repo.Tree{Nodes: keepNodes})
	oldSub := saveTree(t, f.r, &repo.Tree{Nodes: oldNodes})
	keepRoot := saveTree(t, f.r, &repo.Tree{Nodes: []repo.Node{{Name: "data", Type: repo.NodeDir, Mode: 0o755, Subtree: &sub}}})
	oldRoot := saveTree(t, f.r, &repo.Tree{Nodes: []repo.Node{{Name: "data", Type: repo.NodeDir, Mode: 0o755, Subtree: &oldSub}}})
	written := flush(t, f.r)
	f.packs["trees"] = onlyNewPack(t, be, before)
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	f.old = &repo.Snapshot{ID: forgetSnapID(0, 0), Time: base, Hostname: "h", Paths: []string{"/data"}, Tree: oldRoot}
	f.keep = &repo.Snapshot{ID: forgetSnapID(0, 1), Time: base.Add(time.Hour), Hostname: "h", Paths: []string{"/data"}, Tree: keepRoot}
	for _, s := range []*repo.Snapshot{f.old, f.keep} {
		if err := written.SaveSnapshot(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// onlyNewPack returns the one pack that is not in before.
func onlyNewPack(t *testing.T, be repo.Backend, before []string) repo.ID {
	t.Helper()
	var added []string
	for _, name := range names(t, be, repo.PackFile) {
		if !slices.Contains(before, name) {
			added = append(added, name)
		}
	}
	if len(added) != 1 {
		t.Fatalf("a fixture session wrote packs %v, want one", added)
	}
	id, err := repo.ParseID(added[0])
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// forgetOld forgets the fixture's snapshot "old".
func (f *pruneFixture) forgetOld(t *testing.T) {
	t.Helper()
	if _, err := f.r.Forget(context.Background(), repo.ForgetOptions{Plan: forgetIDs(f.old.ID), GroupKey: byHost}); err != nil {
		t.Fatal(err)
	}
}

// packSize returns the size of a pack file of the fixture.
func (f *pruneFixture) packSize(t *testing.T, name string) int64 {
	t.Helper()
	size, err := f.be.Stat(context.Background(), repo.Handle{Type: repo.PackFile, Name: f.packs[name].String()})
	if err != nil {
		t.Fatal(err)
	}
	return size
}

// packsLeft returns the names of the fixture's packs whose files remain.
func (f *pruneFixture) packsLeft(t *testing.T) []string {
	t.Helper()
	files := names(t, f.be, repo.PackFile)
	var left []string
	for name, id := range f.packs {
		if slices.Contains(files, id.String()) {
			left = append(left, name)
		}
	}
	slices.Sort(left)
	return left
}

// allFiles lists every object of a repository, as "type/name".
func allFiles(t *testing.T, be repo.Backend) []string {
	t.Helper()
	var out []string
	for _, ft := range []repo.FileType{repo.ConfigFile, repo.KeyFile, repo.PackFile, repo.IndexFile, repo.SnapshotFile,
		repo.LockFile, repo.PinFile, repo.ForgetFile} {
		if ft == repo.ConfigFile {
			out = append(out, "config")
			continue
		}
		for _, name := range names(t, be, ft) {
			out = append(out, string(ft)+"/"+name)
		}
	}
	slices.Sort(out)
	return out
}

// restoreFiles reads back every file of a snapshot's folder "data" from a
// freshly opened repository.
func restoreFiles(t *testing.T, be repo.Backend, snap *repo.Snapshot) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	r := openRepo(t, be)
	got := map[string][]byte{}
	err := r.Walk(ctx, snap.Tree, repo.WalkOptions{}, repo.WalkVisitor{
		Node: func(e *repo.WalkEntry) error {
			if e.Node.Type != repo.NodeFile {
				return nil
			}
			var content []byte
			for _, id := range e.Node.Content {
				data, err := r.LoadBlob(ctx, id)
				if err != nil {
					return fmt.Errorf("%s: %w", e.Path, err)
				}
				content = append(content, data...)
			}
			got[e.Node.Name] = content
			return nil
		},
	})
	if err != nil {
		t.Fatalf("restore snapshot %s: %v", snap.ID, err)
	}
	return got
}

// assertSound checks the repository with read-data (no problem, no pack
// left that no index lists unless allowed) and that snapshot keep restores
// bit-identical.
func (f *pruneFixture) assertSound(t *testing.T, unindexedAllowed bool) {
	t.Helper()
	rep, err := openRepo(t, f.be).Check(context.Background(), repo.CheckOptions{ReadDataFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Errorf("check after prune: %s", problemList(rep))
	}
	if rep.UnindexedPacks != 0 && !unindexedAllowed {
		t.Errorf("check after prune: %d packs no index lists", rep.UnindexedPacks)
	}
	got := restoreFiles(t, f.be, f.keep)
	if len(got) != len(f.files) {
		t.Errorf("snapshot keep restores %d files, want %d", len(got), len(f.files))
	}
	for name, want := range f.files {
		if !bytes.Equal(got[name], want) {
			t.Errorf("file %s of snapshot keep restores with %d bytes that differ from the %d saved", name, len(got[name]), len(want))
		}
	}
}

// After forget and prune with no unused data allowed, the wholly unused
// pack is gone, the partly used ones are repacked, check with read-data is
// clean and the snapshot that stays restores bit-identical, on both
// backends.
func TestPruneFreesExactlyTheUnusedData(t *testing.T) {
	for _, bk := range []struct {
		name string
		new  func(t *testing.T) repo.Backend
	}{
		{"local", newLocal},
		{"memory", func(*testing.T) repo.Backend { return memory.New() }},
	} {
		t.Run(bk.name, func(t *testing.T) {
			ctx := context.Background()
			f := newPruneFixture(t, bk.new(t))
			f.forgetOld(t)
			sizes := map[string]int64{}
			for name := range f.packs {
				sizes[name] = f.packSize(t, name)
			}
			res, err := openRepo(t, f.be).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if left := f.packsLeft(t); !slices.Equal(left, []string{"shared", "used"}) {
				t.Errorf("packs left %v, want shared and used", left)
			}
			if res.PacksDeleted != 1 || res.BytesDeleted != sizes["gone"] {
				t.Errorf("deleted %d packs of %d bytes, want pack gone of %d", res.PacksDeleted, res.BytesDeleted, sizes["gone"])
			}
			if want := sizes["mostly"] + sizes["little"] + sizes["trees"]; res.PacksRepacked != 3 || res.BytesRepacked != want {
				t.Errorf("repacked %d packs of %d bytes, want mostly, little and trees, %d bytes", res.PacksRepacked, res.BytesRepacked, want)
			}
			if res.BytesFreed != res.BytesDeleted+res.BytesRepacked || res.UnusedLeft != 0 || res.PacksWritten == 0 {
				t.Errorf("result %+v: want freed = deleted + repacked, nothing unused left, packs written", res)
			}
			// keep's blobs: 1+3+4 own, 2 shared, and its two trees.
			if res.BlobsUsed != 12 || res.Snapshots != 1 {
				t.Errorf("%d blobs used by %d snapshots, want 12 by 1", res.BlobsUsed, res.Snapshots)
			}
			f.assertSound(t, false)
			// A second prune finds nothing to do.
			res, err = openRepo(t, f.be).Prune(ctx, repo.PruneOptions{TempDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if res.PacksDeleted+res.PacksRepacked+res.LeftoversDeleted != 0 || res.BlobsUnused != 0 {
				t.Errorf("second prune: %+v, want nothing to do", res)
			}
		})
	}
}
