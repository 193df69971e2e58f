package repo_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
)

var update = flag.Bool("update", false, "rewrite the golden repository in testdata/repo")

// The golden repositories are small repositories, one per config version,
// each written once by the nightjar of its day and committed, so that every
// later nightjar is tested against reading them. Write the newest one (only
// for a deliberate format change, which must come with a new version, in a
// new folder) with
//
//	go test ./repo -run TestGoldenRepository -update
var goldenDirs = []string{"../testdata/repo/v1", "../testdata/repo/v2"}

const goldenPassword = "nightjar golden repository"

// goldenSnapshot is the ID of the one snapshot of the golden repository of
// config version v.
func goldenSnapshot(v int) string { return fmt.Sprintf("golden-v%d", v) }

// goldenMany is the number of entries of the directory "many" that the
// golden repositories from version 2 on hold: enough for a split tree.
const goldenMany = 400

var goldenTime = time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)

// goldenFiles are the files of the golden snapshot, below /data.
var goldenFiles = map[string][]byte{
	"hello.txt":  compressible(100 << 10),
	"random.bin": random(42, 70<<10),
	"caf\xe9":    []byte("a name that is not UTF-8\n"),
}

func goldenTree(r *repo.Repository, t *testing.T) repo.ID {
	ctx := context.Background()
	var nodes []repo.Node
	for _, name := range []string{"caf\xe9", "hello.txt", "random.bin"} {
		data := goldenFiles[name]
		nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o644, Size: uint64(len(data)),
			MTime: goldenTime, Content: []repo.ID{saveBlob(t, r, data)}})
	}
	empty, err := writer(t, r).SaveTree(ctx, &repo.Tree{})
	if err != nil {
		t.Fatal(err)
	}
	var many repo.Tree
	for i := range goldenMany {
		many.Nodes = append(many.Nodes, repo.Node{Name: fmt.Sprintf("f%03d", i), Type: repo.NodeFile, Mode: 0o600, MTime: goldenTime})
	}
	manyID, err := writer(t, r).SaveTree(ctx, &many)
	if err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes, repo.Node{Name: "empty", Type: repo.NodeDir, Mode: 0o700, MTime: goldenTime, Subtree: &empty},
		repo.Node{Name: "many", Type: repo.NodeDir, Mode: 0o700, MTime: goldenTime, Subtree: &manyID},
		repo.Node{Name: "z-link", Type: repo.NodeSymlink, Mode: 0o777, MTime: goldenTime, LinkTarget: "hello.txt"})
	slices.SortFunc(nodes, func(a, b repo.Node) int { return strings.Compare(a.Name, b.Name) }) // byte order
	data, err := writer(t, r).SaveTree(ctx, &repo.Tree{Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	root, err := writer(t, r).SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "data", Type: repo.NodeDir, Mode: 0o755, MTime: goldenTime, Subtree: &data}}})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// writeGolden writes the golden repository of the newest config version.
