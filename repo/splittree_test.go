package repo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// bigTree is a directory of n files named file00000, file00001, ..., with
// a random-looking chunk ID each, as real trees have.
func bigTree(n int) *repo.Tree {
	t := &repo.Tree{}
	for i := range n {
		t.Nodes = append(t.Nodes, repo.Node{Name: fmt.Sprintf("file%05d", i), Type: repo.NodeFile, Mode: 0o644,
			Size: uint64(i), MTime: time.Unix(1700000000+int64(i), int64(i)*7919).UTC(), Content: []repo.ID{fakeID(i)}})
	}
	return t
}

// fakeID is a blob ID for tests: BLAKE3 of i.
func fakeID(i int) repo.ID { return repo.ID(blake3.Sum256([]byte(fmt.Sprint(i)))) }

// rawTree is a tree blob as stored: its entries, or the parts of a tree list.
type rawTree struct {
	Nodes []json.RawMessage `json:"nodes"`
	Parts []repo.ID         `json:"parts"`
}

func loadRaw(t *testing.T, r *repo.Repository, id repo.ID) rawTree {
	t.Helper()
	var raw rawTree
	if err := json.Unmarshal(loadBlob(t, r, id), &raw); err != nil {
		t.Fatalf("tree blob %s: %v", id.Short(), err)
	}
	return raw
}

