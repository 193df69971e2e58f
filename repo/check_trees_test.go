package repo_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// sharedTreesRepo makes a repository of two snapshots that share 40
// folders of one file each; the second has a folder more. With missing,
// the file of folder d07 names a blob no index lists. It returns the
// snapshots.
func sharedTreesRepo(t *testing.T, be repo.Backend, missing bool) []*repo.Snapshot {
	t.Helper()
	ctx := context.Background()
	r := initRepo(t, be)
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	saveTree := func(nodes []repo.Node) repo.ID {
		id, err := writer(t, r).SaveTree(ctx, &repo.Tree{Nodes: nodes})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	folder := func(name string, i int) repo.Node {
		content := []repo.ID{saveBlob(t, r, []byte(fmt.Sprintf("file %d\n", i)))}
		if missing && name == "d07" {
			content = append(content, repo.ID{7: 7})
		}
		sub := saveTree([]repo.Node{{Name: "f", Type: repo.NodeFile, Mode: 0o644, MTime: mtime, Content: content}})
		return repo.Node{Name: name, Type: repo.NodeDir, Mode: 0o755, MTime: mtime, Subtree: &sub}
	}
	var shared []repo.Node
	for i := range 40 {
		shared = append(shared, folder(fmt.Sprintf("d%02d", i), i))
	}
	roots := []repo.ID{saveTree(shared), saveTree(append(shared[:40:40], folder("extra", 40)))}
	written := flush(t, r)
	var snaps []*repo.Snapshot
	for i, root := range roots {
		s := &repo.Snapshot{ID: repo.NewSnapshotID(), Time: mtime.Add(time.Duration(i) * time.Hour), Hostname: "host",
			Paths: []string{"/"}, Tree: root, ProgramVersion: "test"}
		if err := written.SaveSnapshot(ctx, s); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	return snaps
}

// check walks each distinct tree once with the trees walked sorted on
// disk (sorters of 64 bytes here, so that they spill and merge runs), and
// keeps no memo of trees in memory unless a tree breaks a snapshot; then
// it names every path the damage breaks, in every snapshot.
func TestCheckTreesSortedOnDisk(t *testing.T) {
	for _, missing := range []bool{false, true} {
		t.Run(fmt.Sprint("missing blob ", missing), func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			be := memory.New()
			snaps := sharedTreesRepo(t, be, missing)
			rep, memo, err := openRepo(t, be).CheckMemo(context.Background(), repo.CheckOptions{}, 64)
			if err != nil {
				t.Fatalf("check: %v", err)
			}
			// 40 shared folders, one more, and the two roots.
			if rep.Trees != 43 || rep.Snapshots != 2 {
				t.Errorf("check counted %d trees of %d snapshots, want 43 of 2", rep.Trees, rep.Snapshots)
			}
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Errorf("check left %d sort files behind", len(left))
			}
			if !missing {
				if !rep.OK() || memo != 0 {
					t.Errorf("a sound repository: memo of %d trees, problems:%s", memo, problemList(rep))
				}
				return
			}
			if memo == 0 {
				t.Error("damage found, but no depth-first walk named its paths")
			}
			p := findProblem(rep, "blob "+repo.ID{7: 7}.String())
			if len(rep.Problems) != 1 || p == nil || p.Total != 2 {
				t.Fatalf("want one problem, the missing blob, affecting 2 paths:%s", problemList(rep))
			}
			for _, s := range snaps {
				if !affects(p, s.ID, "/d07/f") {
					t.Errorf("missing blob: affected %v, want /d07/f of snapshot %s", p.Affected, s.ID)
				}
			}
		})
	}
}