func writeGolden(t *testing.T) {
	ctx := context.Background()
	goldenDir := goldenDirs[len(goldenDirs)-1]
	if err := os.RemoveAll(goldenDir); err != nil {
		t.Fatal(err)
	}
	be, err := local.Create(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	r := initRepoWith(t, be, goldenPassword, repo.InitOptions{Now: func() time.Time { return goldenTime }})
	root := goldenTree(r, t)
	flush(t, r)
	snap := &repo.Snapshot{ID: goldenSnapshot(repo.ConfigVersion), Time: goldenTime, Hostname: "golden", Username: "nightjar",
		Paths: []string{"/data"}, Tree: root, ProgramVersion: "golden"}
	if err := flush(t, r).SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	// Git keeps no empty folders: remove them, so that the test reads what
	// a checkout holds.
	var dirs []string
	_ = filepath.WalkDir(goldenDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Remove(dirs[i]) // only empty ones go
	}
}

// TestGoldenRepository reads the committed repositories of every config
// version: format changes that break reading existing backups fail here.
func TestGoldenRepository(t *testing.T) {
	if *update {
		writeGolden(t)
	}
	for i, dir := range goldenDirs {
		t.Run(filepath.Base(dir), func(t *testing.T) { checkGolden(t, dir, i+1) })
	}
}

func checkGolden(t *testing.T, dir string, version int) {
	ctx := context.Background()
	be, err := local.Open(dir)
	if err != nil {
		t.Fatalf("open golden repository (regenerate the newest with -update): %v", err)
	}
	if _, err := repo.Open(ctx, be, repo.OpenOptions{Password: pw("not it")}); !errors.Is(err, repo.ErrWrongPassword) {
		t.Errorf("wrong password: %v, want ErrWrongPassword", err)
	}
	r, err := repo.Open(ctx, be, repo.OpenOptions{Password: pw(goldenPassword)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if cfg := r.Config(); cfg.Version != version || cfg.Chunker != testChunker || !cfg.Created.Equal(goldenTime) {
		t.Errorf("config %+v", cfg)
	}
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	snap, err := r.FindSnapshot(ctx, "latest", []string{"/data"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.ID != goldenSnapshot(version) || !snap.Time.Equal(goldenTime) || snap.Hostname != "golden" {
		t.Errorf("snapshot %+v", snap)
	}
	root, err := r.LoadTree(ctx, snap.Tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(root.Nodes) != 1 || root.Nodes[0].Name != "data" || root.Nodes[0].Subtree == nil {
		t.Fatalf("root tree %+v", root.Nodes)
	}
	data, err := r.LoadTree(ctx, *root.Nodes[0].Subtree)
	if err != nil {
		t.Fatal(err)
	}
	trees := []repo.ID{snap.Tree, *root.Nodes[0].Subtree}
	wantBlobs := 7 // 3 chunks, 3 trees and the inventory blob
	chunks := map[repo.ID]bool{}
	var gotNames []string
	for _, n := range data.Nodes {
		gotNames = append(gotNames, n.Name)
		switch n.Type {
		case repo.NodeFile:
			var content []byte
			for _, id := range n.Content {
				chunks[id] = true
				b, err := r.LoadBlob(ctx, id)
				if err != nil {
					t.Fatalf("%q: %v", n.Name, err)
				}
				content = append(content, b...)
			}
			if string(content) != string(goldenFiles[n.Name]) || !n.MTime.Equal(goldenTime) {
				t.Errorf("file %q reads back differently", n.Name)
			}
		case repo.NodeSymlink:
			if n.LinkTarget != "hello.txt" {
				t.Errorf("symlink %q -> %q", n.Name, n.LinkTarget)
			}
		case repo.NodeDir:
			if n.Name != "many" {
				continue
			}
			// A split tree: a tree list and its parts.
			trees = append(trees, *n.Subtree)
			raw := loadRaw(t, r, *n.Subtree)
			if len(raw.Parts) < 2 {
				t.Errorf("many: stored with %d parts, want a tree list", len(raw.Parts))
			}
			wantBlobs = 4 + len(raw.Parts) // root, data, empty, the list and its parts; the chunks are added below
			many, err := r.LoadTree(ctx, *n.Subtree)
			if err != nil {
				t.Fatal(err)
			}
			if len(many.Nodes) != goldenMany || many.Nodes[goldenMany-1].Name != fmt.Sprintf("f%03d", goldenMany-1) {
				t.Errorf("many holds %d entries", len(many.Nodes))
			}
		}
	}
	want := []string{"caf\xe9", "empty", "hello.txt", "random.bin", "z-link"}
	if version >= 2 {
		want = []string{"caf\xe9", "empty", "hello.txt", "many", "random.bin", "z-link"}
	}
	if !slices.Equal(gotNames, want) {
		t.Errorf("names %q, want %q", gotNames, want)
	}
	// Trees encode to the bytes they were stored as, so that a tree saved
	// by this nightjar deduplicates against one saved by an older one.
	for _, id := range trees {
		tree, err := r.LoadTree(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		again, err := writer(t, r).SaveTree(ctx, tree)
		if err != nil || again != id {
			t.Errorf("tree %s encodes anew as %s (%v)", id.Short(), again.Short(), err)
		}
	}
	// The version 1 repository was written when snapshots still had an
	// inventory: its inventory blob and the snapshot's list of it are read
	// and checked like any other blob that nothing refers to.
	rep, err := r.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
	if err != nil || !rep.OK() {
		t.Errorf("check: %v%s", err, problemList(rep))
	}
	if version >= 2 {
		wantBlobs += len(chunks) // and no inventory
	}
	if rep.Blobs != wantBlobs {
		t.Errorf("check counts %d blobs, want %d", rep.Blobs, wantBlobs)
	}
}
