package restore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/restore"
)

// planningBackend is a backend in memory that takes plans, as the s3
// backend does, and keeps the last one.
type planningBackend struct {
	repo.Backend
	mu   sync.Mutex
	plan []repo.PackReads
}

func (b *planningBackend) PlanReads(plan []repo.PackReads) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if plan != nil {
		b.plan = plan
	}
}

func (b *planningBackend) Unwrap() repo.Backend { return b.Backend }

// readOrder is a repository that records the chunks of each
// LoadBlobsInOrder call (sizes: how many) and of each StreamBlobsInOrder
// call (streamed).
type readOrder struct {
	*repo.Repository
	mu       sync.Mutex
	sizes    []int
	streamed [][]repo.ID
}

func (r *readOrder) LoadBlobsInOrder(ctx context.Context, ids []repo.ID, buf *repo.BlobBuffer, fn func(i int, plain []byte) error) error {
	r.mu.Lock()
	r.sizes = append(r.sizes, len(ids))
	r.mu.Unlock()
	return r.Repository.LoadBlobsInOrder(ctx, ids, buf, fn)
}

func (r *readOrder) StreamBlobsInOrder(ctx context.Context, ids []repo.ID, buf *repo.BlobBuffer, fn func(i int, plain []byte) error) error {
	r.mu.Lock()
	r.streamed = append(r.streamed, ids)
	r.mu.Unlock()
	return r.Repository.StreamBlobsInOrder(ctx, ids, buf, fn)
}

// bigFilesSideBySide saves two big files whose chunks take turns in three
// packs (a session each, one goroutine saving: as one data packer lays
// out two files a backup reads at once) and returns the snapshot's tree
// and the files' contents.
func bigFilesSideBySide(t *testing.T, r *repo.Repository) (repo.ID, map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	want := map[string][]byte{}
	var ids [2][]repo.ID
	var root repo.ID
	for session := range 3 {
		_, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
			for i := range 20 {
				for f := range 2 {
					c := bytes.Repeat([]byte(fmt.Sprintf("file %d session %d chunk %d;", f, session, i)), 200)
					id := r.BlobID(c)
					if _, err := w.SaveBlob(ctx, repo.DataBlob, id, c); err != nil {
						return err
					}
					ids[f] = append(ids[f], id)
					name := fmt.Sprintf("big-%d", f)
					want[name] = append(want[name], c...)
				}
			}
			if session < 2 {
				return nil
			}
			var nodes []repo.Node
			for f := range 2 {
				name := fmt.Sprintf("big-%d", f)
				nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(want[name])), Content: ids[f]})
			}
			var err error
			root, err = w.SaveTree(ctx, &repo.Tree{Nodes: nodes})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return root, want
}

// restoreInto restores tree root of r with one file worker into a new
// folder and compares the files with want.
func restoreInto(t *testing.T, r restore.Repository, root repo.ID, want map[string][]byte) {
	t.Helper()
	target := t.TempDir()
	if _, err := restore.Run(context.Background(), r, &repo.Snapshot{ID: "big", Tree: root}, restore.Options{Target: target, Workers: 1}); err != nil {
		t.Fatal(err)
	}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(target, name))
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s: %d bytes (%v), want the %d saved", name, len(got), err, len(content))
		}
	}
}

// With a backend that plans its reads, two big files whose chunks share
// packs are read pack by pack: one stream call per pack, with the chunks
// of both files that it holds, in the pack's order; the plan holds none
// of them.
func TestBigFilesReadPackByPack(t *testing.T) {
	be := &planningBackend{Backend: memory.New()}
	r := repotest.New(t, be)
	root, want := bigFilesSideBySide(t, r)
	rec := &readOrder{Repository: r}
	restoreInto(t, rec, root, want)
	if len(rec.sizes) != 0 {
		t.Errorf("big files read in parts of %v chunks, want none: pack by pack", rec.sizes)
	}
	packs := map[repo.ID]bool{}
	for i, ids := range rec.streamed {
		first, _ := r.Index().Lookup(ids[0])
		at := -1
		for _, id := range ids {
			b, ok := r.Index().Lookup(id)
			if !ok || b.Pack != first.Pack || int(b.Offset) <= at {
				t.Fatalf("pack job %d: chunk %s is not after the one before in pack %s", i, id.Short(), first.Pack.Short())
			}
			at = int(b.Offset)
		}
		if packs[first.Pack] {
			t.Errorf("pack %s read by two jobs", first.Pack.Short())
		}
		packs[first.Pack] = true
		if len(ids) != 40 {
			t.Errorf("pack job %d: %d chunks, want the 40 of both files that pack %s holds", i, len(ids), first.Pack.Short())
		}
	}
	if len(packs) != 3 {
		t.Errorf("%d packs read by jobs, want 3", len(packs))
	}
	for _, p := range be.plan {
		for pack := range packs {
			if p.Pack.Name == pack.String() {
				t.Errorf("pack %s of the big files planned: %d reads", pack.Short(), len(p.Reads))
			}
		}
	}
}

