package cmd

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// list prints the names of each type of object, one a line, as the
// repository's folder holds them; blobs as "TYPE ID" from the index. A
// type it does not know is a usage error of one line.
func TestList(t *testing.T) {
	e := newCLIEnv(t)
	r := e.initRepo("repo")
	src := filepath.Join(e.dir, "src")
	writeTree(t, src, map[string]string{"a": "alpha", "sub/b": "beta"})
	e.backupSnapshot(r, src)
	writeTree(t, src, map[string]string{"c": "gamma"})
	e.backupSnapshot(r, src)

	for _, tc := range []struct {
		name string
		kind repo.FileType
	}{
		{"snapshots", repo.SnapshotFile},
		{"index", repo.IndexFile},
		{"packs", repo.PackFile},
		{"keys", repo.KeyFile},
		{"locks", repo.LockFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.expect(ExitOK, "list", "-r", r, tc.name)
			want := objectNames(t, r, tc.kind)
			if got := lines(res.stdout); !slices.Equal(got, want) {
				t.Errorf("list %s = %q, want %q", tc.name, got, want)
			}
			if tc.kind != repo.LockFile && len(want) == 0 {
				t.Errorf("the repository holds no %s: the test proves nothing", tc.name)
			}
		})
	}

	t.Run("blobs", func(t *testing.T) {
		res := e.expect(ExitOK, "list", "-r", r, "blobs")
		got := lines(res.stdout)
		kinds := map[string]int{}
		for _, l := range got {
			kind, id, ok := strings.Cut(l, " ")
			if _, err := repo.ParseID(id); !ok || err != nil {
				t.Fatalf("line %q: want TYPE ID", l)
			}
			kinds[kind]++
		}
		// a, b and c are one chunk each; trees: /, the folders above src, src, sub, twice, less the ones shared.
		if kinds["data"] != 3 || kinds["tree"] == 0 || len(kinds) != 2 {
			t.Errorf("blob types %v, want 3 data blobs and some trees", kinds)
		}
		if !slices.IsSorted(got) {
			t.Error("blobs are not sorted")
		}
	})

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown type", []string{"list", "-r", r, "trees"}, `nightjar: cannot list "trees": want snapshots, index, packs, keys, locks or blobs`},
		{"no type", []string{"list", "-r", r}, "nightjar: list needs exactly one type: snapshots, index, packs, keys, locks or blobs"},
		{"two types", []string{"list", "-r", r, "keys", "locks"}, "nightjar: list needs exactly one type: snapshots, index, packs, keys, locks or blobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := e.expect(ExitUsage, tc.args...)
			if got := lines(res.stderr); !slices.Equal(got, []string{tc.want}) || res.stdout != "" {
				t.Errorf("stderr %q, stdout %q; want the one line %q", got, res.stdout, tc.want)
			}
		})
	}
}