func loadBlob(t *testing.T, r *repo.Repository, id repo.ID) []byte {
	t.Helper()
	flush(t, r)
	data, err := r.LoadBlob(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func saveTree(t *testing.T, r *repo.Repository, tree *repo.Tree) repo.ID {
	t.Helper()
	id, err := writer(t, r).SaveTree(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// treeJSONSize is the length of a tree's JSON, measured in a repository
// of version 1, which stores every tree in one blob.
func treeJSONSize(t *testing.T, v1 *repo.Repository, tree *repo.Tree) int {
	t.Helper()
	return len(loadBlob(t, v1, saveTree(t, v1, tree)))
}

func TestSplitTreeRoundTrip(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	v1 := openGoldenCopy(t, 1)
	for _, n := range []int{0, 1, 10, 40, 100, 1000, 5000} {
		tree := bigTree(n)
		size := treeJSONSize(t, v1, tree)
		id := saveTree(t, r, tree)
		raw := loadRaw(t, r, id)
		// Up to 8 KiB a tree is one blob; a little above, it is one when
		// its JSON has no place to cut.
		if size <= 8<<10 || (n < 1000 && raw.Parts == nil) {
			if raw.Parts != nil || len(raw.Nodes) != n {
				t.Errorf("%d entries (%d bytes): stored with %d entries and %d parts, want one tree blob", n, size, len(raw.Nodes), len(raw.Parts))
			}
			continue
		}
		if raw.Nodes != nil || len(raw.Parts) < 2 {
			t.Fatalf("%d entries (%d bytes): stored with %d entries and %d parts, want a tree list", n, size, len(raw.Nodes), len(raw.Parts))
		}
		total := 0
		for i, p := range raw.Parts {
			part := len(loadBlob(t, r, p))
			if part > 64<<10 || (part < 256 && i < len(raw.Parts)-1) {
				t.Errorf("%d entries: part %d has %d bytes, want 256 bytes to 64 KiB", n, i, part)
			}
			total += part
		}
		if total != size {
			t.Errorf("%d entries: the parts hold %d bytes, want %d", n, total, size)
		}
		if n == 5000 && (len(raw.Parts) < size/(12<<10) || len(raw.Parts) > size/(1<<10)) {
			t.Errorf("%d bytes in %d parts, want about %d", size, len(raw.Parts), size/(4<<10))
		}
	}
	flush(t, r)
	tree := bigTree(1000)
	got, err := openRepo(t, be).LoadTree(ctx, saveTree(t, r, tree))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, tree) {
		t.Error("a split tree reads back different")
	}
}

// changedParts counts the parts of tree list b that tree list a lacks.
func changedParts(a, b rawTree) int {
	old := map[repo.ID]bool{}
	for _, p := range a.Parts {
		old[p] = true
	}
	n := 0
	for _, p := range b.Parts {
		if !old[p] {
			n++
		}
	}
	return n
}

func TestSplitTreeChangeStoresFewParts(t *testing.T) {
	r := initRepo(t, memory.New())
	before := loadRaw(t, r, saveTree(t, r, bigTree(3000)))

	// A change ends in its own part, or moves the cut after it into the
	// next one.
	changed := bigTree(3000)
	changed.Nodes[1500].MTime = changed.Nodes[1500].MTime.Add(time.Second)
	if n := changedParts(before, loadRaw(t, r, saveTree(t, r, changed))); n < 1 || n > 2 {
		t.Errorf("one changed entry gives %d new parts, want 1 or 2", n)
	}
	inserted := bigTree(3000)
	extra := inserted.Nodes[1500]
	extra.Name += "a"
	inserted.Nodes = append(inserted.Nodes[:1501], append([]repo.Node{extra}, inserted.Nodes[1501:]...)...)
	if n := changedParts(before, loadRaw(t, r, saveTree(t, r, inserted))); n < 1 || n > 2 {
		t.Errorf("one new entry gives %d new parts, want 1 or 2", n)
	}
	removed := bigTree(3000)
	removed.Nodes = append(removed.Nodes[:10], removed.Nodes[11:]...)
	if n := changedParts(before, loadRaw(t, r, saveTree(t, r, removed))); n < 1 || n > 2 {
		t.Errorf("one removed entry gives %d new parts, want 1 or 2", n)
	}

	// A big file's chunk list: a new first chunk changes the start only.
	big := &repo.Tree{Nodes: []repo.Node{{Name: "big", Type: repo.NodeFile, MTime: time.Unix(1700000000, 0).UTC()}}}
	for i := range 4096 {
		big.Nodes[0].Content = append(big.Nodes[0].Content, fakeID(-i))
	}
	before = loadRaw(t, r, saveTree(t, r, big))
	big.Nodes[0].Content[0][31] = 1
	if n := changedParts(before, loadRaw(t, r, saveTree(t, r, big))); len(before.Parts) < 10 || n < 1 || n > 2 {
		t.Errorf("a new first chunk of a file of 4096 chunks (a tree list of %d parts) gives %d new parts, want 1 or 2", len(before.Parts), n)
	}
}

// openGoldenCopy opens a copy of the golden repository of config version v.
func openGoldenCopy(t *testing.T, v int) *repo.Repository {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(goldenDirs[v-1])); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"data", "index", "keys", "locks", "snapshots", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	be, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(context.Background(), be, repo.OpenOptions{Password: pw(goldenPassword)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	if err := r.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r
}

// A repository of version 1 keeps every tree in one blob: readers of
// version 1 would take a tree list for an empty directory.
func TestSplitTreeNotInVersion1(t *testing.T) {
	r := openGoldenCopy(t, 1)
	if raw := loadRaw(t, r, saveTree(t, r, bigTree(1000))); raw.Parts != nil || len(raw.Nodes) != 1000 {
		t.Errorf("version 1: a big tree is stored with %d entries and %d parts, want one tree blob", len(raw.Nodes), len(raw.Parts))
	}
}

func TestCheckReportsBrokenTreeLists(t *testing.T) {
	ctx := context.Background()
	var missing repo.ID
	copy(missing[:], "no such part")
	tests := []struct {
		name string
		list func(r *repo.Repository) string
	}{
		{"missing part", func(r *repo.Repository) string {
			return fmt.Sprintf(`{"parts":["%s"]}`, missing)
		}},
		{"no parts", func(r *repo.Repository) string { return `{"parts":[]}` }},
		{"entries and parts", func(r *repo.Repository) string {
			return fmt.Sprintf(`{"nodes":[],"parts":["%s"]}`, saveTree(t, r, bigTree(3)))
		}},
		{"parts that make a tree list", func(r *repo.Repository) string {
			inner := []byte(fmt.Sprintf(`{"parts":["%s"]}`, saveTree(t, r, bigTree(3))))
			return fmt.Sprintf(`{"parts":["%s"]}`, saveBlobOfType(t, r, repo.TreeBlob, inner))
		}},
		{"parts that are not JSON", func(r *repo.Repository) string {
			a := saveBlobOfType(t, r, repo.TreeBlob, []byte(`{"nodes":[`))
			return fmt.Sprintf(`{"parts":["%s","%s"]}`, a, a)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := memory.New()
			r := initRepo(t, be)
			data := []byte(tt.list(r))
			list := saveBlobOfType(t, r, repo.TreeBlob, data)
			root := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{{Name: "big", Type: repo.NodeDir, Subtree: &list}}})
			flush(t, r)
			if err := flush(t, r).SaveSnapshot(ctx, &repo.Snapshot{ID: "s1", Time: time.Now().UTC(), Tree: root}); err != nil {
				t.Fatal(err)
			}
			r2 := openRepo(t, be)
			if _, err := r2.LoadTree(ctx, list); err == nil {
				t.Errorf("LoadTree of %s succeeds", data)
			}
			rep, err := r2.Check(ctx, repo.CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if findProblem(rep, "tree blob "+list.String()) == nil {
				t.Errorf("tree list %s is not reported:%s", data, problemList(rep))
			}
		})
	}
}