// A local backend plans nothing: big files are read in parts of at most
// 32 chunks, file after file, as without the plan.
func TestBigFilesLocalInParts(t *testing.T) {
	r := repotest.New(t, memory.New())
	root, want := bigFilesSideBySide(t, r)
	rec := &readOrder{Repository: r}
	restoreInto(t, rec, root, want)
	if len(rec.sizes) != 4 || rec.sizes[0] != 32 || rec.sizes[1] != 28 {
		t.Errorf("reads of %v chunks, want 32 and 28 for each file", rec.sizes)
	}
}

// A restore cancelled while a pack job writes stops there: it returns the
// cancellation, and neither big file is in place nor a temporary file
// left.
func TestBigFilesByPackCancelled(t *testing.T) {
	r := repotest.New(t, &planningBackend{Backend: memory.New()})
	root, _ := bigFilesSideBySide(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var writes atomic.Int32
	fsys := &faultFS{hook: func(op, _ string, _ int64, _ int) error {
		if op == "WriteAt" && writes.Add(1) == 5 {
			cancel()
		}
		return nil
	}}
	target := t.TempDir()
	_, err := restore.Run(ctx, r, &repo.Snapshot{ID: "big", Tree: root}, restore.Options{Target: target, FS: fsys, Workers: 2})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("restore returns %v, want the cancellation", err)
	}
	noTemps(t, target)
	for _, name := range []string{"big-0", "big-1"} {
		if _, err := os.Lstat(filepath.Join(target, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, whose writing was cancelled, is in place (%v)", name, err)
		}
	}
}

// A chunk of one big file that cannot be read costs that file alone: the
// other file, whose chunks share the pack job, is restored whole, and the
// damaged one is reported with its path and the blob, not put in place.
func TestBigFilesByPackDamage(t *testing.T) {
	faulty := backendtest.NewFaulty(memory.New())
	r := repotest.New(t, &planningBackend{Backend: faulty})
	root, want := bigFilesSideBySide(t, r)
	var tree *repo.Tree
	if err := r.Walk(context.Background(), root, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
		if e.Node.Name == "big-0" {
			tree = &repo.Tree{Nodes: []repo.Node{*e.Node}}
		}
		return nil
	}}); err != nil || tree == nil {
		t.Fatalf("walk: %v", err)
	}
	damaged := tree.Nodes[0].Content[45] // in the third pack, before big-1's chunks there
	loc, _ := r.Index().Lookup(damaged)
	at := int64(loc.Offset) + int64(loc.Length)/2
	faulty.CorruptLoads(repo.PackFile, func(h repo.Handle, offset int64, data []byte) {
		if h.Name == loc.Pack.String() && at >= offset && at < offset+int64(len(data)) {
			data[at-offset] ^= 1
		}
	})
	target := t.TempDir()
	res, err := restore.Run(context.Background(), r, &repo.Snapshot{ID: "big", Tree: root}, restore.Options{Target: target, Workers: 2})
	var damage *restore.DamagedError
	if !errors.As(err, &damage) || damage.Entries != 1 || !strings.Contains(err.Error(), damaged.Short()) {
		t.Errorf("restore returns %v, want damage to 1 entry naming blob %s", err, damaged.Short())
	}
	if res == nil || len(res.Skipped) != 1 || !strings.HasSuffix(res.Skipped[0].Path, "big-0") {
		t.Fatalf("skipped: %+v, want big-0", res)
	}
	if _, err := os.Lstat(filepath.Join(target, "big-0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("big-0, damaged, is in place (%v)", err)
	}
	if got, err := os.ReadFile(filepath.Join(target, "big-1")); err != nil || !bytes.Equal(got, want["big-1"]) {
		t.Errorf("big-1: %d bytes (%v), want the %d saved", len(got), err, len(want["big-1"]))
	}
	noTemps(t, target)
}

