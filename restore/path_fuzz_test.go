package restore

import (
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// FuzzTargetOf feeds the path builder snapshot paths of any names (the
// input is split at NUL bytes into the names of nested entries): every
// path restore acts on (the walker's names that are not unsafe, and that
// the platform does not refuse) is a name beneath the target, on this
// platform and by Windows' rules, with no element that could leave it.
func FuzzTargetOf(f *testing.F) {
	for _, seed := range []string{
		"a\x00b\x00c", "..\x00x", ".\x00x", "a/b", "/abs", "C:\x00Users", "c:", "x\\..\\..\\y",
		"\x1b[31mred", "con\x00aux.txt", "a\x00\x00b", "", "...", "d/../../e", "名前\x00ファイル",
	} {
		f.Add(seed)
	}
	root := filepath.Join(string(filepath.Separator), "target")
	f.Fuzz(func(t *testing.T, names string) {
		rs := &restorer{root: root}
		p := "/"
		for _, name := range strings.Split(names, "\x00") {
			if !repo.ValidName(name) {
				return // the walker marks it unsafe: restore skips it
			}
			if p == "/" {
				p += name
			} else {
				p += "/" + name
			}
			checkBeneath(t, p, rs.targetOf(p), refusedName(p))
			checkBeneath(t, p, strings.TrimPrefix(windowsLocalPath(p), "/"), windowsRefusedName(p))
		}
	})
}

// checkBeneath fails the test if rel, where restore puts snapshot path p
// unless refused says why not, could name anything outside the target.
func checkBeneath(t *testing.T, p, rel, refused string) {
	t.Helper()
	if refused != "" {
		return
	}
	if rel == "" || strings.HasPrefix(rel, "/") || path.Clean(rel) != rel {
		t.Fatalf("snapshot path %q goes to %q, not a clean name below the target", p, rel)
	}
	for _, e := range strings.Split(rel, "/") {
		if e == "" || e == "." || e == ".." {
			t.Fatalf("snapshot path %q goes to %q, with element %q", p, rel, e)
		}
	}
	if strings.Contains(rel, "\x00") {
		t.Fatalf("snapshot path %q goes to %q, with a NUL", p, rel)
	}
}
