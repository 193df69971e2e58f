//go:build !windows

package restore_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/restore"
)

// The golden repositories of repo/golden_test.go (testdata/repo), written
// by the nightjar of their day: every nightjar restores them.
var goldenRepos = []struct {
	dir   string
	many  bool // holds /data/many, 400 empty files in a split tree
	paths int  // the paths of the snapshot, /data included
}{
	{"../testdata/repo/v1", false, 6},
	{"../testdata/repo/v2", true, 407},
}

const goldenPassword = "nightjar golden repository"

var goldenTime = time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)

func openGolden(t *testing.T, dir string) (*repo.Repository, *repo.Snapshot) {
	t.Helper()
	ctx := context.Background()
	be, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte(goldenPassword), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := r.FindSnapshot(ctx, "latest", []string{"/data"})
	if err != nil {
		t.Fatal(err)
	}
	return r, s
}

// The golden repositories restore here whole, with their content (read
// back by verify), names (one not UTF-8), modes, times and symlink: the
// format a repository was written in restores on this platform.
func TestRestoreGoldenRepositories(t *testing.T) {
	for _, g := range goldenRepos {
		t.Run(filepath.Base(g.dir), func(t *testing.T) {
			r, s := openGolden(t, g.dir)
			target := filepath.Join(t.TempDir(), "target")
			res, err := restore.Run(context.Background(), r, s, restore.Options{Target: target, Verify: true})
			if err != nil {
				t.Fatal(err)
			}
			files := int64(3)
			if g.many {
				files += 400
			}
			if len(res.Skipped) > 0 || len(res.Lacks) > 0 || res.Files != files || res.Verified != files {
				t.Errorf("restored %d files, verified %d, skipped %v, lacking %v; want %d files, all verified, none skipped",
					res.Files, res.Verified, res.Skipped, res.Lacks, files)
			}
			type entry struct {
				mode fs.FileMode
				size int64
			}
			want := map[string]entry{
				"data":            {fs.ModeDir | 0o755, -1},
				"data/caf\xe9":    {0o644, int64(len("a name that is not UTF-8\n"))},
				"data/hello.txt":  {0o644, 100 << 10},
				"data/random.bin": {0o644, 70 << 10},
				"data/empty":      {fs.ModeDir | 0o700, -1},
				"data/z-link":     {fs.ModeSymlink, -1},
			}
			if g.many {
				want["data/many"] = entry{fs.ModeDir | 0o700, -1}
				for i := range 400 {
					want[fmt.Sprintf("data/many/f%03d", i)] = entry{0o600, 0}
				}
			}
			got := 0
			err = filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
				if err != nil || p == target {
					return err
				}
				rel, _ := filepath.Rel(target, p)
				got++
				w, ok := want[rel]
				if !ok {
					t.Errorf("%q restored, which the snapshot does not hold", rel)
					return nil
				}
				fi, err := os.Lstat(p)
				if err != nil {
					return err
				}
				mode := fi.Mode()
				if w.mode&fs.ModeSymlink != 0 {
					mode &= fs.ModeType // a symlink's own bits are the platform's
				}
				if mode != w.mode || (w.size >= 0 && fi.Size() != w.size) || !fi.ModTime().Equal(goldenTime) {
					t.Errorf("%q: mode %v, size %d, mtime %v; want %v, %d, %v", rel, mode, fi.Size(), fi.ModTime(), w.mode, w.size, goldenTime)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != len(want) {
				t.Errorf("%d entries restored, want %d", got, len(want))
			}
			if link, err := os.Readlink(filepath.Join(target, "data/z-link")); err != nil || link != "hello.txt" {
				t.Errorf("z-link -> %q (%v), want hello.txt", link, err)
			}
		})
	}
}

// On Windows the golden snapshots' paths map to themselves below the
// target, and the one name Windows cannot spell (not UTF-8) is refused by
// name: the Windows rules run here over every path the snapshots hold.
func TestGoldenRepositoriesOnWindowsRules(t *testing.T) {
	for _, g := range goldenRepos {
		t.Run(filepath.Base(g.dir), func(t *testing.T) {
			r, s := openGolden(t, g.dir)
			var refused []string
			paths := 0
			err := r.Walk(context.Background(), s.Tree, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
				paths++
				if got := restore.WindowsLocalPath(e.Path); got != e.Path {
					t.Errorf("%q maps to %q, want itself", e.Path, got)
				}
				if reason := restore.WindowsRefusedName(e.Path); reason != "" {
					refused = append(refused, e.Path+": "+reason)
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			want := "/data/caf\xe9: the name is not valid UTF-8, which Windows cannot spell: not restored"
			if len(refused) != 1 || refused[0] != want {
				t.Errorf("refused %q, want only %q", refused, want)
			}
			if paths != g.paths {
				t.Errorf("the walk met %d paths, want the snapshot's %d", paths, g.paths)
			}
		})
	}
}