// Many big files sharing chunks (a common header, a chunk of zeros, a
// chunk repeated inside a file) restore bit for bit pack by pack, while
// the temporary files open at once stay bounded: a pack that holds a
// chunk of every file does not keep every file of the restore open (the
// batches are cut at 32 files; about twice that can be in flight).
func TestBigFilesByPackSharedChunksBoundOpenFiles(t *testing.T) {
	r := repotest.New(t, &planningBackend{Backend: memory.New()})
	ctx := context.Background()
	const files = 150
	shared := bytes.Repeat([]byte("shared header;"), 100)
	zero := make([]byte, 1000)
	save := func(w *repo.Writer, c []byte) repo.ID { return saveData(t, r, w, c) }
	var sharedID, zeroID repo.ID
	if _, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		sharedID, zeroID = save(w, shared), save(w, zero)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	root := treeSession(t, r, func(w *repo.Writer) []repo.Node {
		var nodes []repo.Node
		for f := range files {
			ids := []repo.ID{sharedID}
			content := append([]byte(nil), shared...)
			for i := range 34 {
				c := bytes.Repeat([]byte(fmt.Sprintf("file %d chunk %d;", f, i)), 20)
				ids = append(ids, save(w, c))
				content = append(content, c...)
				if i == 10 || i == 20 { // shared, zeros, the last chunk again
					ids = append(ids, sharedID, zeroID, ids[len(ids)-1])
					content = append(content, shared...)
					content = append(content, zero...)
					content = append(content, c...)
				}
			}
			ids = append(ids, zeroID)
			content = append(content, zero...)
			name := fmt.Sprintf("f%03d", f)
			want[name] = content
			nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(content)), Content: ids})
		}
		return nodes
	})
	restoreBoundingOpenFiles(t, r, root, want)
}

// Small files of two chunks saved beside a big file, all starting with
// one shared chunk, go with the big file's pack job; the job writes the
// shared chunk into each of them first (the pack's order), so each stays
// open until its own chunk comes: the batch counts them as files that
// stay open, and the temporary files open at once stay bounded (300 were
// open at once, and files were lost to "too many open files" under a low
// limit, when only big files counted).
func TestSmallFilesSharingAChunkBoundOpenFiles(t *testing.T) {
	r := repotest.New(t, &planningBackend{Backend: memory.New()})
	const small = 300
	save := func(w *repo.Writer, c []byte) repo.ID { return saveData(t, r, w, c) }
	want := map[string][]byte{}
	root := treeSession(t, r, func(w *repo.Writer) []repo.Node {
		var big []repo.ID
		var bigContent []byte
		for i := range 40 {
			c := bytes.Repeat([]byte(fmt.Sprintf("big chunk %d;", i)), 40)
			big, bigContent = append(big, save(w, c)), append(bigContent, c...)
		}
		want["big"] = bigContent
		nodes := []repo.Node{{Name: "big", Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(bigContent)), Content: big}}
		header := bytes.Repeat([]byte("shared header;"), 50)
		headerID := save(w, header)
		for i := range small {
			own := bytes.Repeat([]byte(fmt.Sprintf("small file %d;", i)), 30)
			content := append(append([]byte(nil), header...), own...)
			name := fmt.Sprintf("s%03d", i)
			want[name] = content
			nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(content)), Content: []repo.ID{headerID, save(w, own)}})
		}
		return nodes
	})
	restoreBoundingOpenFiles(t, r, root, want)
}

