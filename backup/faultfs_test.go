package backup

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// faultFS wraps an FS (the real one, over a temporary directory) and lets
// a test act at named events: before a file is opened, before the nth read
// of a file, when a folder is listed, a symlink read, or extended
// attributes listed and read. A hook that returns an error fails the call
// with it. Safe for concurrent use (the hooks must be too).
type faultFS struct {
	FS
	beforeOpen func(name string) error
	// beforeRead runs before the call-th Read (from 1) of an open file,
	// offset bytes into it.
	beforeRead func(name string, call int, offset int64) error
	readDir    func(name string) error
	readlink   func(name string) error
	listXattrs func(name string) ([]string, bool) // true: answer with these names
	getXattr   func(name, attr string) error
}

func (f *faultFS) ReadDirNames(name string) ([]string, error) {
	if f.readDir != nil {
		if err := f.readDir(name); err != nil {
			return nil, err
		}
	}
	return f.FS.ReadDirNames(name)
}

func (f *faultFS) Readlink(name string) (string, error) {
	if f.readlink != nil {
		if err := f.readlink(name); err != nil {
			return "", err
		}
	}
	return f.FS.Readlink(name)
}

func (f *faultFS) ListXattrs(name string) ([]string, error) {
	if f.listXattrs != nil {
		if names, ok := f.listXattrs(name); ok {
			return names, nil
		}
	}
	return f.FS.ListXattrs(name)
}

func (f *faultFS) GetXattr(name, attr string) ([]byte, error) {
	if f.getXattr != nil {
		if err := f.getXattr(name, attr); err != nil {
			return nil, err
		}
	}
	return f.FS.GetXattr(name, attr)
}

func (f *faultFS) OpenFile(name string) (File, error) {
	if f.beforeOpen != nil {
		if err := f.beforeOpen(name); err != nil {
			return nil, err
		}
	}
	file, err := f.FS.OpenFile(name)
	if err != nil || f.beforeRead == nil {
		return file, err
	}
	return &faultFile{File: file, name: name, hook: f.beforeRead}, nil
}

type faultFile struct {
	File
	name   string
	hook   func(name string, call int, offset int64) error
	calls  int
	offset int64
}

