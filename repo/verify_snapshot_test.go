package repo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// verify opens the fixture's repository anew, loads its index and verifies
// its snapshot.
func (f *fixture) verify(t *testing.T, deep bool) *repo.VerifyReport {
	t.Helper()
	r := f.open(t)
	if err := r.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, err := r.VerifySnapshot(context.Background(), f.snap.ID, deep)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return rep
}

func verifyProblems(rep *repo.VerifyReport) string {
	return "\n  " + strings.Join(rep.ProblemLines(), "\n  ")
}

// verifyAffects reports whether a problem about object names path.
func verifyAffects(rep *repo.VerifyReport, object, path string) bool {
	for _, p := range rep.Problems {
		if p.Object == object {
			for _, a := range p.Affected {
				if a.Path == path {
					return true
				}
			}
		}
	}
	return false
}

// A sound snapshot verifies structurally without reading a pack, and
// deeply by reading each of its packs once.
func TestVerifySnapshotSound(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name      string
		deep      bool
		wantPacks int
	}{
		{"structural", false, 0},
		{"deep", true, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := f.verify(t, tt.deep)
			if !rep.OK() {
				t.Fatalf("a sound snapshot has problems:%s", verifyProblems(rep))
			}
			// 3 trees; a.txt has one blob, b.bin two, c.txt one.
			if rep.Trees != 3 || rep.Blobs != 4 || rep.PacksRead != tt.wantPacks || (rep.BytesRead > 0) != tt.deep || rep.Deep != tt.deep {
				t.Errorf("report %+v: want 3 trees, 4 blob references, %d packs read", rep, tt.wantPacks)
			}
		})
	}
	t.Run("missing snapshot", func(t *testing.T) {
		r := f.open(t)
		if _, err := r.VerifySnapshot(context.Background(), "0123abcd", false); !errors.Is(err, repo.ErrSnapshotNotFound) {
			t.Errorf("verify of a missing snapshot: %v, want ErrSnapshotNotFound", err)
		}
	})
}

// Damage is found by the verification that can see it, with the path it
// breaks: a lost index entry or pack by both, a corrupted chunk only by a
// deep one, a damaged tree or snapshot record by both.
func TestVerifySnapshotFindsDamage(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		damage     func(t *testing.T, f *fixture) (object string)
		path       string // the path the problem must name; "" for the snapshot record
		structural bool   // a structural verification finds it too
	}{
		{
			name: "index entry missing",
			damage: func(t *testing.T, f *fixture) string {
				// Each pack has its own index file: drop the one of pack a.
				r := f.open(t)
				for _, name := range names(t, f.be, repo.IndexFile) {
					blobs, _, err := r.ReadIndexFile(ctx, name)
					if err != nil {
						t.Fatal(err)
					}
					if blobs[0].Pack == f.packs["a"] {
						if err := f.be.Remove(ctx, repo.Handle{Type: repo.IndexFile, Name: name}); err != nil {
							t.Fatal(err)
						}
					}
				}
				return "blob " + f.content["/src/a.txt"][0].String()
			},
			path: "/src/a.txt", structural: true,
		},
		{
			name: "pack missing",
			damage: func(t *testing.T, f *fixture) string {
				if err := f.be.Remove(ctx, f.pack("bc")); err != nil {
					t.Fatal(err)
				}
				return "data blob " + f.content["/src/dir/c.txt"][0].String()
			},
			path: "/src/dir/c.txt", structural: true,
		},
		{
			name: "chunk corrupted",
			damage: func(t *testing.T, f *fixture) string {
				r := f.open(t)
				if err := r.LoadIndex(ctx); err != nil {
					t.Fatal(err)
				}
				c, _ := r.Index().Lookup(f.content["/src/dir/c.txt"][0])
				data := load(t, f.be, f.pack("bc"))
				store(t, f.be, f.pack("bc"), flipped(data, int(c.Offset+c.Length/2)))
				return "data blob " + c.ID.String()
			},
			path: "/src/dir/c.txt",
		},
		{
			name: "tree corrupted",
			damage: func(t *testing.T, f *fixture) string {
				data := load(t, f.be, f.pack("meta"))
				store(t, f.be, f.pack("meta"), flipped(data, 40))
				return ""
			},
			path: "/src", structural: true,
		},
		{
			name: "snapshot record damaged",
			damage: func(t *testing.T, f *fixture) string {
				h := repo.Handle{Type: repo.SnapshotFile, Name: f.snap.ID}
				data := load(t, f.be, h)
				store(t, f.be, h, flipped(data, len(data)-1))
				return "snapshot " + f.snap.ID
			},
			structural: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			object := tt.damage(t, f)
			for _, deep := range []bool{false, true} {
				rep := f.verify(t, deep)
				if found := !rep.OK(); found != (deep || tt.structural) {
					t.Errorf("deep %v: found damage %v, want %v:%s", deep, found, deep || tt.structural, verifyProblems(rep))
					continue
				}
				if rep.OK() {
					continue
				}
				for _, line := range rep.ProblemLines() {
					if strings.Contains(line, "\n") {
						t.Errorf("problem line %q has a line break", line)
					}
				}
				switch {
				case tt.path == "":
					if len(rep.Problems) != 1 || rep.Problems[0].Object != object {
						t.Errorf("deep %v: problems%s, want one about %s", deep, verifyProblems(rep), object)
					}
				case object == "":
					// A damaged tree: some problem names a path at or above
					// the tree's folder.
					found := false
					for _, line := range rep.ProblemLines() {
						found = found || strings.Contains(line, "(/")
					}
					if !found {
						t.Errorf("deep %v: problems%s name no path", deep, verifyProblems(rep))
					}
				case !verifyAffects(rep, object, tt.path) && !(deep && verifyAffects(rep, "pack "+f.packs["bc"].String(), tt.path)):
					t.Errorf("deep %v: problems%s, want %s naming %s", deep, verifyProblems(rep), object, tt.path)
				}
			}
		})
	}
}

