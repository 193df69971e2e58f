package repo_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// prefixes is a repo.PathMatcher that selects the listed paths and
// everything below them.
type prefixes []string

func (ps prefixes) Match(p string) bool {
	return slices.ContainsFunc(ps, func(q string) bool { return p == q || strings.HasPrefix(p, q+"/") })
}

func (ps prefixes) ChildMayMatch(dir string) bool {
	return slices.ContainsFunc(ps, func(q string) bool { return strings.HasPrefix(q, dir+"/") })
}

// walkFixture is a repository with one snapshot of this tree, its files
// holding real data blobs:
//
//	/a/x (file), /a/y/z (file), /b (symlink), /c/ (empty folder), /d (file)
type walkFixture struct {
	r    *repo.Repository
	root repo.ID
	data map[string][]repo.ID // file path -> content
}

func newWalkFixture(t *testing.T) *walkFixture {
	t.Helper()
	r := initRepo(t, memory.New())
	f := &walkFixture{r: r, data: map[string][]repo.ID{}}
	file := func(p, content string) repo.Node {
		id := saveBlob(t, r, []byte(content))
		f.data[p] = []repo.ID{id}
		return repo.Node{Name: p[strings.LastIndexByte(p, '/')+1:], Type: repo.NodeFile, Size: uint64(len(content)), Content: []repo.ID{id}}
	}
	dir := func(name string, nodes ...repo.Node) repo.Node {
		id := saveTree(t, r, &repo.Tree{Nodes: nodes})
		return repo.Node{Name: name, Type: repo.NodeDir, Subtree: &id}
	}
	f.root = saveTree(t, r, &repo.Tree{Nodes: []repo.Node{
		dir("a", file("/a/x", "x data"), dir("y", file("/a/y/z", "z data"))),
		{Name: "b", Type: repo.NodeSymlink, LinkTarget: "a/x"},
		dir("c"),
		file("/d", "d data"),
	}})
	flush(t, r)
	return f
}

