package repo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// Diff reports every kind of change in path order, with the entries below
// added and removed folders, and never loads a subtree both sides share:
// the shared one here is not even stored.
func TestDiff(t *testing.T) {
	r := initRepo(t, memory.New())
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	file := func(name, content string, mtime time.Time) repo.Node {
		return repo.Node{Name: name, Type: repo.NodeFile, Mode: 0o644, MTime: mtime, Size: uint64(len(content)),
			Content: []repo.ID{saveBlob(t, r, []byte(content))}}
	}
	dir := func(name string, nodes ...repo.Node) repo.Node {
		id := saveTree(t, r, &repo.Tree{Nodes: nodes})
		return repo.Node{Name: name, Type: repo.NodeDir, Mode: 0o755, MTime: t1, Subtree: &id}
	}
	var unstored repo.ID
	copy(unstored[:], "a tree no one stored, 32 bytes..")
	shared := repo.Node{Name: "shared", Type: repo.NodeDir, Mode: 0o755, MTime: t1, Subtree: &unstored}
	chmod := file("mode", "same", t1)
	chmod.Mode = 0o600
	old := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{
		file("content", "old data", t1),
		dir("gone", file("f", "12345", t1), dir("sub", file("g", "1", t1))),
		{Name: "link", Type: repo.NodeSymlink, Mode: 0o777, MTime: t1, LinkTarget: "one"},
		file("mode", "same", t1),
		shared,
		file("touched", "same", t1),
		dir("was-dir", file("inside", "abc", t1)),
	}})
	new := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{
		file("added", "new!", t1),
		file("content", "new data, longer", t1),
		{Name: "link", Type: repo.NodeSymlink, Mode: 0o777, MTime: t1, LinkTarget: "two"},
		chmod,
		shared,
		file("touched", "same", t1.Add(time.Second)),
		file("was-dir", "now a file", t1),
	}})
	flush(t, r)

	var got []string
	stats, err := r.Diff(context.Background(), old, new, func(c *repo.Change) error {
		got = append(got, fmt.Sprintf("%c %s", c.Kind, c.Path))
		return nil
	})
	if err != nil {
		t.Fatalf("diff: %v", err)
	}
	want := []string{
		"+ /added",
		"M /content",
		"- /gone",
		"- /gone/f",
		"- /gone/sub",
		"- /gone/sub/g",
		"M /link",
		"U /mode",
		"U /touched",
		"T /was-dir",
		"- /was-dir/inside",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantStats := repo.DiffStats{
		ChangedFiles: 1,
		Added:        repo.DiffCounts{Files: 2, Bytes: 4 + 16 + 10},                       // added, content's new data, was-dir's file
		Removed:      repo.DiffCounts{Files: 3, Dirs: 3, Others: 0, Bytes: 8 + 5 + 1 + 3}, // content's old data, gone/f, gone/sub/g, was-dir/inside
	}
	if stats != wantStats {
		t.Errorf("stats %+v, want %+v", stats, wantStats)
	}

	// Reversed, the same changes with the sides swapped.
	got = nil
	if _, err := r.Diff(context.Background(), new, old, func(c *repo.Change) error {
		got = append(got, fmt.Sprintf("%c %s", c.Kind, c.Path))
		return nil
	}); err != nil {
		t.Fatalf("diff reversed: %v", err)
	}
	if got[0] != "- /added" || got[2] != "+ /gone" || got[len(got)-1] != "+ /was-dir/inside" {
		t.Errorf("reversed changes: %q", got)
	}

	// A tree that differs and cannot be loaded fails the diff, naming it.
	other := saveTree(t, r, &repo.Tree{Nodes: []repo.Node{{Name: "shared", Type: repo.NodeDir, Mode: 0o755, MTime: t1, Subtree: &old}}})
	flush(t, r)
	_, err = r.Diff(context.Background(), new, other, func(*repo.Change) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "folder /shared") {
		t.Errorf("diff with a missing tree: %v", err)
	}
	// An error of the callback ends the diff with it.
	stop := errors.New("stop")
	if _, err := r.Diff(context.Background(), old, new, func(*repo.Change) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("callback error: %v", err)
	}
}

// NodeAt finds an entry by its path, and says when a path is not there.
func TestNodeAt(t *testing.T) {
	f := newWalkFixture(t)
	tests := []struct {
		path, wantType string
	}{
		{"/", repo.NodeDir}, {"/a", repo.NodeDir}, {"/a/y/z", repo.NodeFile}, {"/b", repo.NodeSymlink},
		{"/a/nope", ""}, {"/d/below-a-file", ""}, {"/c/x", ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			n, err := f.r.NodeAt(context.Background(), f.root, tc.path)
			switch {
			case tc.wantType == "" && !errors.Is(err, repo.ErrPathNotFound):
				t.Errorf("err %v, want ErrPathNotFound", err)
			case tc.wantType != "" && (err != nil || n.Type != tc.wantType):
				t.Errorf("node %+v, err %v; want a %s", n, err, tc.wantType)
			}
		})
	}
}