// Damage outside the snapshot is none of its business: a broken pack that
// holds nothing of it leaves its verification clean.
func TestVerifySnapshotIgnoresOtherSnapshotsDamage(t *testing.T) {
	f := newFixture(t)
	r := openRepo(t, f.be)
	other := saveBlob(t, r, []byte("a blob of another snapshot"))
	flush(t, r)
	b, _ := r.Index().Lookup(other)
	h := repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}
	data := load(t, f.be, h)
	store(t, f.be, h, flipped(data, int(b.Offset)+1))
	for _, deep := range []bool{false, true} {
		if rep := f.verify(t, deep); !rep.OK() {
			t.Errorf("deep %v: problems%s, want none", deep, verifyProblems(rep))
		}
	}
	if rep := f.check(t, 1); rep.OK() {
		t.Error("check --read-data finds no damage: the test damaged nothing")
	}
}

// The subsets n/m split the packs into m slices that partition them
// exactly: every pack is read by exactly one slice, and check reads each
// slice's packs.
func TestCheckReadDataSubsetPartitions(t *testing.T) {
	f := newFixture(t)
	r := openRepo(t, f.be)
	for i := range 40 { // more packs, so that slices are not trivially empty
		saveBlob(t, r, []byte(fmt.Sprintf("blob %d", i)))
		flush(t, r)
	}
	packs := names(t, f.be, repo.PackFile)
	for _, m := range []int{1, 2, 3, 7, 30} {
		t.Run(fmt.Sprintf("m=%d", m), func(t *testing.T) {
			readBy := map[string]int{}
			total := 0
			for n := 1; n <= m; n++ {
				sub := repo.Subset{N: n, M: m}
				for _, name := range packs {
					id, err := repo.ParseID(name)
					if err != nil {
						t.Fatal(err)
					}
					if sub.Contains(id) {
						readBy[name]++
					}
				}
				rep, err := f.open(t).Check(context.Background(), repo.CheckOptions{ReadDataSubset: sub})
				if err != nil {
					t.Fatal(err)
				}
				if !rep.OK() {
					t.Fatalf("problems:%s", problemList(rep))
				}
				total += rep.PacksRead
			}
			for _, name := range packs {
				if readBy[name] != 1 {
					t.Errorf("pack %s is in %d slices of %d, want exactly one", name[:8], readBy[name], m)
				}
			}
			if total != len(packs) {
				t.Errorf("the %d slices read %d packs in all, want every one of the %d once", m, total, len(packs))
			}
		})
	}
}

// ParseSubset takes n/m with 1 <= n <= m and refuses the rest; check
// refuses a bad subset and a subset beside a fraction.
func TestParseSubset(t *testing.T) {
	tests := []struct {
		in   string
		want repo.Subset
		ok   bool
	}{
		{"1/30", repo.Subset{N: 1, M: 30}, true},
		{"30/30", repo.Subset{N: 30, M: 30}, true},
		{"1/1", repo.Subset{N: 1, M: 1}, true},
		{"0/30", repo.Subset{}, false},
		{"31/30", repo.Subset{}, false},
		{"1/0", repo.Subset{}, false},
		{"-1/3", repo.Subset{}, false},
		{"1", repo.Subset{}, false},
		{"a/b", repo.Subset{}, false},
		{"1/3/4", repo.Subset{}, false},
		{"", repo.Subset{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := repo.ParseSubset(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ParseSubset(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
			}
			if err != nil && !errors.Is(err, repo.ErrBadSubset) {
				t.Errorf("error %v does not wrap ErrBadSubset", err)
			}
		})
	}
	f := newFixture(t)
	for name, opts := range map[string]repo.CheckOptions{
		"n above m":         {ReadDataSubset: repo.Subset{N: 3, M: 2}},
		"beside a fraction": {ReadDataSubset: repo.Subset{N: 1, M: 2}, ReadDataFraction: 0.5},
	} {
		if _, err := f.open(t).Check(context.Background(), opts); !errors.Is(err, repo.ErrBadSubset) {
			t.Errorf("check with %s: %v, want ErrBadSubset", name, err)
		}
	}
}