// Small files of several chunks saved beside a big file, each in the one
// pack and more of them than a batch may hold of files that stay open,
// are open only while the big file's pack job writes them: they go with
// it in one batch, and the pack is read with one stream (once per batch
// of 32 files, when they all counted as staying open).
func TestSmallFilesOfSeveralChunksBesideBigReadOnce(t *testing.T) {
	r := repotest.New(t, &planningBackend{Backend: memory.New()})
	const small, chunks = 80, 3
	save := func(w *repo.Writer, c []byte) repo.ID { return saveData(t, r, w, c) }
	want := map[string][]byte{}
	root := treeSession(t, r, func(w *repo.Writer) []repo.Node {
		var nodes []repo.Node
		var big []repo.ID
		var bigContent []byte
		for i := range small {
			c := bytes.Repeat([]byte(fmt.Sprintf("big chunk %d;", i)), 40)
			big, bigContent = append(big, save(w, c)), append(bigContent, c...)
			var ids []repo.ID
			var content []byte
			for j := range chunks {
				c := bytes.Repeat([]byte(fmt.Sprintf("small %d chunk %d;", i, j)), 30)
				ids, content = append(ids, save(w, c)), append(content, c...)
			}
			name := fmt.Sprintf("s%03d", i)
			want[name] = content
			nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(content)), Content: ids})
		}
		want["big"] = bigContent
		return append([]repo.Node{{Name: "big", Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(bigContent)), Content: big}}, nodes...)
	})
	rec, peak, target := restoreWatched(t, r, root, want)
	var streamed []int
	for _, ids := range rec.streamed {
		streamed = append(streamed, len(ids))
	}
	if !slices.Equal(streamed, []int{small * (1 + chunks)}) {
		t.Errorf("stream calls of %v chunks, want one of the %d chunks of the pack", streamed, small*(1+chunks))
	}
	if len(rec.sizes) != 0 {
		t.Errorf("%d files read alone, want none", len(rec.sizes))
	}
	// The big file, a small file each worker writes, one just written.
	if peak > 4 {
		t.Errorf("%d temporary files open at once, want at most 4", peak)
	}
	noTemps(t, target)
}

// Copies of one file of several chunks, saved beside a big file, all
// lie in its pack; a copy held after the first shares its chunks, so it
// stays open from the first of them to the last while the job writes
// every copy: such copies count as files that stay open, and the files
// open at once stay bounded.
func TestCopiesOfSeveralChunksBoundOpenFiles(t *testing.T) {
	r := repotest.New(t, &planningBackend{Backend: memory.New()})
	const copies = 150
	save := func(w *repo.Writer, c []byte) repo.ID { return saveData(t, r, w, c) }
	want := map[string][]byte{}
	root := treeSession(t, r, func(w *repo.Writer) []repo.Node {
		var big, copied []repo.ID
		var bigContent, copyContent []byte
		for i := range 40 {
			c := bytes.Repeat([]byte(fmt.Sprintf("big chunk %d;", i)), 40)
			big, bigContent = append(big, save(w, c)), append(bigContent, c...)
			if i < 3 {
				c := bytes.Repeat([]byte(fmt.Sprintf("copied chunk %d;", i)), 30)
				copied, copyContent = append(copied, save(w, c)), append(copyContent, c...)
			}
		}
		want["big"] = bigContent
		nodes := []repo.Node{{Name: "big", Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(bigContent)), Content: big}}
		for i := range copies {
			name := fmt.Sprintf("c%03d", i)
			want[name] = copyContent
			nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(copyContent)), Content: copied})
		}
		return nodes
	})
	restoreBoundingOpenFiles(t, r, root, want)
}

