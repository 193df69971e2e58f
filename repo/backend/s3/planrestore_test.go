package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/restore"
)

// getsByObject counts the proxy's GETs of pack objects by name: a rule
// that fires on each, with a Delay of nothing, only to be told of it.
type getsByObject struct {
	mu sync.Mutex
	n  map[string]int
}

func countGets(p *faultproxy.Proxy) *getsByObject {
	g := &getsByObject{n: map[string]int{}}
	p.SetRules(faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Fault: faultproxy.Delay,
		OnFault: func(_, p string) {
			g.mu.Lock()
			g.n[path.Base(p)]++
			g.mu.Unlock()
		}})
	return g
}

func (g *getsByObject) of(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n[name]
}

// A restore from S3 reads each data pack with one GET, though the
// read-ahead's windows are a small part of a pack and the file workers
// read several files of one pack side by side; every file comes back as
// saved, and no planned read goes to the server alone. The big file, in
// a session's pack of its own, is read pack by pack (a stream per pack,
// not planned).
func TestRestoreReadsEachPackOnce(t *testing.T) {
	be, p := proxiedBackend(t)
	// Windows of 64 KiB would take some 15 GETs for a pack of 1 MiB; the
	// budget holds two spans of a pack each.
	be.SetReadAhead(testWindow, 8<<20)
	r := repotest.New(t, be)
	ctx := context.Background()
	want := map[string][]byte{}
	mtime := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	// file saves one file of chunks in w and returns its node.
	file := func(w *repo.Writer, name string, seed uint64, chunks, chunkSize int) repo.Node {
		n := repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o600, MTime: mtime}
		var content []byte
		for i := range chunks {
			c := randomChunk(seed*1000+uint64(i), chunkSize)
			id := r.BlobID(c)
			if _, err := w.SaveBlob(ctx, repo.DataBlob, id, c); err != nil {
				t.Fatal(err)
			}
			n.Content = append(n.Content, id)
			content = append(content, c...)
		}
		n.Size = uint64(len(content))
		want[name] = content
		return n
	}
	// Two sessions of many small files, a data pack or more each, and a
	// third with a file of two parts (more than 32 chunks) in packs of
	// its own.
	var nodes []repo.Node
	dataPacks, smallPacks := map[repo.ID]bool{}, map[repo.ID]bool{}
	var root repo.ID
	for session := range 3 {
		written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
			if session == 2 {
				nodes = append(nodes, file(w, "big", 100, 34, 16<<10))
			} else {
				for i := range 12 {
					nodes = append(nodes, file(w, fmt.Sprintf("small-%d-%02d", session, i), uint64(session*100+i+1), 1+i%3, 16<<10))
				}
			}
			if session == 2 {
				var err error
				root, err = w.SaveTree(ctx, &repo.Tree{Nodes: nodes})
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if session == 2 {
			if err := written.SaveSnapshot(ctx, &repo.Snapshot{ID: "restore-plan", Time: mtime, Tree: root}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, n := range nodes {
		for _, id := range n.Content {
			b, _ := r.Index().Lookup(id)
			dataPacks[b.Pack] = true
			smallPacks[b.Pack] = smallPacks[b.Pack] || n.Name != "big"
		}
	}
	if len(dataPacks) < 3 {
		t.Fatalf("the test's data is in %d packs, want several", len(dataPacks))
	}
	gets := countGets(p)
	target := t.TempDir()
	res, err := restore.Run(ctx, r, &repo.Snapshot{ID: "restore-plan", Tree: root}, restore.Options{Target: target, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if int(res.Files) != len(want) {
		t.Errorf("%d files restored, want %d", res.Files, len(want))
	}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(target, name))
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s: %d bytes (%v), want the %d saved", name, len(got), err, len(content))
		}
	}
	for pack := range dataPacks {
		if n := gets.of(pack.String()); n != 1 {
			t.Errorf("data pack %s: %d GETs, want 1", pack.Short(), n)
		}
	}
	small := 0
	for _, s := range smallPacks {
		if s {
			small++
		}
	}
	if fetched, alone := be.PlanCounts(); fetched != small || alone != 0 {
		t.Errorf("planned spans: %d fetched, %d reads alone; want %d (a pack of small files each) fetched, none alone", fetched, alone, small)
	}
}

// randomChunk returns n bytes of a seeded stream, none of them zero (a
// chunk of zeros is restored as a hole, not read).
func randomChunk(seed uint64, n int) []byte {
	b := make([]byte, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x) | 1
	}
	return b
}

// unplanned is a repository whose backend is taken for one that does not
// plan: every read goes through the read-ahead's windows.
type unplanned struct{ *repo.Repository }

func (unplanned) NewReadPlan() *repo.ReadPlan { return nil }

// saveChunks saves n chunks of 8 KiB made from seed in w and returns their IDs and bytes.
func saveChunks(t *testing.T, r *repo.Repository, w *repo.Writer, seed uint64, n int) ([]repo.ID, [][]byte) {
	t.Helper()
	var ids []repo.ID
	var chunks [][]byte
	for i := range n {
		c := randomChunk(seed*1000+uint64(i), 8<<10)
		id := r.BlobID(c)
		if _, err := w.SaveBlob(context.Background(), repo.DataBlob, id, c); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		chunks = append(chunks, c)
	}
	return ids, chunks
}

// restoreAndCompare restores the snapshot of root into a new folder and
// fails the test where a file differs from want.
func restoreAndCompare(t *testing.T, r restore.Repository, root repo.ID, want map[string][]byte) {
	t.Helper()
	target := t.TempDir()
	res, err := restore.Run(context.Background(), r, &repo.Snapshot{ID: "big", Tree: root}, restore.Options{Target: target, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if int(res.Files) != len(want) {
		t.Errorf("%d files restored, want %d", res.Files, len(want))
	}
	for name, content := range want {
		got, err := os.ReadFile(filepath.Join(target, name))
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s: %d bytes (%v), want the %d saved", name, len(got), err, len(content))
		}
	}
}

// Two big files saved side by side by one packer, their chunks taking
// turns in three packs (a session each, as a backup's file workers reading
// both at once put them), with small files before in a pack of their own:
// the restore reads each data pack with one GET (a pack job's stream
// reads both files' chunks in it), and fetches no byte twice.
func TestRestoreReadsBigFilesByPack(t *testing.T) {
	be, p := proxiedBackend(t)
	// A pack holds 320 KiB: windows of 64 KiB would take 5 GETs or more
	// for it.
	be.SetReadAhead(testWindow, 8<<20)
	r := repotest.New(t, be)
	ctx := context.Background()
	mtime := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	want := map[string][]byte{}
	nodes := []repo.Node{}
	node := func(name string, ids []repo.ID, chunks [][]byte) {
		content := bytes.Join(chunks, nil)
		want[name] = content
		nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(content)), Content: ids})
	}
	var bigA, bigB [][]byte
	var idsA, idsB []repo.ID
	var root repo.ID
	const sessions, perPack = 3, 20
	if _, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		for i := range 5 {
			ids, chunks := saveChunks(t, r, w, uint64(500+i), 1+i%3)
			node(fmt.Sprintf("a-small-%d", i), ids, chunks)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for session := range sessions {
		written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
			for i := range perPack {
				a, ca := saveChunks(t, r, w, uint64(100000+session*perPack+i), 1)
				b, cb := saveChunks(t, r, w, uint64(200000+session*perPack+i), 1)
				idsA, bigA = append(idsA, a...), append(bigA, ca...)
				idsB, bigB = append(idsB, b...), append(bigB, cb...)
			}
			if session == sessions-1 {
				node("b-big", idsA, bigA)
				node("c-big", idsB, bigB)
				var err error
				root, err = w.SaveTree(ctx, &repo.Tree{Nodes: nodes})
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if session == sessions-1 {
			if err := written.SaveSnapshot(ctx, &repo.Snapshot{ID: "big", Time: mtime, Tree: root}); err != nil {
				t.Fatal(err)
			}
		}
	}
	bigPacks := map[repo.ID]bool{}
	for _, id := range append(slices.Clone(idsA), idsB...) {
		b, _ := r.Index().Lookup(id)
		bigPacks[b.Pack] = true
	}
	if len(bigPacks) < sessions {
		t.Fatalf("the big files are in %d packs, want %d or more", len(bigPacks), sessions)
	}
	var packBytes int64
	if err := be.List(ctx, repo.PackFile, func(_ string, size int64) error { packBytes += size; return nil }); err != nil {
		t.Fatal(err)
	}
	gets := countGets(p)
	p.ResetCounts()
	restoreAndCompare(t, r, root, want)
	for pack := range bigPacks {
		if n := gets.of(pack.String()); n != 1 {
			t.Errorf("data pack %s of the big files: %d GETs, want 1", pack.Short(), n)
		}
	}
	if got := p.Counts().BytesOut; got > packBytes {
		t.Errorf("%d bytes received, more than the %d the packs hold: some were fetched twice", got, packBytes)
	}
	if _, alone := be.PlanCounts(); alone != 0 {
		t.Errorf("%d planned reads went to the server alone, want none", alone)
	}
}

// A big file whose chunks alternate between two packs (packs filled side
// by side, as one packer per core wrote them) comes back as saved, read
// pack by pack as well (no planned span: a stream per pack), with no
// more GETs than a restore without a plan makes through the windows.
func TestRestoreAlternatingBigFile(t *testing.T) {
	be, p := proxiedBackend(t)
	be.SetReadAhead(testWindow, 8<<20)
	r := repotest.New(t, be)
	ctx := context.Background()
	mtime := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	const chunks = 40
	content := make([][]byte, chunks)
	ids := make([]repo.ID, chunks)
	var root repo.ID
	// Session k saves the chunks i with i%2 == k: the file's chunks take
	// turns in the two sessions' packs.
	for session := range 2 {
		written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
			for i := session; i < chunks; i += 2 {
				id, c := saveChunks(t, r, w, uint64(300000+i), 1)
				ids[i], content[i] = id[0], c[0]
			}
			if session == 1 {
				data := bytes.Join(content, nil)
				var err error
				root, err = w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "big", Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(data)), Content: ids}}})
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if session == 1 {
			if err := written.SaveSnapshot(ctx, &repo.Snapshot{ID: "big", Time: mtime, Tree: root}); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string][]byte{"big": bytes.Join(content, nil)}
	// With one file worker, the windows' GETs depend on nothing else.
	restoreOne := func(r restore.Repository) int64 {
		be.SetReadAhead(testWindow, 8<<20)
		p.ResetCounts()
		target := t.TempDir()
		if _, err := restore.Run(ctx, r, &repo.Snapshot{ID: "big", Tree: root}, restore.Options{Target: target, Workers: 1}); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(target, "big")); err != nil || !bytes.Equal(got, want["big"]) {
			t.Errorf("big: %d bytes (%v), want the %d saved", len(got), err, len(want["big"]))
		}
		return p.Counts().Requests[http.MethodGet]
	}
	windows := restoreOne(unplanned{r})
	planned := restoreOne(r)
	if planned > windows {
		t.Errorf("restore with a plan: %d GETs, more than the %d of the windows alone", planned, windows)
	}
	if fetched, alone := be.PlanCounts(); fetched != 0 || alone != 0 {
		t.Errorf("planned spans: %d fetched, %d reads alone; want none: the file is streamed", fetched, alone)
	}
	restoreAndCompare(t, r, root, want)
}

