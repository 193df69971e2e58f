package cache_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/cache"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// counting counts the loads that reach the backend it wraps, by type.
type counting struct {
	repo.Backend
	mu     sync.Mutex
	loads  map[repo.FileType]int
	wholes map[repo.FileType]int // loads of a whole object
}

func newCounting(be repo.Backend) *counting {
	return &counting{Backend: be, loads: map[repo.FileType]int{}, wholes: map[repo.FileType]int{}}
}

func (c *counting) Unwrap() repo.Backend { return c.Backend }

func (c *counting) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	c.mu.Lock()
	c.loads[h.Type]++
	if offset == 0 && length < 0 {
		c.wholes[h.Type]++
	}
	c.mu.Unlock()
	return c.Backend.Load(ctx, h, offset, length)
}

func (c *counting) wholeLoads(t repo.FileType) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wholes[t]
}

func (c *counting) count(t repo.FileType) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads[t]
}

// object returns content and its name (its BLAKE3), as index files and
// packs are named.
func object(content string) (string, []byte) {
	sum := blake3.Sum256([]byte(content))
	return hex.EncodeToString(sum[:]), []byte(content)
}

const repoID = "0123456789abcdef"

func attached(t *testing.T, be repo.Backend, root string) *cache.Backend {
	t.Helper()
	c := cache.Wrap(be)
	if err := c.Attach(root, repoID); err != nil {
		t.Fatal(err)
	}
	return c
}

// An index file read once is read from its copy by the next process,
// which asks the backend nothing; the copy and its folders are private.
func TestIndexFileCacheHit(t *testing.T) {
	ctx := context.Background()
	mem := newCounting(memory.New())
	name, content := object("an index file")
	h := repo.Handle{Type: repo.IndexFile, Name: name}
	if err := mem.Save(ctx, h, content); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for process := range 2 {
		got, err := attached(t, mem, root).Load(ctx, h, 0, -1)
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("process %d: load %q, %v; want %q", process, got, err, content)
		}
	}
	if n := mem.count(repo.IndexFile); n != 1 {
		t.Errorf("index loads that reached the backend: %d, want 1 (the second process reads the copy)", n)
	}
	copyPath := filepath.Join(root, repoID, "index", name)
	for p, want := range map[string]os.FileMode{copyPath: 0o600, filepath.Join(root, repoID): 0o700, filepath.Dir(copyPath): 0o700} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
		}
	}
	part, err := attached(t, mem, root).Load(ctx, h, 3, 5)
	if err != nil || string(part) != "index" {
		t.Errorf("ranged load from the copy: %q, %v; want %q", part, err, "index")
	}
}

