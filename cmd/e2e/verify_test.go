//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRestoreVerifiesOnlyWhatItRestored: restore --verify reads back only
// the files it put in place. A folder in the target that is a symlink to
// the backed-up source, whose files match the snapshot to the nanosecond,
// is refused; its files are neither restored nor counted as verified, and
// nothing is read or written through the symlink.
func TestRestoreVerifiesOnlyWhatItRestored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	files := map[string]string{
		"top.txt":      "top\n",
		"d1/a.txt":     "a\n",
		"d1/b.txt":     "b\n",
		"d1/sub/c.txt": "c\n",
		"d2/e.txt":     "e\n",
	}
	for rel, content := range files {
		mkdirAll(t, filepath.Dir(filepath.Join(src, rel)), 0o755)
		writeFile(t, filepath.Join(src, rel), content, 0o644)
	}
	e.backup(exitOK, src)

	tests := []struct {
		name  string
		link  string // the folder below src that is a symlink, in the target, to the same folder of the source
		files int64  // the files restored beside it
	}{
		{"a sub folder", "d1", 2},
		{"the source folder itself", "", 0},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := filepath.Join(e.dir, "target", string(rune('a'+i)))
			link := filepath.Join(target, src, tt.link)
			mkdirAll(t, filepath.Dir(link), 0o755)
			if err := os.Symlink(filepath.Join(src, tt.link), link); err != nil {
				t.Fatal(err)
			}
			res := e.expect(exitPartial, "restore", "latest", "--target", target, "--verify", "--json")
			var rr restoreReport
			decodeJSON(t, res, &rr)
			if rr.Files != tt.files || rr.Verified != tt.files || len(rr.VerifyFailures) != 0 {
				t.Errorf("restored %d files, verified %d (failures %+v); want %d and %d, none", rr.Files, rr.Verified, rr.VerifyFailures, tt.files, tt.files)
			}
			refused := filepath.Join(src, tt.link)
			var reason string
			for _, s := range rr.Skipped {
				if s.Path == refused {
					reason = s.Reason
				}
			}
			if !strings.Contains(reason, "symlink") {
				t.Errorf("%s skipped with %q, want a symlink in the way (skipped: %+v)", refused, reason, rr.Skipped)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the symlink in the target was replaced or removed: %v %v", fi, err)
			}
			for rel, content := range files {
				if got := readFile(t, filepath.Join(src, rel)); got != content {
					t.Errorf("the source's %s now holds %q", rel, got)
				}
			}
		})
	}
}