func (f *faultFile) Read(p []byte) (int, error) {
	f.calls++
	if err := f.hook(f.name, f.calls, f.offset); err != nil {
		return 0, err
	}
	n, err := f.File.Read(p)
	f.offset += int64(n)
	return n, err
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// makeSource writes the tree every fault case starts from:
//
//	big.bin       3 MiB (read in several calls: the target of read faults)
//	small.txt
//	dir/c.bin     1 MiB
//	dir/link ->   c.bin
//	sub/d.txt
//	sub/deeper/e.txt
func makeSource(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	files := map[string][]byte{
		"big.bin":          randomBytes(t, 3<<20),
		"small.txt":        []byte("a small file\n"),
		"dir/c.bin":        randomBytes(t, 1<<20),
		"sub/d.txt":        []byte("d\n"),
		"sub/deeper/e.txt": []byte("e\n"),
	}
	for name, data := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("c.bin", filepath.Join(src, "dir/link")); err != nil {
		t.Fatal(err)
	}
	return src
}

// snapshotEntries returns the nodes of the snapshot below src by their
// path relative to src, and each file's content loaded from its chunks.
func snapshotEntries(t *testing.T, r *repo.Repository, snap *repo.Snapshot, src string) (map[string]repo.Node, map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	id := snap.Tree
	for _, part := range strings.Split(strings.TrimPrefix(src, "/"), "/") {
		tree, err := r.LoadTree(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(tree.Nodes, func(n repo.Node) bool { return n.Name == part })
		if i < 0 || tree.Nodes[i].Subtree == nil {
			t.Fatalf("snapshot has no folder %s on the way to %s", part, src)
		}
		id = *tree.Nodes[i].Subtree
	}
	nodes := map[string]repo.Node{}
	contents := map[string][]byte{}
	var walk func(id repo.ID, dir string)
	walk = func(id repo.ID, dir string) {
		tree, err := r.LoadTree(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range tree.Nodes {
			p := filepath.Join(dir, n.Name)
			nodes[p] = n
			switch n.Type {
			case repo.NodeDir:
				walk(*n.Subtree, p)
			case repo.NodeFile:
				var data []byte
				for _, c := range n.Content {
					blob, err := r.LoadBlob(ctx, c)
					if err != nil {
						t.Fatalf("%s: %v", p, err)
					}
					data = append(data, blob...)
				}
				contents[p] = data
			}
		}
	}
	walk(id, "")
	return nodes, contents
}

// TestArchiverFaults backs up a real temporary tree through a file system
// that injects one fault at a named event, and checks what the snapshot
// holds: the entry the fault hit (skipped with its reason, or saved with
// what was read and reported as changed), the partial flag, and that every
// other entry is saved bit-identically, nothing dropped without a skip.
func TestArchiverFaults(t *testing.T) {
	eio := func(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: syscall.EIO} }
	tests := []struct {
		name    string
		inject  func(f *faultFS, src string)
		skipped []repo.Skip // paths relative to src
		changed []string    // relative to src
	}{
		{name: "no fault", inject: func(*faultFS, string) {}},
		{
			name: "file vanishes between listing and opening",
			inject: func(f *faultFS, src string) {
				f.beforeOpen = func(name string) error {
					if name == filepath.Join(src, "big.bin") {
						return os.Remove(name)
					}
					return nil
				}
			},
			skipped: []repo.Skip{{Path: "big.bin", Reason: "vanished before it could be read"}},
		},
		{
			name: "file shrinks mid-read",
			inject: func(f *faultFS, src string) {
				f.beforeRead = func(name string, call int, offset int64) error {
					if name == filepath.Join(src, "big.bin") && call == 2 {
						// Cut the file where the reader is: it then holds
						// exactly what was read.
						return os.Truncate(name, offset)
					}
					return nil
				}
			},
			changed: []string{"big.bin"},
		},
		{
			name: "file grows mid-read",
			inject: func(f *faultFS, src string) {
				var once sync.Once
				f.beforeRead = func(name string, call int, _ int64) error {
					var err error
					if name == filepath.Join(src, "big.bin") && call == 2 {
						once.Do(func() {
							var out *os.File
							if out, err = os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0); err != nil {
								return
							}
							defer out.Close()
							_, err = out.Write(bytes.Repeat([]byte("more"), 50000))
						})
					}
					return err
				}
			},
			changed: []string{"big.bin"},
		},
		{
			name: "file fails with EIO mid-read",
			inject: func(f *faultFS, src string) {
				f.beforeRead = func(name string, call int, _ int64) error {
					if name == filepath.Join(src, "big.bin") && call == 2 {
						return eio("read", name)
					}
					return nil
				}
			},
			skipped: []repo.Skip{{Path: "big.bin", Reason: "input/output error"}},
		},
		{
			name: "folder cannot be listed",
			inject: func(f *faultFS, src string) {
				f.readDir = func(name string) error {
					if name == filepath.Join(src, "sub") {
						return &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
					}
					return nil
				}
			},
			skipped: []repo.Skip{{Path: "sub", Reason: "cannot list folder: permission denied"}},
		},
		{
			name: "extended attribute cannot be read",
			inject: func(f *faultFS, src string) {
				f.listXattrs = func(name string) ([]string, bool) {
					return []string{"user.broken"}, name == filepath.Join(src, "small.txt")
				}
				f.getXattr = func(name, attr string) error {
					if name == filepath.Join(src, "small.txt") {
						return syscall.EIO
					}
					return nil
				}
			},
			skipped: []repo.Skip{{Path: "small.txt", Reason: "extended attributes: user.broken: input/output error"}},
		},
		{
			name: "symlink cannot be read",
			inject: func(f *faultFS, src string) {
				f.readlink = func(name string) error {
					if name == filepath.Join(src, "dir/link") {
						return eio("readlink", name)
					}
					return nil
				}
			},
			skipped: []repo.Skip{{Path: "dir/link", Reason: "input/output error"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := makeSource(t)
			r := repotest.New(t, memory.New())
			f := &faultFS{FS: OSFS{}}
			tt.inject(f, src)
			res, err := Backup(context.Background(), r, Options{Paths: []string{src}, FS: f})
			if err != nil {
				t.Fatal(err)
			}
			sum := res.Snapshot.Summary

			var wantSkipped []repo.Skip
			for _, s := range tt.skipped {
				wantSkipped = append(wantSkipped, repo.Skip{Path: filepath.Join(src, s.Path), Reason: s.Reason})
			}
			if !slices.Equal(sum.Skipped, wantSkipped) || sum.FilesSkipped != int64(len(wantSkipped)) {
				t.Errorf("skipped %d: %v; want %v", sum.FilesSkipped, sum.Skipped, wantSkipped)
			}
			if sum.Partial != (len(wantSkipped) > 0) || res.Partial() != sum.Partial {
				t.Errorf("partial %v, want %v", sum.Partial, len(wantSkipped) > 0)
			}
			var wantChanged []string
			for _, c := range tt.changed {
				wantChanged = append(wantChanged, filepath.Join(src, c))
			}
			if !slices.Equal(sum.ChangedDuring, wantChanged) {
				t.Errorf("changed during read %v, want %v", sum.ChangedDuring, wantChanged)
			}

			nodes, contents := snapshotEntries(t, r, res.Snapshot, src)
			isSkipped := func(rel string) bool {
				for _, s := range tt.skipped {
					if rel == s.Path {
						return true
					}
				}
				return false
			}
			underSkipped := func(rel string) bool {
				for _, s := range tt.skipped {
					if strings.HasPrefix(rel, s.Path+"/") {
						return true
					}
				}
				return false
			}
			// Every entry on disk now is in the snapshot, with the
			// content it has now (a file that changed while it was read
			// was cut or grown to exactly what was read), unless it was
			// skipped: nothing is dropped silently.
			err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
				if err != nil || p == src {
					return err
				}
				rel, _ := filepath.Rel(src, p)
				n, inSnapshot := nodes[rel]
				switch {
				case underSkipped(rel):
					if inSnapshot {
						t.Errorf("%s, below a folder that could not be listed, is in the snapshot", rel)
					}
				case isSkipped(rel) && d.IsDir():
					if !inSnapshot || n.Type != repo.NodeDir {
						t.Errorf("the folder %s that could not be listed is not kept as a folder", rel)
					}
				case isSkipped(rel):
					if inSnapshot {
						t.Errorf("skipped %s is in the snapshot", rel)
					}
				case !inSnapshot:
					t.Errorf("%s is neither in the snapshot nor skipped", rel)
				case d.Type().IsRegular():
					want, err := os.ReadFile(p)
					if err != nil {
						return err
					}
					if !bytes.Equal(contents[rel], want) || n.Size != uint64(len(want)) {
						t.Errorf("%s: saved %d bytes (size %d) that differ from its %d bytes", rel, len(contents[rel]), n.Size, len(want))
					}
				case d.Type()&fs.ModeSymlink != 0:
					if target, _ := os.Readlink(p); n.LinkTarget != target {
						t.Errorf("%s: link target %q, want %q", rel, n.LinkTarget, target)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for rel := range nodes {
				if _, err := os.Lstat(filepath.Join(src, rel)); errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the snapshot holds %s, which does not exist", rel)
				}
			}
		})
	}
}
