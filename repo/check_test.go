package repo_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

func TestCheckSoundRepository(t *testing.T) {
	f := newFixture(t)
	for _, fraction := range []float64{0, 0.5, 1} {
		t.Run(fmt.Sprint("read data ", fraction), func(t *testing.T) {
			rep := f.check(t, fraction)
			if !rep.OK() {
				t.Fatalf("a sound repository has problems:%s", problemList(rep))
			}
			// 4 data blobs and 3 trees.
			want := repo.CheckReport{IndexFiles: 3, Packs: 3, Blobs: 7, Snapshots: 1, Trees: 3}
			if rep.IndexFiles != want.IndexFiles || rep.Packs != want.Packs || rep.Blobs != want.Blobs ||
				rep.Snapshots != want.Snapshots || rep.Trees != want.Trees || rep.UnindexedPacks != 0 {
				t.Errorf("report %+v, want counts %+v", rep, want)
			}
			if fraction == 0 && rep.PacksRead != 0 {
				t.Errorf("structural check read %d packs", rep.PacksRead)
			}
			if fraction == 1 && (rep.PacksRead != 3 || rep.BytesRead == 0) {
				t.Errorf("check --read-data read %d packs, %d bytes; want all 3", rep.PacksRead, rep.BytesRead)
			}
		})
	}
	t.Run("reads the whole snapshot back", func(t *testing.T) {
		r := f.open(t)
		if err := r.LoadIndex(context.Background()); err != nil {
			t.Fatal(err)
		}
		for path, ids := range f.content {
			var got []byte
			for _, id := range ids {
				b, err := r.LoadBlob(context.Background(), id)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				got = append(got, b...)
			}
			if string(got) != string(f.data[path]) {
				t.Errorf("%s reads back differently", path)
			}
		}
	})
}

// headerLen is the length of an object's first line, newline included.
func headerLen(data []byte) int { return strings.IndexByte(string(data), '\n') + 1 }

// Every byte of the config matters: a change makes Open fail with a clear
// error, never a panic or a garbled repository.
func TestTamperConfig(t *testing.T) {
	f := newFixture(t)
	h := repo.Handle{Type: repo.ConfigFile, Name: "config"}
	orig := load(t, f.be, h)
	defer store(t, f.be, h, orig)
	for at := range orig {
		store(t, f.be, h, flipped(orig, at))
		r, err := repo.Open(context.Background(), f.be, repo.OpenOptions{Password: pw(password)})
		if err == nil {
			r.Close()
			t.Errorf("byte %d of %d changed: open succeeded", at, len(orig))
			continue
		}
		if !isAny(err, repo.ErrIntegrity, repo.ErrUnsupportedVersion) || !strings.Contains(err.Error(), "config") {
			t.Errorf("byte %d of %d changed: open: %v; want an integrity error naming the config", at, len(orig), err)
		}
	}
}

// A changed key file cannot be told from a wrong password (both fail
// authentication), but it never opens the repository.
func TestTamperKeyFile(t *testing.T) {
	f := newFixture(t)
	keys := names(t, f.be, repo.KeyFile)
	if len(keys) != 1 {
		t.Fatalf("key files %v", keys)
	}
	h := repo.Handle{Type: repo.KeyFile, Name: keys[0]}
	orig := load(t, f.be, h)
	defer store(t, f.be, h, orig)
	for at := range orig {
		store(t, f.be, h, flipped(orig, at))
		r, err := repo.Open(context.Background(), f.be, repo.OpenOptions{Password: pw(password)})
		if err == nil {
			r.Close()
			t.Errorf("byte %d of %d changed: open succeeded", at, len(orig))
			continue
		}
		if !isAny(err, repo.ErrWrongPassword, repo.ErrIntegrity, repo.ErrUnsupportedVersion) {
			t.Errorf("byte %d of %d changed: open: %v; want wrong password or an integrity error", at, len(orig), err)
		}
	}
}

func TestTamperIndexFile(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, name := range names(t, f.be, repo.IndexFile) {
		h := repo.Handle{Type: repo.IndexFile, Name: name}
		orig := load(t, f.be, h)
		positions := append(spread(len(orig), 16), headerLen(orig)-1, headerLen(orig))
		for _, at := range positions {
			t.Run(fmt.Sprintf("%s byte %d", name[:8], at), func(t *testing.T) {
				store(t, f.be, h, flipped(orig, at))
				defer store(t, f.be, h, orig)
				// The damaged file is skipped and named (repair.go).
				r := f.open(t)
				if err := r.LoadIndex(ctx); err != nil {
					t.Errorf("load index: %v, want the damaged file skipped", err)
				}
				if bad, _ := r.IndexDamage(); len(bad) != 1 || bad[0].Name != name || !errors.Is(bad[0].Err, repo.ErrIntegrity) {
					t.Errorf("index damage %v, want %s with ErrIntegrity", bad, name[:8])
				}
				rep := f.check(t, 0)
				if p := findProblem(rep, "index "+name); p == nil {
					t.Errorf("check does not report index %s:%s", name, problemList(rep))
				}
			})
		}
	}
}