// Small files saved beside two big files, their chunks and the big
// files' taking turns in the same packs (a backup's file workers reading
// both at once), and named so that the walk meets them among small files
// of a pack of their own, before and after the big files: the restore
// reads each data pack with one GET (the pack jobs write the small files
// too), fetches no byte twice, and every file comes back as saved.
func TestRestoreReadsMixedPacksOnce(t *testing.T) {
	be, p := proxiedBackend(t)
	be.SetReadAhead(testWindow, 8<<20)
	r := repotest.New(t, be)
	ctx := context.Background()
	mtime := time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC)
	want := map[string][]byte{}
	var nodes []repo.Node
	node := func(name string, ids []repo.ID, chunks [][]byte) {
		content := bytes.Join(chunks, nil)
		want[name] = content
		nodes = append(nodes, repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o600, MTime: mtime, Size: uint64(len(content)), Content: ids})
	}
	// A pack of small files alone: the walk meets them between the
	// small files of the mixed packs.
	if _, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		for i := range 6 {
			ids, chunks := saveChunks(t, r, w, uint64(700+i), 1+i%2)
			node(fmt.Sprintf("a-%02d-alone", i), ids, chunks)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var bigA, bigB [][]byte
	var idsA, idsB []repo.ID
	var root repo.ID
	const sessions, perPack = 3, 20
	mixedPacks := map[repo.ID]bool{}
	for session := range sessions {
		written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
			for i := range perPack {
				a, ca := saveChunks(t, r, w, uint64(400000+session*perPack+i), 1)
				b, cb := saveChunks(t, r, w, uint64(500000+session*perPack+i), 1)
				idsA, bigA = append(idsA, a...), append(bigA, ca...)
				idsB, bigB = append(idsB, b...), append(bigB, cb...)
				if i%4 == 0 {
					// Before the big files in the walk, among the
					// small files alone; after them for the last session.
					name := fmt.Sprintf("a-%02d-mixed-%d", i/4, session)
					if session == sessions-1 {
						name = fmt.Sprintf("z-mixed-%02d", i)
					}
					ids, chunks := saveChunks(t, r, w, uint64(600000+session*perPack+i), 1+i%3)
					node(name, ids, chunks)
				}
			}
			if session == sessions-1 {
				node("b-big", idsA, bigA)
				node("c-big", idsB, bigB)
				slices.SortFunc(nodes, func(x, y repo.Node) int { return strings.Compare(x.Name, y.Name) })
				var err error
				root, err = w.SaveTree(ctx, &repo.Tree{Nodes: nodes})
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if session == sessions-1 {
			if err := written.SaveSnapshot(ctx, &repo.Snapshot{ID: "mixed", Time: mtime, Tree: root}); err != nil {
				t.Fatal(err)
			}
		}
	}
	dataPacks := map[repo.ID]bool{}
	for _, n := range nodes {
		for _, id := range n.Content {
			b, _ := r.Index().Lookup(id)
			dataPacks[b.Pack] = true
			if strings.Contains(n.Name, "mixed") {
				mixedPacks[b.Pack] = true
			}
		}
	}
	if len(mixedPacks) < sessions {
		t.Fatalf("the small files beside the big ones are in %d packs, want %d or more", len(mixedPacks), sessions)
	}
	var packBytes int64
	if err := be.List(ctx, repo.PackFile, func(_ string, size int64) error { packBytes += size; return nil }); err != nil {
		t.Fatal(err)
	}
	gets := countGets(p)
	p.ResetCounts()
	restoreAndCompare(t, r, root, want)
	for pack := range dataPacks {
		if n := gets.of(pack.String()); n != 1 {
			t.Errorf("data pack %s (mixed: %v): %d GETs, want 1", pack.Short(), mixedPacks[pack], n)
		}
	}
	if got := p.Counts().BytesOut; got > packBytes {
		t.Errorf("%d bytes received, more than the %d the packs hold: some were fetched twice", got, packBytes)
	}
	if fetched, alone := be.PlanCounts(); fetched != 1 || alone != 0 {
		t.Errorf("planned spans: %d fetched, %d reads alone; want 1 (the pack of small files alone), none alone", fetched, alone)
	}
}
