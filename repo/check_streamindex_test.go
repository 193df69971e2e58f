package repo_test

import (
	"context"
	"errors"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
)

// TestCheckStreamedIndexFindsTheSame damages a repository in every way
// the structural check looks at the index and the packs, and checks it
// twice: with the index held in memory (the default for a small one) and
// streamed through sorters that spill a run every few records. Both
// reports must be the same, word for word, the streamed check must hold
// no data blob in the index, and its runs must be gone afterwards.
func TestCheckStreamedIndexFindsTheSame(t *testing.T) {
	ctx := context.Background()
	// staleCopy adds a second place for a.txt's first blob in pack, at
	// offset (0: where it lies in its pack), in an index file of its own,
	// whose name it returns.
	staleCopy := func(t *testing.T, f *fixture, pack repo.ID, offset uint32) string {
		r := f.open(t)
		if err := r.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		b, _ := r.Index().Lookup(f.content["/src/a.txt"][0])
		b.Pack = pack
		if offset != 0 {
			b.Offset = offset
		}
		name, err := r.SaveIndexFile(ctx, []repo.IndexedBlob{b})
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	lost := repo.ID{0xee, 1, 2, 3} // a pack no repository holds
	var hidden []string            // the index files the late listing hides
	tests := []struct {
		name    string
		damage  func(t *testing.T, f *fixture)
		late    bool // the first listing of the index hides hidden
		damaged bool
		// runs is how many times the held check runs (1 if 0): which
		// place of a blob in a pack the index keeps depends on the
		// order the files load in, which the check must not.
		runs int
	}{
		{name: "sound"},
		{name: "data pack missing", damaged: true, damage: func(t *testing.T, f *fixture) {
			if err := f.be.Remove(ctx, f.pack("bc")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "pack of trees missing", damaged: true, damage: func(t *testing.T, f *fixture) {
			if err := f.be.Remove(ctx, f.pack("meta")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "data pack cut in half", damaged: true, damage: func(t *testing.T, f *fixture) {
			data := load(t, f.be, f.pack("bc"))
			store(t, f.be, f.pack("bc"), data[:len(data)/2])
		}},
		{name: "index file damaged", damaged: true, damage: func(t *testing.T, f *fixture) {
			name, _ := indexFileOf(t, f.open(t), f.be, f.content["/src/dir/c.txt"][0])
			h := repo.Handle{Type: repo.IndexFile, Name: name}
			orig := load(t, f.be, h)
			store(t, f.be, h, flipped(orig, len(orig)/2))
		}},
		{name: "index file lost", damaged: true, damage: func(t *testing.T, f *fixture) {
			name, _ := indexFileOf(t, f.open(t), f.be, f.content["/src/dir/c.txt"][0])
			if err := f.be.Remove(ctx, repo.Handle{Type: repo.IndexFile, Name: name}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "stale place in a missing pack", damaged: true, damage: func(t *testing.T, f *fixture) {
			staleCopy(t, f, lost, 0)
		}},
		{name: "stale place beyond a pack's end", damaged: true, damage: func(t *testing.T, f *fixture) {
			staleCopy(t, f, f.packs["bc"], 1<<30)
		}},
		{name: "second place in the same pack beyond its end", damaged: true, runs: 8, damage: func(t *testing.T, f *fixture) {
			staleCopy(t, f, f.packs["a"], 1<<30)
		}},
		{name: "second place in the same pack within it", runs: 8, damage: func(t *testing.T, f *fixture) {
			staleCopy(t, f, f.packs["a"], 1)
		}},
		{name: "no place whole", damaged: true, damage: func(t *testing.T, f *fixture) {
			staleCopy(t, f, lost, 0)
			if err := f.be.Remove(ctx, f.pack("a")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "index file listed late with a stale place of a blob listed whole", late: true, damaged: true, damage: func(t *testing.T, f *fixture) {
			// c.txt's file too, so that a blob is missing at first.
			bcIndex, _ := indexFileOf(t, f.open(t), f.be, f.content["/src/dir/c.txt"][0])
			hidden = []string{bcIndex, staleCopy(t, f, lost, 0)}
		}},
		{name: "index file listed late with a blob listed before", late: true, damage: func(t *testing.T, f *fixture) {
			bcIndex, _ := indexFileOf(t, f.open(t), f.be, f.content["/src/dir/c.txt"][0])
			r := f.open(t)
			if err := r.LoadIndex(ctx); err != nil {
				t.Fatal(err)
			}
			a, _ := r.Index().Lookup(f.content["/src/a.txt"][0])
			c, _ := r.Index().Lookup(f.content["/src/dir/c.txt"][0])
			extra, err := r.SaveIndexFile(ctx, []repo.IndexedBlob{a, c})
			if err != nil {
				t.Fatal(err)
			}
			hidden = []string{bcIndex, extra}
		}},
		{name: "index file listed late", late: true, damage: func(t *testing.T, f *fixture) {
			backupInto(t, f.be, 9)
			all := names(t, f.be, repo.IndexFile)
			hidden = all[len(all)-1:]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.damage != nil {
				tt.damage(t, f)
			}
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			backend := func() repo.Backend {
				if tt.late {
					return &lateIndex{Backend: f.be, hidden: hidden}
				}
				return f.be
			}
			var rh *repo.Repository
			var held *repo.CheckReport
			for run := range max(tt.runs, 1) {
				r := openNoIndex(t, backend())
				rep, err := r.Check(ctx, repo.CheckOptions{})
				if err != nil {
					t.Fatalf("check, index held: %v", err)
				}
				if run > 0 && !reflect.DeepEqual(rep, held) {
					t.Fatalf("index held, check %d finds %+v%s\ncheck 1 found %+v%s", run+1, *rep, problemList(rep), *held, problemList(held))
				}
				rh, held = r, rep
			}
			rs := openNoIndex(t, backend())
			streamed, err := rs.CheckStreamFrom(ctx, repo.CheckOptions{}, 0, 100)
			if err != nil {
				t.Fatalf("check, index streamed: %v", err)
			}
			if tt.damaged == streamed.OK() {
				t.Errorf("streamed: problems%s; want some: %v", problemList(streamed), tt.damaged)
			}
			if !reflect.DeepEqual(streamed, held) {
				t.Errorf("streamed, check finds %+v%s\nheld, %+v%s", *streamed, problemList(streamed), *held, problemList(held))
			}
			if n := rh.Index().Len(); n != held.Blobs {
				t.Errorf("index held: %d blobs in memory of %d, want all", n, held.Blobs)
			}
			trees := 0
			if err := rh.Index().Each(func(b repo.IndexedBlob) {
				if b.Type == repo.TreeBlob {
					trees++
				}
			}); err != nil {
				t.Fatal(err)
			}
			// The data places of the files read again before a blob is
			// reported missing are joined with the stream, not indexed.
			if n := rs.Index().Len(); n != trees {
				t.Errorf("index streamed: %d blobs in memory of %d, want the %d trees alone", n, streamed.Blobs, trees)
			}
			if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
				t.Errorf("the streamed check left %d files in the temporary folder (%v)", len(left), err)
			}
		})
	}
}

// TestCheckStreamsOnlyLargeIndexes: a small index is held (the default
// threshold is above it), and check --read-data holds the index whatever
// its size, as it matches every pack's blobs with it.
func TestCheckStreamsOnlyLargeIndexes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := openNoIndex(t, f.be)
	rep, err := r.Check(ctx, repo.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Blobs >= repo.CheckStreamFromDefault || r.Index().Len() != rep.Blobs {
		t.Errorf("small index (%d blobs): %d held, want all", rep.Blobs, r.Index().Len())
	}
	r = openNoIndex(t, f.be)
	rep, err = r.CheckStreamFrom(ctx, repo.CheckOptions{ReadDataFraction: 1}, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.PacksRead != len(f.packs) || r.Index().Len() != rep.Blobs {
		t.Errorf("check --read-data: %d packs read, %d of %d blobs held, problems%s; want every pack read and every blob held",
			rep.PacksRead, r.Index().Len(), rep.Blobs, problemList(rep))
	}
}

// cancelAtPack cancels a context at the first read of a pack: for a
// structural check, when the walk loads its first tree, after the index
// entries were sorted into runs. It counts the files in folder tmp then.
type cancelAtPack struct {
	repo.Backend
	cancel context.CancelFunc
	tmp    string
	runs   int // the files in tmp at the cancel
}

func (c *cancelAtPack) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile && ctx.Err() == nil {
		if files, err := os.ReadDir(c.tmp); err == nil {
			c.runs = len(files)
		}
		c.cancel()
	}
	return c.Backend.Load(ctx, h, offset, length)
}

func (c *cancelAtPack) Unwrap() repo.Backend { return c.Backend }

// A streamed check cancelled in its walk returns the context's error and
// leaves none of its runs in the temporary folder.
func TestCheckStreamedIndexCancelled(t *testing.T) {
	f := newFixture(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	be := &cancelAtPack{Backend: f.be, cancel: cancel, tmp: tmp}
	r := openNoIndex(t, be)
	if _, err := r.CheckStreamFrom(ctx, repo.CheckOptions{}, 0, 100); !errors.Is(err, context.Canceled) {
		t.Fatalf("check cancelled in its walk: %v, want context.Canceled", err)
	}
	if be.runs == 0 {
		t.Fatal("no runs in the temporary folder when the check was cancelled, want the index entries' runs")
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Errorf("the cancelled check left %d files in the temporary folder (%v)", len(left), err)
	}
}

// checkBoth checks the repository in be with the index held and with it
// streamed, and fails unless both reports are the same, word for word.
func checkBoth(t *testing.T, be repo.Backend) *repo.CheckReport {
	t.Helper()
	ctx := context.Background()
	t.Setenv("TMPDIR", t.TempDir())
	held, err := openNoIndex(t, be).Check(ctx, repo.CheckOptions{})
	if err != nil {
		t.Fatalf("check, index held: %v", err)
	}
	streamed, err := openNoIndex(t, be).CheckStreamFrom(ctx, repo.CheckOptions{}, 0, 100)
	if err != nil {
		t.Fatalf("check, index streamed: %v", err)
	}
	if !reflect.DeepEqual(streamed, held) {
		t.Errorf("streamed, check finds %+v%s\nheld, %+v%s", *streamed, problemList(streamed), *held, problemList(held))
	}
	return held
}

// A folder whose subtree is a data blob: the held index loads it as a
// tree, which does not decode; the streamed check finds it among the data
// entries and reports the same, not a tree missing from the index.
func TestCheckStreamedIndexDataBlobAsSubtree(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.open(t)
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	data := f.content["/src/a.txt"][0]
	tree, err := writer(t, r).SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "d", Type: repo.NodeDir, Mode: 0o755, MTime: mtime, Subtree: &data}}})
	if err != nil {
		t.Fatal(err)
	}
	snap := &repo.Snapshot{ID: repo.NewSnapshotID(), Time: mtime, Hostname: "h", Username: "u", Paths: []string{"/x"}, Tree: tree, ProgramVersion: "test"}
	if err := flush(t, r).SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	rep := checkBoth(t, f.be)
	obj := "tree blob " + data.String()
	if len(rep.Problems) != 1 || rep.Problems[0].Object != obj || rep.Trees != 5 ||
		!slices.ContainsFunc(rep.Problems[0].Affected, func(a repo.Affected) bool { return a.Path == "/d" }) {
		t.Errorf("%d trees, problems%s; want 5 trees (the fixture's three, the new root and the data blob loaded as one) and only %s, breaking /d", rep.Trees, problemList(rep), obj)
	}
}