// packParts returns where a pack's sealed header starts and the trailer.
func packParts(t *testing.T, data []byte) (headerAt, trailerAt int) {
	t.Helper()
	trailerAt = len(data) - 8
	if string(data[trailerAt+4:trailerAt+7]) != "NJP" {
		t.Fatalf("pack has no trailer magic")
	}
	return trailerAt - int(binary.LittleEndian.Uint32(data[trailerAt:])), trailerAt
}

func TestTamperPack(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	h := f.pack("bc")
	orig := load(t, f.be, h)
	headerAt, trailerAt := packParts(t, orig)
	r := f.open(t)
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	b1, _ := r.Index().Lookup(f.content["/src/dir/b.bin"][0])
	inB1 := func(k int) int { return int(b1.Offset) + k*(int(b1.Length)-1)/4 }

	tests := []struct {
		name      string
		positions []int
		dataBlob  bool // the change is inside b.bin's first blob
	}{
		{"data region", []int{inB1(0), inB1(1), inB1(2), inB1(3), inB1(4)}, true},
		{"pack header", []int{headerAt, headerAt + 20, (headerAt + trailerAt) / 2, trailerAt - 1}, false},
		{"pack trailer", []int{trailerAt, trailerAt + 1, trailerAt + 3, trailerAt + 4, trailerAt + 6, trailerAt + 7}, false},
	}
	for _, tt := range tests {
		for _, at := range tt.positions {
			t.Run(fmt.Sprintf("%s byte %d", tt.name, at), func(t *testing.T) {
				store(t, f.be, h, flipped(orig, at))
				defer store(t, f.be, h, orig)

				rep := f.check(t, 1)
				var found *repo.Problem
				for _, obj := range []string{"pack " + f.packs["bc"].String(), "data blob " + b1.ID.String()} {
					if p := findProblem(rep, obj); p != nil {
						found = p
					}
				}
				if found == nil {
					t.Fatalf("check --read-data names neither pack nor blob:%s", problemList(rep))
				}
				if !affectedPathIn(rep, f.snap.ID, "/src/dir/b.bin") {
					t.Errorf("check --read-data does not name /src/dir/b.bin of snapshot %s as affected:%s", f.snap.ID, problemList(rep))
				}

				o := f.open(t)
				if err := o.LoadIndex(ctx); err != nil {
					t.Fatal(err)
				}
				if tt.dataBlob {
					if _, err := o.LoadBlob(ctx, b1.ID); !errors.Is(err, repo.ErrIntegrity) {
						t.Errorf("LoadBlob of the damaged blob: %v, want ErrIntegrity", err)
					}
				} else {
					if _, err := o.ReadPackHeader(ctx, f.packs["bc"], int64(len(orig))); !isAny(err, repo.ErrIntegrity, repo.ErrUnsupportedVersion) {
						t.Errorf("ReadPackHeader: %v, want ErrIntegrity", err)
					}
				}
			})
		}
	}
}

// affectedPathIn reports whether any problem names path of snapshot.
func affectedPathIn(rep *repo.CheckReport, snapshot, path string) bool {
	for i := range rep.Problems {
		if affects(&rep.Problems[i], snapshot, path) {
			return true
		}
	}
	return false
}

// check --read-data names the paths a damaged blob breaks, and not the
// files in the same pack that are still whole (restore can read them).
func TestCheckReadDataNamesOnlyDamagedFiles(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	h := f.pack("bc")
	orig := load(t, f.be, h)
	r := f.open(t)
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	b1, _ := r.Index().Lookup(f.content["/src/dir/b.bin"][0])
	store(t, f.be, h, flipped(orig, int(b1.Offset+b1.Length/2)))

	if _, err := r.LoadBlob(ctx, f.content["/src/dir/c.txt"][0]); err != nil {
		t.Fatalf("c.txt, in the same pack, is whole and readable: %v", err)
	}
	rep := f.check(t, 1)
	paths := affectedPaths(rep)
	if !paths["/src/dir/b.bin"] {
		t.Errorf("b.bin is not reported:%s", problemList(rep))
	}
	if paths["/src/dir/c.txt"] {
		t.Errorf("c.txt is whole but reported as affected:%s", problemList(rep))
	}
}