// A copy that no longer matches its name is dropped and fetched again,
// never returned.
func TestCorruptEntryIsFetchedAgain(t *testing.T) {
	ctx := context.Background()
	mem := newCounting(memory.New())
	name, content := object("another index file")
	h := repo.Handle{Type: repo.IndexFile, Name: name}
	if err := mem.Save(ctx, h, content); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if _, err := attached(t, mem, root).Load(ctx, h, 0, -1); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(root, repoID, "index", name)
	if err := os.WriteFile(copyPath, []byte("another index filf"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := attached(t, mem, root).Load(ctx, h, 0, -1)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("load after the copy was damaged: %q, %v; want %q", got, err, content)
	}
	if n := mem.count(repo.IndexFile); n != 2 {
		t.Errorf("index loads that reached the backend: %d, want 2 (the damaged copy fetched again)", n)
	}
	if kept, err := os.ReadFile(copyPath); err != nil || !bytes.Equal(kept, content) {
		t.Errorf("copy after the fetch: %q, %v; want the object again", kept, err)
	}
}

// An object the repository no longer lists (another host's prune removed
// it) loses its copy at the next listing; one it lists keeps it.
func TestVanishedObjectLeavesCache(t *testing.T) {
	ctx := context.Background()
	mem := newCounting(memory.New())
	gone, goneContent := object("an index file pruned elsewhere")
	kept, keptContent := object("an index file still listed")
	root := t.TempDir()
	c := attached(t, mem, root)
	for name, content := range map[string][]byte{gone: goneContent, kept: keptContent} {
		if err := c.Save(ctx, repo.Handle{Type: repo.IndexFile, Name: name}, content); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, repoID, "index", gone)); err != nil {
		t.Fatalf("an index file saved through the cache has no copy: %v", err)
	}
	if err := mem.Remove(ctx, repo.Handle{Type: repo.IndexFile, Name: gone}); err != nil {
		t.Fatal(err)
	}
	var listed []string
	if err := attached(t, mem, root).List(ctx, repo.IndexFile, func(name string, _ int64) error {
		listed = append(listed, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0] != kept {
		t.Fatalf("listed %v, want only %s", listed, kept)
	}
	if _, err := os.Stat(filepath.Join(root, repoID, "index", gone)); !os.IsNotExist(err) {
		t.Errorf("copy of the vanished index file: %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(root, repoID, "index", kept)); err != nil {
		t.Errorf("copy of the listed index file: %v, want it kept", err)
	}
}

// Trees are read from the copy of their pack: the copy written beside the
// pack by the backup that made it, or else the whole pack fetched once.
// Data blobs are never cached.
func TestTreePacksFromCache(t *testing.T) {
	ctx := context.Background()
	mem := newCounting(memory.New())
	writer := cache.Wrap(mem)
	r := repotest.New(t, writer)
	root := t.TempDir()
	if err := writer.Attach(root, r.ID()); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("file content "), 1000)
	var trees []repo.ID
	_, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		id := r.BlobID(data)
		if _, err := w.SaveBlob(ctx, repo.DataBlob, id, data); err != nil {
			return err
		}
		for _, name := range []string{"a", "b", "c"} {
			tree, err := w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: name, Type: repo.NodeFile, Content: []repo.ID{id}}}})
			if err != nil {
				return err
			}
			trees = append(trees, tree)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	readTrees := func(label string) {
		t.Helper()
		c := attached2(t, mem, root, r.ID())
		r2, err := repo.Open(ctx, c, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
		if err != nil {
			t.Fatal(err)
		}
		defer r2.Close()
		if err := r2.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range trees {
			if _, err := r2.LoadTree(ctx, id); err != nil {
				t.Fatalf("%s: tree %s: %v", label, id.Short(), err)
			}
		}
		if got, err := r2.LoadBlob(ctx, r2.BlobID(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: data blob: %d bytes, %v", label, len(got), err)
		}
	}
	packLoads := mem.count(repo.PackFile)
	readTrees("no copy")
	if n := mem.count(repo.PackFile) - packLoads; n != 2 {
		t.Errorf("pack loads without a copy: %d, want 2 (the tree pack once, whole, and the data blob)", n)
	}
	packDir := filepath.Join(root, r.ID(), "data")
	entries, err := os.ReadDir(packDir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("packs kept: %v, %v; want the tree pack alone", entries, err)
	}
	packLoads = mem.count(repo.PackFile)
	readTrees("copy fetched before")
	if n := mem.count(repo.PackFile) - packLoads; n != 1 {
		t.Errorf("pack loads with the copy fetched before: %d, want 1 (the data blob)", n)
	}
	copyPath := filepath.Join(packDir, entries[0].Name())
	damaged, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	damaged[len(damaged)/2] ^= 1
	if err := os.WriteFile(copyPath, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	packLoads = mem.count(repo.PackFile)
	readTrees("damaged copy")
	if n := mem.count(repo.PackFile) - packLoads; n != 2 {
		t.Errorf("pack loads with a damaged copy: %d, want 2 (the tree pack fetched again, and the data blob)", n)
	}

	// Damage in the repository's own tree pack that leaves its trees
	// readable (a byte past its end): the pack no longer matches its
	// name, so it is not kept, and it is fetched whole once per process;
	// the other trees are read in ranges.
	h := repo.Handle{Type: repo.PackFile, Name: entries[0].Name()}
	remote, err := mem.Backend.Load(ctx, h, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Backend.Remove(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := mem.Backend.Save(ctx, h, append(remote, 0)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(copyPath); err != nil {
		t.Fatal(err)
	}
	wholes := mem.wholeLoads(repo.PackFile)
	readTrees("damaged in the repository")
	if n := mem.wholeLoads(repo.PackFile) - wholes; n != 1 {
		t.Errorf("whole loads of a tree pack that does not match its name: %d for %d trees, want 1", n, len(trees))
	}
	if _, err := os.Stat(copyPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a pack that does not match its name was kept: %v", err)
	}
}

func attached2(t *testing.T, be repo.Backend, root, id string) *cache.Backend {
	t.Helper()
	c := cache.Wrap(be)
	if err := c.Attach(root, id); err != nil {
		t.Fatal(err)
	}
	return c
}

// A listing removes a temporary file only when it is older than an hour
// (younger ones may be another process's copy being written), and no file
// younger than the listing (a copy stored while it ran).
func TestListingKeepsYoungTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	c := attached(t, memory.New(), root)
	folder := filepath.Join(root, repoID, "index")
	old := time.Now().Add(-2 * time.Hour)
	files := map[string]bool{".tmp-live": true, ".tmp-crashed": false, "stale-copy": false}
	for name := range files {
		p := filepath.Join(folder, name)
		if err := os.WriteFile(p, []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
		if name != ".tmp-live" {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	future := filepath.Join(folder, "stored-during-the-listing")
	files["stored-during-the-listing"] = true
	if err := os.WriteFile(future, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(future, later, later); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, repo.IndexFile, func(string, int64) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for name, keep := range files {
		_, err := os.Stat(filepath.Join(folder, name))
		if keep && err != nil {
			t.Errorf("%s was removed by the listing: %v", name, err)
		}
		if !keep && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was kept by the listing (%v), want it removed", name, err)
		}
	}
}
