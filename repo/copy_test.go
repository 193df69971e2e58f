package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// copyTime is the time of the first snapshot the copy tests make.
var copyTime = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// fileNode stores chunks as one file's content and returns its node.
func fileNode(t *testing.T, r *repo.Repository, name string, chunks ...[]byte) repo.Node {
	t.Helper()
	n := repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o644}
	for _, c := range chunks {
		n.Content = append(n.Content, saveBlob(t, r, c))
		n.Size += uint64(len(c))
	}
	return n
}

// snapshotOf saves a snapshot of /src whose root holds nodes and a folder
// "sub" holding one file of the chunk sub.
func snapshotOf(t *testing.T, r *repo.Repository, at time.Time, sub []byte, nodes ...repo.Node) *repo.Snapshot {
	t.Helper()
	ctx := context.Background()
	w := writer(t, r)
	subTree, err := w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{fileNode(t, r, "deep", sub)}})
	if err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes, repo.Node{Name: "sub", Type: repo.NodeDir, Mode: 0o755, Subtree: &subTree})
	slices.SortFunc(nodes, func(a, b repo.Node) int { return bytes.Compare([]byte(a.Name), []byte(b.Name)) })
	root, err := w.SaveTree(ctx, &repo.Tree{Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	s := &repo.Snapshot{ID: repo.NewSnapshotID(), Time: at, Hostname: "h", Paths: []string{"/src"}, Tree: root, Tags: []string{"t"}}
	if err := flush(t, r).SaveSnapshot(ctx, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// contents reads the files of a snapshot's tree, by path, whole.
func contents(t *testing.T, r *repo.Repository, tree repo.ID, dir string, out map[string][]byte) map[string][]byte {
	t.Helper()
	tr, err := r.LoadTree(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range tr.Nodes {
		if n.Subtree != nil {
			contents(t, r, *n.Subtree, dir+n.Name+"/", out)
			continue
		}
		var data []byte
		for _, id := range n.Content {
			b, err := r.LoadBlob(context.Background(), id)
			if err != nil {
				t.Fatalf("%s%s: %v", dir, n.Name, err)
			}
			data = append(data, b...)
		}
		out[dir+n.Name] = data
	}
	return out
}

// dataBlobs counts the data blobs of r's index.
func dataBlobs(t *testing.T, r *repo.Repository) int {
	t.Helper()
	n := 0
	err := r.Index().Each(func(b repo.IndexedBlob) {
		if b.Type == repo.DataBlob {
			n++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func chunk(s string) []byte { return bytes.Repeat([]byte(s), 1000) }

// Copy stores two snapshots in another repository under its own keys,
// storing each distinct content once and none that the destination had;
// the copies read back the same files, name their origin, and are skipped
// when copied again.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	srcBE, dstBE := memory.New(), memory.New()
	src, dst := initRepo(t, srcBE), initRepo(t, dstBE)
	first := snapshotOf(t, src, copyTime, chunk("d"),
		fileNode(t, src, "a", chunk("a1"), chunk("a2")), fileNode(t, src, "b", chunk("a1")))
	second := snapshotOf(t, src, copyTime.Add(time.Hour), chunk("d"),
		fileNode(t, src, "a", chunk("a1"), chunk("a2")), fileNode(t, src, "c", chunk("c1")))
	snapshotOf(t, dst, copyTime.Add(-time.Hour), chunk("a2")) // the destination has "a2" already

	src, dst = openRepo(t, srcBE), openRepo(t, dstBE)
	res, err := repo.Copy(ctx, src, dst, []*repo.Snapshot{second, first})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Copied) != 2 || len(res.Skipped) != 0 || res.Copied[0].Source.ID != first.ID {
		t.Fatalf("copied %d (first %s), skipped %d; want both, oldest first", len(res.Copied), res.Copied[0].Source.ID, len(res.Skipped))
	}
	// Stored: the data a1, d and c1, not a2, which the destination had, and
	// three trees: each snapshot's root and their one "sub".
	if res.Stats.Blobs != 6 {
		t.Errorf("copy stored %d blobs, want 6", res.Stats.Blobs)
	}
	dst = openRepo(t, dstBE)
	if n := dataBlobs(t, dst); n != 4 {
		t.Errorf("destination holds %d data blobs, want 4: each distinct content once", n)
	}
	for _, cs := range res.Copied {
		got, err := dst.LoadSnapshot(ctx, cs.Copy.ID)
		if err != nil {
			t.Fatal(err)
		}
		s := cs.Source
		wantOrigin := repo.SnapshotOrigin{Repository: src.ID(), Snapshot: s.ID, Tree: s.Tree}
		if got.ID == s.ID || got.CopiedFrom == nil || *got.CopiedFrom != wantOrigin || got.Parent != "" {
			t.Errorf("copy %s: id, origin, parent = %s, %+v, %q; want a new ID, origin %+v, no parent", s.ID, got.ID, got.CopiedFrom, got.Parent, wantOrigin)
		}
		if !got.Time.Equal(s.Time) || got.Hostname != s.Hostname || !slices.Equal(got.Paths, s.Paths) || !slices.Equal(got.Tags, s.Tags) {
			t.Errorf("copy %s: %+v, want the source's time, host, paths and tags", s.ID, got)
		}
		want := contents(t, src, s.Tree, "", map[string][]byte{})
		have := contents(t, dst, got.Tree, "", map[string][]byte{})
		if fmt.Sprint(want) != fmt.Sprint(have) {
			t.Errorf("copy %s holds other files than its source", s.ID)
		}
	}
	rep, err := dst.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
	if err != nil || !rep.OK() {
		t.Fatalf("check of the destination: %v, %+v", err, rep)
	}

	again, err := repo.Copy(ctx, src, dst, []*repo.Snapshot{first, second})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Copied) != 0 || len(again.Skipped) != 2 || again.Stats.Blobs != 0 {
		t.Errorf("copying again: copied %d, skipped %d, stored %d blobs; want all skipped, nothing stored",
			len(again.Copied), len(again.Skipped), again.Stats.Blobs)
	}
	if ids, _ := dst.ListSnapshotIDs(ctx); len(ids) != 3 {
		t.Errorf("destination has %d snapshots after copying again, want 3", len(ids))
	}

	if _, err := repo.Copy(ctx, src, openRepo(t, srcBE), []*repo.Snapshot{first}); !errors.Is(err, repo.ErrSameRepository) {
		t.Errorf("copy into itself: %v, want ErrSameRepository", err)
	}
}
