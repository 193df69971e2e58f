package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
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

// A restore from S3 reads each data pack of files read as one part with
// one GET, though the read-ahead's windows are a small part of a pack and
// the file workers read several files of one pack side by side; every
// file comes back as saved, a big file's (unplanned, through the windows)
// too, and no planned read goes to the server alone.
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
	dataPacks := map[repo.ID]bool{}
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
		if n.Name == "big" {
			continue
		}
		for _, id := range n.Content {
			b, _ := r.Index().Lookup(id)
			dataPacks[b.Pack] = true
		}
	}
	if len(dataPacks) < 2 {
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
	if fetched, alone := be.PlanCounts(); fetched != len(dataPacks) || alone != 0 {
		t.Errorf("planned spans: %d fetched, %d reads alone; want %d (a pack each) fetched, none alone", fetched, alone, len(dataPacks))
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