// Small files saved beside a big file, their chunks taking turns with its
// chunks in one pack, go with the big file's pack job, wherever the walk
// meets them (among small files of a pack of their own, before and after
// the big file): the pack is read with one stream and planned for none
// of them, the other pack is planned as before, and each small file is
// put in place as soon as the job wrote it, not held open to the job's end.
func TestSmallFilesBesideBigReadByPack(t *testing.T) {
	be := &planningBackend{Backend: memory.New()}
	r := repotest.New(t, be)
	ctx := context.Background()
	want := map[string][]byte{}
	var nodes []repo.Node
	save := func(w *repo.Writer, c []byte) repo.ID { return saveData(t, r, w, c) }
	node := func(name string, ids []repo.ID, content []byte) {
		want[name] = content
		nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(content)), Content: ids})
	}
	const alone, beside = 6, 120
	if _, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		for i := range alone {
			c := bytes.Repeat([]byte(fmt.Sprintf("alone %d;", i)), 50)
			node(fmt.Sprintf("%03d-alone", i*beside/alone), []repo.ID{save(w, c)}, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var root repo.ID
	if _, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		var big []repo.ID
		var content []byte
		for i := range beside {
			c := bytes.Repeat([]byte(fmt.Sprintf("big chunk %d;", i)), 40)
			big, content = append(big, save(w, c)), append(content, c...)
			s := bytes.Repeat([]byte(fmt.Sprintf("beside %d;", i)), 30)
			node(fmt.Sprintf("%03d-beside", i), []repo.ID{save(w, s)}, s)
		}
		node("050-big", big, content)
		slices.SortFunc(nodes, func(a, b repo.Node) int { return strings.Compare(a.Name, b.Name) })
		var err error
		root, err = w.SaveTree(ctx, &repo.Tree{Nodes: nodes})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rec, peak, target := restoreWatched(t, r, root, want)
	bigID := nodes[slices.IndexFunc(nodes, func(n repo.Node) bool { return n.Name == "050-big" })].Content[0]
	b, _ := r.Index().Lookup(bigID)
	mixed := b.Pack
	var streamed []int
	for _, ids := range rec.streamed {
		streamed = append(streamed, len(ids))
	}
	if !slices.Equal(streamed, []int{2 * beside}) {
		t.Errorf("stream calls of %v chunks, want one of the %d chunks of the shared pack", streamed, 2*beside)
	}
	if len(rec.sizes) != alone {
		t.Errorf("%d files read alone, want the %d of the pack of their own", len(rec.sizes), alone)
	}
	for _, p := range be.plan {
		if p.Pack.Name == mixed.String() {
			t.Errorf("the shared pack planned: %d reads", len(p.Reads))
		} else if len(p.Reads) != alone {
			t.Errorf("pack %s planned with %d reads, want the %d of the files alone", p.Pack.Name, len(p.Reads), alone)
		}
	}
	// The big file, a file each worker writes, one the job just wrote.
	if peak > 4 {
		t.Errorf("%d temporary files open at once, want at most 4", peak)
	}
	noTemps(t, target)
}

// restoreBoundingOpenFiles restores the tree root of r with two workers
// through a backend that plans its reads, and checks that every file of
// want comes back bit for bit, read pack by pack, with at most about
// twice a batch's 32 files that may stay open (the next batch's jobs
// start while the last of one run) open at once, each batch with the file
// held first of those sharing a chunk (which counts as brief) beside them.
func restoreBoundingOpenFiles(t *testing.T, r *repo.Repository, root repo.ID, want map[string][]byte) {
	t.Helper()
	rec, peak, target := restoreWatched(t, r, root, want)
	if len(rec.streamed) == 0 {
		t.Error("nothing was read pack by pack")
	}
	if limit := 2*(32+1) + 2; peak > limit {
		t.Errorf("%d temporary files open at once, want at most %d", peak, limit)
	}
	noTemps(t, target)
}

// restoreWatched restores the tree root of r into a new folder with two
// workers, recording its reads and the most temporary files open at once
// (made, not yet renamed into place), and checks that every file of want
// comes back bit for bit and that nothing is skipped.
func restoreWatched(t *testing.T, r *repo.Repository, root repo.ID, want map[string][]byte) (rec *readOrder, peak int, target string) {
	t.Helper()
	var mu sync.Mutex
	inFlight := 0
	fsys := &faultFS{hook: func(op, _ string, _ int64, _ int) error {
		mu.Lock()
		defer mu.Unlock()
		switch op {
		case "CreateExclusive":
			inFlight++
			peak = max(peak, inFlight)
		case "Rename":
			inFlight--
		}
		return nil
	}}
	rec = &readOrder{Repository: r}
	target = t.TempDir()
	res, err := restore.Run(context.Background(), rec, &repo.Snapshot{ID: "watched", Tree: root}, restore.Options{Target: target, FS: fsys, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 || int(res.Files) != len(want) {
		t.Fatalf("%d files restored, %d skipped (%+v); want %d, none", res.Files, len(res.Skipped), res.Skipped, len(want))
	}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(target, name))
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s: %d bytes (%v), want %d", name, len(got), err, len(content))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return rec, peak, target
}

// saveData saves c as a data blob in w's session and returns its ID.
func saveData(t *testing.T, r *repo.Repository, w *repo.Writer, c []byte) repo.ID {
	t.Helper()
	id := r.BlobID(c)
	if _, err := w.SaveBlob(context.Background(), repo.DataBlob, id, c); err != nil {
		t.Fatal(err)
	}
	return id
}

// treeSession runs one write session in r that saves what nodes saves and
// the folder of the nodes it returns, and returns that folder's tree ID.
func treeSession(t *testing.T, r *repo.Repository, nodes func(w *repo.Writer) []repo.Node) repo.ID {
	t.Helper()
	var root repo.ID
	if _, err := r.WriteSession(context.Background(), repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		var err error
		root, err = w.SaveTree(ctx, &repo.Tree{Nodes: nodes(w)})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return root
}