// events walks root and returns what the visitor was told, in order.
func events(t *testing.T, r *repo.Repository, root repo.ID, opts repo.WalkOptions, skip func(*repo.WalkEntry) bool) []string {
	t.Helper()
	var got []string
	err := r.Walk(context.Background(), root, opts, repo.WalkVisitor{
		Enter: func(dir *repo.WalkEntry, _ repo.ID) error {
			got = append(got, "enter "+dir.Path)
			return nil
		},
		Node: func(e *repo.WalkEntry) error {
			got = append(got, e.Path)
			if skip != nil && skip(e) {
				return repo.SkipTree
			}
			return nil
		},
		Leave: func(dir *repo.WalkEntry, _ repo.ID) error {
			got = append(got, "leave "+dir.Path)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Walk goes depth first, entries in name order, each folder's subtree
// right after its entry, and leaves a tree after everything below it.
func TestWalkOrder(t *testing.T) {
	f := newWalkFixture(t)
	got := events(t, f.r, f.root, repo.WalkOptions{}, nil)
	want := []string{"enter /", "/a", "enter /a", "/a/x", "/a/y", "enter /a/y", "/a/y/z", "leave /a/y", "leave /a",
		"/b", "/c", "enter /c", "leave /c", "/d", "leave /"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walk order:\n got %q\nwant %q", got, want)
	}
}

// Filters are restore's rules: an excluded folder prunes its subtree;
// includes select paths, everything below them, and the folders leading to
// them (without those folders' other entries).
func TestWalkFilters(t *testing.T) {
	f := newWalkFixture(t)
	tests := []struct {
		name    string
		include prefixes
		exclude prefixes
		want    []string
	}{
		{"none", nil, nil, []string{"/a", "/a/x", "/a/y", "/a/y/z", "/b", "/c", "/d"}},
		{"exclude a folder", nil, prefixes{"/a"}, []string{"/b", "/c", "/d"}},
		{"exclude a file", nil, prefixes{"/a/y/z"}, []string{"/a", "/a/x", "/a/y", "/b", "/c", "/d"}},
		{"include a deep file", prefixes{"/a/y/z"}, nil, []string{"/a", "/a/y", "/a/y/z"}},
		{"include a folder", prefixes{"/a"}, nil, []string{"/a", "/a/x", "/a/y", "/a/y/z"}},
		{"include two", prefixes{"/a/x", "/d"}, nil, []string{"/a", "/a/x", "/d"}},
		{"include and exclude below", prefixes{"/a"}, prefixes{"/a/y"}, []string{"/a", "/a/x"}},
		{"exclude wins over include", prefixes{"/a/x"}, prefixes{"/a"}, nil},
		{"include nothing there", prefixes{"/nope"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts repo.WalkOptions
			if tt.include != nil {
				opts.Include = tt.include
			}
			if tt.exclude != nil {
				opts.Exclude = tt.exclude
			}
			var got []string
			for _, e := range events(t, f.r, f.root, opts, nil) {
				if !strings.HasPrefix(e, "enter ") && !strings.HasPrefix(e, "leave ") {
					got = append(got, e)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("visited %q, want %q", got, tt.want)
			}
		})
	}
}

// SkipTree from Node keeps the walk out of that folder only; from Enter,
// the tree is not loaded and none of it is visited.
func TestWalkSkip(t *testing.T) {
	f := newWalkFixture(t)
	got := events(t, f.r, f.root, repo.WalkOptions{}, func(e *repo.WalkEntry) bool { return e.Path == "/a/y" })
	want := []string{"enter /", "/a", "enter /a", "/a/x", "/a/y", "leave /a", "/b", "/c", "enter /c", "leave /c", "/d", "leave /"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("skip at Node:\n got %q\nwant %q", got, want)
	}

	got = nil
	err := f.r.Walk(context.Background(), f.root, repo.WalkOptions{}, repo.WalkVisitor{
		Enter: func(dir *repo.WalkEntry, _ repo.ID) error {
			if dir.Path == "/a" {
				return repo.SkipTree
			}
			return nil
		},
		Tree: func(dir *repo.WalkEntry, _ repo.ID, _ []repo.ID, _ *repo.Tree) error {
			got = append(got, "tree "+dir.Path)
			return nil
		},
		Node: func(e *repo.WalkEntry) error {
			got = append(got, e.Path)
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"tree /", "/a", "/b", "/c", "tree /c", "/d"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("skip at Enter:\n got %q\nwant %q", got, want)
	}
}

// usedBlobs collects every blob Walk reports below root: trees, tree-list
// parts and data.
func usedBlobs(t *testing.T, r *repo.Repository, root repo.ID) map[repo.ID]bool {
	t.Helper()
	used := map[repo.ID]bool{}
	err := r.Walk(context.Background(), root, repo.WalkOptions{}, repo.WalkVisitor{
		Tree: func(_ *repo.WalkEntry, id repo.ID, parts []repo.ID, _ *repo.Tree) error {
			used[id] = true
			for _, p := range parts {
				used[p] = true
			}
			return nil
		},
		Node: func(e *repo.WalkEntry) error {
			for _, id := range e.Node.Content {
				used[id] = true
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return used
}

// A split tree is reported with its list and every part; in a repository
// that holds one snapshot, the blobs Walk reports are exactly the blobs
// stored, which are what check finds sound and reads.
func TestWalkReportsEveryBlob(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	big := &repo.Tree{}
	for i := range 1500 {
		id := saveBlob(t, r, []byte(fmt.Sprintf("content of file %d", i)))
		big.Nodes = append(big.Nodes, repo.Node{Name: fmt.Sprintf("file%05d", i), Type: repo.NodeFile, Mode: 0o644,
			MTime: time.Unix(1700000000+int64(i), 0).UTC(), Content: []repo.ID{id}})
	}
	list := saveTree(t, r, big)
	root := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{{Name: "big", Type: repo.NodeDir, Subtree: &list}}})
	flush(t, r)
	if err := flush(t, r).SaveSnapshot(ctx, &repo.Snapshot{ID: "s1", Time: time.Now().UTC(), Tree: root}); err != nil {
		t.Fatal(err)
	}
	r2 := openRepo(t, be)

	parts := loadRaw(t, r2, list).Parts
	if len(parts) < 2 {
		t.Fatalf("the big tree is stored in %d parts: the test needs a split tree", len(parts))
	}
	var reported []repo.ID
	err := r2.Walk(ctx, root, repo.WalkOptions{}, repo.WalkVisitor{Tree: func(dir *repo.WalkEntry, id repo.ID, ps []repo.ID, _ *repo.Tree) error {
		if id == list {
			reported = ps
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(reported, parts) {
		t.Errorf("Walk reports the parts %v of the split tree, stored are %v", reported, parts)
	}

	used := usedBlobs(t, r2, root)
	stored := map[repo.ID]bool{}
	if err := r2.Index().Each(func(b repo.IndexedBlob) { stored[b.ID] = true }); err != nil {
		t.Fatal(err)
	}
	for id := range stored {
		if !used[id] {
			t.Errorf("blob %s is stored for the snapshot but Walk does not report it", id.Short())
		}
	}
	for id := range used {
		if !stored[id] {
			t.Errorf("Walk reports blob %s, which is not stored", id.Short())
		}
	}
	rep, err := r2.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Blobs != len(used) {
		t.Errorf("check reads %d blobs (problems:%s), Walk reports %d", rep.Blobs, problemList(rep), len(used))
	}
}

// A tree that cannot be loaded is reported with the path of its folder,
// and the walk goes on after it when TreeError says so.
func TestWalkReportsDamagedTreeWithPath(t *testing.T) {
	ctx := context.Background()
	r := initRepo(t, memory.New())
	var missing repo.ID
	copy(missing[:], "no such tree")
	badList := saveBlobOfType(t, r, repo.TreeBlob, []byte(fmt.Sprintf(`{"parts":["%s"]}`, missing)))
	inner := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{
		{Name: "gone", Type: repo.NodeDir, Subtree: &missing},
		{Name: "list", Type: repo.NodeDir, Subtree: &badList},
	}})
	root := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{
		{Name: "a", Type: repo.NodeDir, Subtree: &inner},
		{Name: "z", Type: repo.NodeFile},
	}})
	flush(t, r)

	type damage struct {
		path string
		id   repo.ID
	}
	var got []damage
	var visited []string
	err := r.Walk(ctx, root, repo.WalkOptions{}, repo.WalkVisitor{
		Node: func(e *repo.WalkEntry) error {
			visited = append(visited, e.Path)
			return nil
		},
		TreeError: func(dir *repo.WalkEntry, id repo.ID, err error) error {
			got = append(got, damage{dir.Path, id})
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []damage{{"/a/gone", missing}, {"/a/list", badList}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("damaged trees reported as %v, want %v", got, want)
	}
	if !slices.Contains(visited, "/z") {
		t.Errorf("the walk did not go on after the damaged trees: visited %q", visited)
	}

	// Without TreeError, the first damaged tree ends the walk.
	err = r.Walk(ctx, root, repo.WalkOptions{}, repo.WalkVisitor{})
	if err == nil || !strings.Contains(err.Error(), missing.Short()) {
		t.Errorf("Walk without TreeError returns %v, want the error of tree %s", err, missing.Short())
	}
	stop := errors.New("stop")
	err = r.Walk(ctx, root, repo.WalkOptions{}, repo.WalkVisitor{TreeError: func(*repo.WalkEntry, repo.ID, error) error { return stop }})
	if !errors.Is(err, stop) {
		t.Errorf("Walk returns %v, want the error TreeError returned", err)
	}
}

// An entry whose name could escape its folder is handed over marked
// unsafe, quoted in its path, and never walked into.
func TestWalkUnsafeNames(t *testing.T) {
	r := initRepo(t, memory.New())
	sub := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{{Name: "inside", Type: repo.NodeFile}}})
	root := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{
		{Name: "..", Type: repo.NodeDir, Subtree: &sub},
		{Name: "a/b", Type: repo.NodeFile},
		{Name: "ok", Type: repo.NodeFile},
	}})
	flush(t, r)
	var got []string
	err := r.Walk(context.Background(), root, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
		got = append(got, fmt.Sprintf("%s unsafe=%v", e.Path, e.Unsafe))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`/".." unsafe=true`, `/"a/b" unsafe=true`, "/ok unsafe=false"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The path of an unsafe name holds the name exactly as stored, quoted and
// not cleaned: "a/../b" is shown as it is, not as the "/b\"" path.Join
// would make of it, wherever the entry is.
func TestWalkUnsafeNamesAreNotCleaned(t *testing.T) {
	tests := []struct {
		name    string
		crafted string
		inSub   bool // the entry is in the folder /sub, not in the root
		want    string
	}{
		{"parent in the middle", "a/../b", false, `/"a/../b"`},
		{"parent at the start", "../b", false, `/"../b"`},
		{"parent at the end", "a/..", false, `/"a/.."`},
		{"current folder and doubled slashes", "./a//b/.", false, `/"./a//b/."`},
		{"parent in the middle, in a sub folder", "a/../b", true, `/sub/"a/../b"`},
		{"parent of the sub folder", "../../etc", true, `/sub/"../../etc"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := initRepo(t, memory.New())
			crafted := repo.Node{Name: tt.crafted, Type: repo.NodeFile}
			var root repo.ID
			if tt.inSub {
				sub := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{crafted}})
				root = saveTree(t, r, &repo.Tree{Nodes: []repo.Node{{Name: "sub", Type: repo.NodeDir, Subtree: &sub}}})
			} else {
				root = saveTree(t, r, &repo.Tree{Nodes: []repo.Node{crafted}})
			}
			flush(t, r)
			var unsafe []string
			err := r.Walk(context.Background(), root, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
				if e.Unsafe {
					unsafe = append(unsafe, e.Path)
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{tt.want}; !reflect.DeepEqual(unsafe, want) {
				t.Errorf("unsafe entries at %q, want %q", unsafe, want)
			}
		})
	}
}
