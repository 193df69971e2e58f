package repo_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// treeBytesFile holds the exact bytes of everyTree's blob, as docs/FORMAT.md
// defines them ("The exact bytes of a tree"). Rewrite it (only for a
// deliberate format change) with
//
//	go test ./repo -run TestTreeBytes -update
const treeBytesFile = "../testdata/tree/every-field.json"

// everyTree holds every field a node has, each value form the format
// spells out, and strings with every character that is escaped.
func everyTree() *repo.Tree {
	id := func(b byte) repo.ID {
		var id repo.ID
		for i := range id {
			id[i] = b + byte(i)
		}
		return id
	}
	sub := id(0xa0)
	india := time.FixedZone("", 5*3600+30*60)
	west := time.FixedZone("", -(3*3600 + 15*60))
	return &repo.Tree{Nodes: []repo.Node{
		{ // only what is never omitted: zero numbers and the zero time stay
			Name: "", Type: repo.NodeFIFO,
		},
		{
			Name: "a dir \u00e9\u6f22\U0001F600", Type: repo.NodeDir, Mode: 0o2755, UID: math.MaxUint32, GID: 0,
			User: "root", Group: "wheel",
			MTime: time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC),
			CTime: time.Date(2025, 6, 1, 17, 30, 0, 500000000, india),
			Inode: 1, Device: 2, Links: 3, Subtree: &sub,
		},
		{
			Name: "b file", Type: repo.NodeFile, Mode: 0o644, UID: 1000, GID: 1000,
			User: "user \xff", Group: "<&>",
			Size:  math.MaxUint64,
			MTime: time.Date(9999, 12, 31, 23, 59, 59, 999999999, west),
			CTime: time.Date(1969, 7, 20, 20, 17, 40, 120000000, time.UTC),
			Inode: math.MaxUint64, Device: 66306, Links: 1,
			Content: []repo.ID{id(0), id(0x40)},
			Xattrs: []repo.Xattr{
				{Name: "security.selinux", Value: []byte("unconfined_u:object_r\x00")},
				{Name: "user.empty", Value: []byte{}},
				{Name: "user.nil", Value: nil},
				{Name: "user.\u2028", Value: []byte{0xfb, 0xff, 0xbf}},
			},
		},
		{
			Name: "c link", Type: repo.NodeSymlink, Mode: 0o777,
			LinkTarget: "\"\\/\b\f\n\r\t\x00\x01\x1f\x7f <>& \u2028\u2029 \u00e9\U0001F600 \ufffd",
			MTime:      time.Date(2000, 1, 1, 0, 0, 0, 1, time.UTC),
			CTime:      time.Date(2000, 1, 1, 0, 0, 0, 0, india),
		},
		{
			Name: "d bad \xff\xfe name", Type: repo.NodeSymlink, LinkTarget: "bad \xc3 target",
			MTime: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), CTime: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		},
		{
			Name: "e dev", Type: repo.NodeCharDev, Mode: 0o620, Rdev: 0x8801,
			Content: []repo.ID{}, Xattrs: []repo.Xattr{},
			MTime: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), CTime: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		},
	}}
}

// TestTreeBytes stores a tree with every field kind and compares its blob
// byte for byte with the golden file, then reads it back: the tree encoding
// decides tree IDs and split points, so its bytes must never change by
// accident (a new Go, a codec change).
func TestTreeBytes(t *testing.T) {
	ctx := context.Background()
	r := initRepo(t, memory.New())
	tree := everyTree()
	id, err := writer(t, r).SaveTree(ctx, tree)
	if err != nil {
		t.Fatal(err)
	}
	flush(t, r)
	got, err := r.LoadBlob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(treeBytesFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filepath.FromSlash(treeBytesFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("tree bytes differ from %s:\ngot  %s\nwant %s", treeBytesFile, got, want)
	}

	back, err := r.LoadTree(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// What the encoding does not keep: invalid UTF-8 in a string that has
	// no _raw twin becomes U+FFFD, and an empty list is no list.
	wantBack := everyTree()
	wantBack.Nodes[2].User = "user \ufffd"
	wantBack.Nodes[5].Content, wantBack.Nodes[5].Xattrs = nil, nil
	if len(back.Nodes) != len(wantBack.Nodes) {
		t.Fatalf("read back %d nodes, want %d", len(back.Nodes), len(wantBack.Nodes))
	}
	for i := range back.Nodes {
		g, w := back.Nodes[i], wantBack.Nodes[i]
		for _, tm := range []struct {
			name string
			got  time.Time
			want time.Time
		}{{"mtime", g.MTime, w.MTime}, {"ctime", g.CTime, w.CTime}} {
			_, gotOffset := tm.got.Zone()
			_, wantOffset := tm.want.Zone()
			if !tm.got.Equal(tm.want) || gotOffset != wantOffset {
				t.Errorf("node %d: %s read back as %v, want %v", i, tm.name, tm.got, tm.want)
			}
		}
		g.MTime, g.CTime, w.MTime, w.CTime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if !nodesEqual(g, w) {
			t.Errorf("node %d read back as\n%+v\nwant\n%+v", i, g, w)
		}
	}
}

func nodesEqual(a, b repo.Node) bool {
	if a.Name != b.Name || a.Type != b.Type || a.Mode != b.Mode || a.UID != b.UID || a.GID != b.GID ||
		a.User != b.User || a.Group != b.Group || a.Size != b.Size || a.Inode != b.Inode ||
		a.Device != b.Device || a.Links != b.Links || a.Rdev != b.Rdev || a.LinkTarget != b.LinkTarget ||
		(a.Subtree == nil) != (b.Subtree == nil) || (a.Subtree != nil && *a.Subtree != *b.Subtree) ||
		(a.Content == nil) != (b.Content == nil) || len(a.Content) != len(b.Content) ||
		(a.Xattrs == nil) != (b.Xattrs == nil) || len(a.Xattrs) != len(b.Xattrs) {
		return false
	}
	for i := range a.Content {
		if a.Content[i] != b.Content[i] {
			return false
		}
	}
	for i := range a.Xattrs {
		x, y := a.Xattrs[i], b.Xattrs[i]
		if x.Name != y.Name || !bytes.Equal(x.Value, y.Value) || (x.Value == nil) != (y.Value == nil) {
			return false
		}
	}
	return true
}