func TestTamperSnapshot(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	h := repo.Handle{Type: repo.SnapshotFile, Name: f.snap.ID}
	orig := load(t, f.be, h)
	for _, at := range append(spread(len(orig), 24), headerLen(orig)-2) {
		t.Run(fmt.Sprint("byte ", at), func(t *testing.T) {
			store(t, f.be, h, flipped(orig, at))
			defer store(t, f.be, h, orig)
			if _, err := f.open(t).LoadSnapshot(ctx, f.snap.ID); !isAny(err, repo.ErrIntegrity, repo.ErrUnsupportedVersion) {
				t.Errorf("load snapshot: %v, want ErrIntegrity", err)
			}
			rep := f.check(t, 0)
			if findProblem(rep, "snapshot "+f.snap.ID) == nil {
				t.Errorf("check does not report the snapshot:%s", problemList(rep))
			}
		})
	}
}

// A missing pack is found by the structural check, which names each blob
// it held and the paths of the snapshots that need them.
func TestCheckMissingPack(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		pack  string
		paths map[string][]string // blob's file -> affected paths
	}{
		{"bc", map[string][]string{"/src/dir/b.bin": {"/src/dir/b.bin"}, "/src/dir/c.txt": {"/src/dir/c.txt"}}},
		{"a", map[string][]string{"/src/a.txt": {"/src/a.txt"}}},
	}
	for _, tt := range tests {
		t.Run(tt.pack, func(t *testing.T) {
			f := newFixture(t)
			if err := f.be.Remove(ctx, f.pack(tt.pack)); err != nil {
				t.Fatal(err)
			}
			rep := f.check(t, 0)
			if rep.OK() {
				t.Fatal("check finds nothing wrong with a pack missing")
			}
			for file, paths := range tt.paths {
				for _, id := range f.content[file] {
					p := findProblem(rep, "data blob "+id.String())
					if p == nil {
						t.Errorf("blob %s of %s is not reported:%s", id.Short(), file, problemList(rep))
						continue
					}
					if !strings.Contains(p.Error, f.packs[tt.pack].String()) {
						t.Errorf("problem %q does not name the missing pack", p.Error)
					}
					for _, path := range paths {
						if !affects(p, f.snap.ID, path) {
							t.Errorf("blob %s: affected %v, want %s of snapshot %s", id.Short(), p.Affected, path, f.snap.ID)
						}
					}
				}
			}
			if paths := affectedPaths(rep); paths["/src/dir/link"] || (tt.pack == "a" && paths["/src/dir/b.bin"]) {
				t.Errorf("check names whole paths as affected: %v", paths)
			}
		})
	}
	t.Run("meta", func(t *testing.T) {
		f := newFixture(t)
		if err := f.be.Remove(ctx, f.pack("meta")); err != nil {
			t.Fatal(err)
		}
		rep := f.check(t, 0)
		p := findProblem(rep, "tree blob "+f.root.String())
		if p == nil || !affects(p, f.snap.ID, "/") {
			t.Errorf("missing root tree not reported as affecting / of the snapshot:%s", problemList(rep))
		}
	})
}

