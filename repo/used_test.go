package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// usageFixture is a repository with three snapshots:
//
//	s1:   /a (shared), /big (a split tree), /f ("shared data")
//	s2:   /home/a (the same tree as s1's /a, one level deeper), /g
//	gone: /a (shared), /f ("shared data"), /h ("gone only"), /only/x
//
// /a holds /a/x, /a/y and /a/deep/z.
type usageFixture struct {
	r        *repo.Repository
	snaps    map[string]*repo.Snapshot
	big      repo.ID   // the split tree's list
	parts    []repo.ID // its parts
	goneOnly []repo.ID // the blobs only "gone" uses
}

func newUsageFixture(t *testing.T) *usageFixture {
	t.Helper()
	ctx := context.Background()
	r := initRepo(t, memory.New())
	f := &usageFixture{r: r, snaps: map[string]*repo.Snapshot{}}
	file := func(name, content string) repo.Node {
		return repo.Node{Name: name, Type: repo.NodeFile, Size: uint64(len(content)), Content: []repo.ID{saveBlob(t, r, []byte(content))}}
	}
	dir := func(name string, nodes ...repo.Node) repo.Node {
		id := saveTree(t, r, &repo.Tree{Nodes: nodes})
		return repo.Node{Name: name, Type: repo.NodeDir, Subtree: &id}
	}
	shared := dir("a", dir("deep", file("z", "z data")), file("x", "x data"), file("y", "y data"))
	big := &repo.Tree{}
	for i := range 600 {
		big.Nodes = append(big.Nodes, repo.Node{Name: fmt.Sprintf("file%05d", i), Type: repo.NodeFile, Mode: 0o644,
			MTime: time.Unix(1700000000+int64(i), 0).UTC(), Content: []repo.ID{saveBlob(t, r, []byte(fmt.Sprintf("big file %d", i)))}})
	}
	f.big = saveTree(t, r, big)
	f.snaps["s1"] = &repo.Snapshot{ID: "s1", Tree: saveTree(t, r, &repo.Tree{Nodes: []repo.Node{
		shared, {Name: "big", Type: repo.NodeDir, Subtree: &f.big}, file("f", "shared data")}})}
	f.snaps["s2"] = &repo.Snapshot{ID: "s2", Tree: saveTree(t, r, &repo.Tree{Nodes: []repo.Node{
		file("g", "g data"), dir("home", shared)}})}
	h, only := file("h", "gone only"), dir("only", file("x", "only x data"))
	f.snaps["gone"] = &repo.Snapshot{ID: "gone", Tree: saveTree(t, r, &repo.Tree{Nodes: []repo.Node{
		shared, file("f", "shared data"), h, only}})}
	written := flush(t, r)
	for _, s := range f.snaps {
		if err := written.SaveSnapshot(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	f.parts = loadRaw(t, r, f.big).Parts
	if len(f.parts) < 2 {
		t.Fatalf("the big tree is stored in %d parts: the test needs a split tree", len(f.parts))
	}
	f.goneOnly = []repo.ID{f.snaps["gone"].Tree, h.Content[0], *only.Subtree}
	f.goneOnly = append(f.goneOnly, loadTreeNode(t, r, *only.Subtree, "x").Content...)
	return f
}

func loadTreeNode(t *testing.T, r *repo.Repository, tree repo.ID, name string) repo.Node {
	t.Helper()
	tr, err := r.LoadTree(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range tr.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("tree %s has no %q", tree.Short(), name)
	return repo.Node{}
}

// distinctTrees counts the trees Walk loads below the roots (a tree
// reached more than once counts once).
func distinctTrees(t *testing.T, r *repo.Repository, snaps []*repo.Snapshot) int {
	t.Helper()
	trees := map[repo.ID]bool{}
	for _, s := range snaps {
		err := r.Walk(context.Background(), s.Tree, repo.WalkOptions{}, repo.WalkVisitor{
			Tree: func(_ *repo.WalkEntry, id repo.ID, _ []repo.ID, _ *repo.Tree) error {
				trees[id] = true
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return len(trees)
}

// blobUsage runs BlobUsage with a budget of four IDs per run (so that
// every sorter spills and merges) and returns what fn was told, checking
// that every indexed blob comes exactly once, in ID order, where the index
// says, and that no file is left behind.
func blobUsage(t *testing.T, r *repo.Repository, snaps []*repo.Snapshot) (map[repo.ID]bool, repo.UsageStats) {
	t.Helper()
	tmp := t.TempDir()
	used := map[repo.ID]bool{}
	var last *repo.ID
	stats, err := r.BlobUsage(context.Background(), snaps, repo.UsageOptions{TempDir: tmp, MemoryBudget: 4 * 32}, func(b repo.BlobUse) error {
		if last != nil && bytes.Compare(last[:], b.ID[:]) >= 0 {
			t.Errorf("blob %s comes after %s: not in ascending order", b.ID.Short(), last.Short())
		}
		last = &b.ID
		if want, ok := r.Index().Lookup(b.ID); !ok || want != b.IndexedBlob {
			t.Errorf("blob %s is reported at %+v, the index has %+v", b.ID.Short(), b.IndexedBlob, want)
		}
		used[b.ID] = b.Used
		return nil
	})
	if err != nil {
		t.Fatalf("BlobUsage: %v", err)
	}
	if len(used) != r.Index().Len() {
		t.Errorf("BlobUsage told of %d blobs, the index holds %d", len(used), r.Index().Len())
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("BlobUsage left %d files in its folder", len(left))
	}
	return used, stats
}

// The blobs BlobUsage finds used are exactly those that Walk reports for
// the snapshots given, which are what check and restore read (see
// TestWalkReportsEveryBlob): data, trees and split trees' parts. A
// forgotten snapshot's own blobs are unused, and each distinct tree is
// loaded once, also the one that two snapshots hold at different depths.
func TestBlobUsage(t *testing.T) {
	f := newUsageFixture(t)
	tests := []struct {
		name       string
		snapshots  []string
		wantUnused []repo.ID // blobs that must be unused, beyond what the oracle says
	}{
		{name: "all snapshots", snapshots: []string{"s1", "s2", "gone"}},
		{name: "one forgotten", snapshots: []string{"s1", "s2"}, wantUnused: f.goneOnly},
		{name: "only the split tree's", snapshots: []string{"s1"}, wantUnused: f.goneOnly},
		{name: "none", snapshots: nil, wantUnused: append(slices.Clone(f.parts), f.big)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var snaps []*repo.Snapshot
			want := map[repo.ID]bool{}
			for _, name := range tc.snapshots {
				snaps = append(snaps, f.snaps[name])
				maps.Copy(want, usedBlobs(t, f.r, f.snaps[name].Tree))
			}
			got, stats := blobUsage(t, f.r, snaps)
			for id, used := range got {
				if used != want[id] {
					t.Errorf("blob %s: used %v, Walk says %v", id.Short(), used, want[id])
				}
			}
			for id := range want {
				if _, ok := got[id]; !ok {
					t.Errorf("used blob %s was not reported", id.Short())
				}
			}
			for _, id := range tc.wantUnused {
				if got[id] {
					t.Errorf("blob %s is used, want unused", id.Short())
				}
			}
			if slices.Contains(tc.snapshots, "s1") {
				for _, p := range append(slices.Clone(f.parts), f.big) {
					if !got[p] {
						t.Errorf("split tree blob %s is unused", p.Short())
					}
				}
			}
			if n := distinctTrees(t, f.r, snaps); stats.Trees != n {
				t.Errorf("BlobUsage loaded %d trees, there are %d distinct ones", stats.Trees, n)
			}
		})
	}

	// With every snapshot, every blob is used, and check reads as many.
	all := []*repo.Snapshot{f.snaps["s1"], f.snaps["s2"], f.snaps["gone"]}
	got, stats := blobUsage(t, f.r, all)
	rep, err := f.r.Check(context.Background(), repo.CheckOptions{ReadDataFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(slices.DeleteFunc(slices.Collect(maps.Values(got)), func(u bool) bool { return !u })); !rep.OK() || rep.Blobs != n {
		t.Errorf("check reads %d blobs (problems:%s), BlobUsage finds %d used", rep.Blobs, problemList(rep), n)
	}
	// /a is at depth 1 in s1 and 2 in s2 (/home/a): walked at level 1,
	// it is not walked again at level 2, and so its /deep is met at level
	// 2 only. Three levels in all, not four.
	if stats.Depth != 3 {
		t.Errorf("walked %d levels, want 3", stats.Depth)
	}
}

// A tree that cannot be read or decoded, at any depth or in any part,
// stops BlobUsage before fn hears of any blob, with an error that names
// every snapshot that reaches the tree and its folder in the first.
func TestBlobUsageDamagedTree(t *testing.T) {
	r := initRepo(t, memory.New())
	var missing repo.ID
	copy(missing[:], "no such tree")
	garbage := saveBlobOfType(t, r, repo.TreeBlob, []byte("not a tree"))
	var missingPart repo.ID
	copy(missingPart[:], "no such part")
	badList := saveBlobOfType(t, r, repo.TreeBlob, []byte(fmt.Sprintf(`{"parts":["%s"]}`, missingPart)))
	dir := func(name string, id repo.ID) repo.Node {
		return repo.Node{Name: name, Type: repo.NodeDir, Subtree: &id}
	}
	tree := func(nodes ...repo.Node) repo.ID { return saveTree(t, r, &repo.Tree{Nodes: nodes}) }
	healthy := &repo.Snapshot{ID: "healthy", Tree: tree(repo.Node{Name: "ok", Type: repo.NodeFile})}
	tests := []struct {
		name      string
		snapshots []*repo.Snapshot
		wantTree  repo.ID
		wantNamed []string
		wantPath  string
	}{
		{name: "missing root", snapshots: []*repo.Snapshot{healthy, {ID: "s1", Tree: missing}},
			wantTree: missing, wantNamed: []string{"s1"}, wantPath: "/"},
		{name: "missing subtree, at two depths in two snapshots",
			snapshots: []*repo.Snapshot{
				{ID: "s1", Tree: tree(dir("a", missing))},
				healthy,
				{ID: "s2", Tree: tree(dir("x", tree(dir("a", missing))))},
			},
			wantTree: missing, wantNamed: []string{"s1", "s2"}, wantPath: "/a"},
		{name: "undecodable tree", snapshots: []*repo.Snapshot{{ID: "s1", Tree: tree(dir("a", tree(dir("b", garbage))))}},
			wantTree: garbage, wantNamed: []string{"s1"}, wantPath: "/a/b"},
		{name: "missing part of a tree list", snapshots: []*repo.Snapshot{healthy, {ID: "s1", Tree: tree(dir("list", badList))}},
			wantTree: badList, wantNamed: []string{"s1"}, wantPath: "/list"},
	}
	flush(t, r)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			called := 0
			_, err := r.BlobUsage(context.Background(), tc.snapshots, repo.UsageOptions{TempDir: tmp, MemoryBudget: 64}, func(repo.BlobUse) error {
				called++
				return nil
			})
			var te *repo.SnapshotTreeError
			if !errors.As(err, &te) {
				t.Fatalf("BlobUsage returned %v, want a SnapshotTreeError", err)
			}
			if te.Tree != tc.wantTree || !slices.Equal(te.Snapshots, tc.wantNamed) || te.Path != tc.wantPath {
				t.Errorf("error names tree %s, snapshots %q, path %q; want %s, %q, %q",
					te.Tree.Short(), te.Snapshots, te.Path, tc.wantTree.Short(), tc.wantNamed, tc.wantPath)
			}
			if called > 0 {
				t.Errorf("fn was called for %d blobs before the error", called)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("BlobUsage left %d files in its folder", len(left))
			}
		})
	}
}

// A data blob that a tree names but no index lists is an error, not a
// blob to keep or to forget.
func TestBlobUsageMissingBlob(t *testing.T) {
	r := initRepo(t, memory.New())
	var lost repo.ID
	copy(lost[:], "no such data")
	root := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{{Name: "f", Type: repo.NodeFile, Content: []repo.ID{lost}}}})
	flush(t, r)
	_, err := r.BlobUsage(context.Background(), []*repo.Snapshot{{ID: "s1", Tree: root}}, repo.UsageOptions{TempDir: t.TempDir()},
		func(repo.BlobUse) error { return nil })
	if !errors.Is(err, repo.ErrBlobMissing) || !bytes.Contains([]byte(err.Error()), []byte(lost.String())) {
		t.Errorf("BlobUsage returned %v, want ErrBlobMissing naming %s", err, lost.Short())
	}
}

// A cancelled context ends BlobUsage with the context's error and no file
// left behind.
func TestBlobUsageCancelled(t *testing.T) {
	f := newUsageFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tmp := t.TempDir()
	_, err := f.r.BlobUsage(ctx, []*repo.Snapshot{f.snaps["s1"]}, repo.UsageOptions{TempDir: tmp}, func(repo.BlobUse) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("BlobUsage returned %v, want context.Canceled", err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("BlobUsage left %d files in its folder", len(left))
	}
}

// An error of fn ends BlobUsage with that error, and fn hears of no blob
// after it.
func TestBlobUsageStopsOnFnError(t *testing.T) {
	f := newUsageFixture(t)
	stop := errors.New("stop")
	calls := 0
	_, err := f.r.BlobUsage(context.Background(), []*repo.Snapshot{f.snaps["s1"]}, repo.UsageOptions{TempDir: t.TempDir()}, func(repo.BlobUse) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Errorf("BlobUsage returned %v after %d calls, want fn's error after 3", err, calls)
	}
}

// BlobUsage reads the index files itself: on a repository opened without
// LoadIndex it reports every entry, and a blob stored in two packs comes
// once for each, by pack ID, both times with its use.
func TestBlobUsageStreamsTheIndexWithEveryCopy(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	data := []byte("stored twice")
	twice := saveBlob(t, r, data)
	unused := saveBlob(t, r, []byte("used by nothing"))
	root := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{{Name: "f", Type: repo.NodeFile, Content: []repo.ID{twice}}}})
	flush(t, r)
	// A second repository value knows no index: it stores the blob again.
	again, err := repo.Open(ctx, be, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Close)
	saveBlob(t, again, data)
	flush(t, again)

	fresh, err := repo.Open(ctx, be, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fresh.Close)
	var got []repo.BlobUse
	_, err = fresh.BlobUsage(ctx, []*repo.Snapshot{{ID: "s1", Tree: root}}, repo.UsageOptions{TempDir: t.TempDir()}, func(b repo.BlobUse) error {
		got = append(got, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Index().Len() != 0 {
		t.Errorf("BlobUsage filled the repository's index with %d blobs", fresh.Index().Len())
	}
	var copies []repo.BlobUse
	uses := map[repo.ID]bool{}
	for _, b := range got {
		uses[b.ID] = b.Used
		if b.ID == twice {
			copies = append(copies, b)
		}
	}
	if len(got) != 4 || len(uses) != 3 || !uses[twice] || !uses[root] || uses[unused] {
		t.Errorf("BlobUsage told of %d entries %v, want 4 entries of 3 blobs, the tree and the file's blob used", len(got), uses)
	}
	if len(copies) != 2 || !copies[0].Used || !copies[1].Used || bytes.Compare(copies[0].Pack[:], copies[1].Pack[:]) >= 0 {
		t.Errorf("the blob stored twice came as %+v, want two used entries in ascending pack order", copies)
	}
}