// A reader refuses every object written by a newer format version, with
// ErrUnsupportedVersion rather than a claim of damage.
func TestNewerFormatVersion(t *testing.T) {
	ctx := context.Background()
	bump := func(data []byte) []byte {
		line := headerLen(data)
		head := strings.Replace(string(data[:line]), fmt.Sprintf(" %d", repo.FormatVersion), fmt.Sprintf(" %d", repo.FormatVersion+1), 1)
		return append([]byte(head), data[line:]...)
	}
	t.Run("config", func(t *testing.T) {
		f := newFixture(t)
		h := repo.Handle{Type: repo.ConfigFile, Name: "config"}
		store(t, f.be, h, bump(load(t, f.be, h)))
		if _, err := repo.Open(ctx, f.be, repo.OpenOptions{Password: pw(password)}); !errors.Is(err, repo.ErrUnsupportedVersion) {
			t.Errorf("open: %v, want ErrUnsupportedVersion", err)
		}
	})
	t.Run("key", func(t *testing.T) {
		f := newFixture(t)
		h := repo.Handle{Type: repo.KeyFile, Name: names(t, f.be, repo.KeyFile)[0]}
		store(t, f.be, h, bump(load(t, f.be, h)))
		if _, err := repo.Open(ctx, f.be, repo.OpenOptions{Password: pw(password)}); !errors.Is(err, repo.ErrUnsupportedVersion) {
			t.Errorf("open: %v, want ErrUnsupportedVersion", err)
		}
	})
	t.Run("snapshot", func(t *testing.T) {
		f := newFixture(t)
		h := repo.Handle{Type: repo.SnapshotFile, Name: f.snap.ID}
		store(t, f.be, h, bump(load(t, f.be, h)))
		if _, err := f.open(t).LoadSnapshot(ctx, f.snap.ID); !errors.Is(err, repo.ErrUnsupportedVersion) {
			t.Errorf("load snapshot: %v, want ErrUnsupportedVersion", err)
		}
	})
	t.Run("index", func(t *testing.T) {
		// Index files are named by their hash: a newer one has its own name.
		f := newFixture(t)
		name := names(t, f.be, repo.IndexFile)[0]
		data := bump(load(t, f.be, repo.Handle{Type: repo.IndexFile, Name: name}))
		newName := blake3Hex(data)
		store(t, f.be, repo.Handle{Type: repo.IndexFile, Name: newName}, data)
		if _, _, err := f.open(t).ReadIndexFile(ctx, newName); !errors.Is(err, repo.ErrUnsupportedVersion) {
			t.Errorf("read index: %v, want ErrUnsupportedVersion", err)
		}
	})
	t.Run("pack", func(t *testing.T) {
		f := newFixture(t)
		data := load(t, f.be, f.pack("a"))
		data[len(data)-1]++ // the version byte after "NJP"
		id, err := repo.ParseID(blake3Hex(data))
		if err != nil {
			t.Fatal(err)
		}
		store(t, f.be, repo.Handle{Type: repo.PackFile, Name: id.String()}, data)
		r := f.open(t)
		if _, err := r.ReadPackHeader(ctx, id, int64(len(data))); !errors.Is(err, repo.ErrUnsupportedVersion) {
			t.Errorf("read pack header: %v, want ErrUnsupportedVersion", err)
		}
		if err := r.SplitPack(id, data, func(repo.PackedBlob, []byte, error) {}); !errors.Is(err, repo.ErrUnsupportedVersion) {
			t.Errorf("split pack: %v, want ErrUnsupportedVersion", err)
		}
	})
}

// A pack cut short is found by the structural check: the index places
// blobs beyond its end.
func TestCheckTruncatedPack(t *testing.T) {
	f := newFixture(t)
	h := f.pack("bc")
	data := load(t, f.be, h)
	store(t, f.be, h, data[:len(data)/2])
	rep := f.check(t, 0)
	if rep.OK() {
		t.Fatal("structural check finds nothing wrong with a pack cut in half")
	}
	if !affectedPathIn(rep, f.snap.ID, "/src/dir/c.txt") {
		t.Errorf("c.txt, whose blob lay in the lost half, is not reported:%s", problemList(rep))
	}
	if affectedPathIn(rep, f.snap.ID, "/src/a.txt") {
		t.Errorf("a.txt, in another pack, is reported:%s", problemList(rep))
	}
}

// A tree that restore would refuse (names that could escape the target, or
// entries out of order) is reported by check.
func TestCheckReportsUnsafeTrees(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		nodes []string
	}{
		{"dot dot", []string{".."}},
		{"dot", []string{"."}},
		{"slash", []string{"a/b"}},
		{"absolute", []string{"/etc"}},
		{"empty", []string{""}},
		{"nul", []string{"a\x00"}},
		{"out of order", []string{"b", "a"}},
		{"duplicate", []string{"a", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := memory.New()
			r := initRepo(t, be)
			var nodes []repo.Node
			for _, n := range tt.nodes {
				nodes = append(nodes, repo.Node{Name: n, Type: repo.NodeFile})
			}
			tree, err := writer(t, r).SaveTree(ctx, &repo.Tree{Nodes: nodes})
			if err != nil {
				t.Fatal(err)
			}
			flush(t, r)
			snap := &repo.Snapshot{ID: "s1", Time: time.Now().UTC(), Tree: tree}
			if err := flush(t, r).SaveSnapshot(ctx, snap); err != nil {
				t.Fatal(err)
			}
			rep, err := openRepo(t, be).Check(ctx, repo.CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if findProblem(rep, "tree blob "+tree.String()) == nil {
				t.Errorf("tree with entries %q is not reported:%s", tt.nodes, problemList(rep))
			}
		})
	}
}
