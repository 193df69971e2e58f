package restore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/restore"
)

// On Linux a file is written with no name (O_TMPFILE) and linked into
// place when it is complete: while any part writes, neither its name nor
// a temporary one is in its folder, and a file whose part fails leaves no
// name at all.
func TestRestoreUnnamedFileHasNoNameUntilComplete(t *testing.T) {
	b := newBuilder(t)
	s := b.snapshot(bigFile(b, "/big", -1), b.dir("d", b.file("/d/f", []byte("in d"))), b.file("/small", []byte("small file")))
	s2 := b.snapshot(bigFile(b, "/big", -1), b.file("/small", []byte("small file")))
	for _, tt := range []struct {
		name   string
		failed string // the file whose part fails
	}{
		{"all complete", ""},
		{"a part of the big file fails", "big"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var created, writes atomic.Int32
			fsys := &faultFS{unnamed: true, hook: func(op, name string, off int64, _ int) error {
				switch {
				case op == "CreateUnnamed" && !isTemp(name):
					// Not the probe before the first file, a
					// temporary name linked and removed at once.
					created.Add(1)
				case op == "WriteAt":
					writes.Add(1)
					entries, err := os.ReadDir(filepath.Dir(name))
					if err != nil {
						t.Error(err)
					}
					for _, e := range entries {
						if e.Name() == filepath.Base(name) || isTemp(e.Name()) {
							t.Errorf("%s is in the folder while %s is written", e.Name(), name)
						}
					}
					if filepath.Base(name) == tt.failed && off > 0 {
						return syscall.EIO
					}
				}
				return nil
			}}
			snap := s
			if tt.failed != "" {
				snap = s2
			}
			target := filepath.Join(t.TempDir(), "target")
			res, err := run(t, b, snap, restore.Options{Target: target, FS: fsys})
			if err != nil {
				t.Fatal(err)
			}
			if created.Load() == 0 || writes.Load() == 0 {
				t.Fatalf("%d files created with no name, %d writes: the unnamed path was not taken", created.Load(), writes.Load())
			}
			for rel := range tree(t, target) {
				if isTemp(rel) {
					t.Errorf("temporary name %s", rel)
				}
			}
			if tt.failed == "" {
				for _, rel := range []string{"big", "d/f", "small"} {
					sameContent(t, b, target, rel)
				}
				return
			}
			if _, err := os.Lstat(filepath.Join(target, tt.failed)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s, whose part failed, is there (%v)", tt.failed, err)
			}
			if r := skipReason(res, "/"+tt.failed); !strings.Contains(r, "input/output error") {
				t.Errorf("%s skipped with %q, want the write's error", tt.failed, r)
			}
			sameContent(t, b, target, "small")
		})
	}
}

// An existing file is not replaced by a file with no name (linkat refuses
// it), a folder never is; with Overwrite, when names cannot be linked over
// an entry, the file is written under a temporary name and renamed over.
func TestRestoreUnnamedExistingName(t *testing.T) {
	b := newBuilder(t)
	s := b.snapshot(b.file("/small", []byte("small file")), b.file("/x", []byte("x")))
	for _, overwrite := range []bool{false, true} {
		t.Run(fmt.Sprintf("overwrite %v", overwrite), func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "target")
			if err := errors.Join(os.MkdirAll(filepath.Join(target, "x"), 0o700), os.WriteFile(filepath.Join(target, "small"), []byte("old"), 0o600)); err != nil {
				t.Fatal(err)
			}
			var created atomic.Int32
			fsys := &faultFS{unnamed: true, hook: func(op, name string, _ int64, _ int) error {
				if op == "CreateUnnamed" && !isTemp(name) {
					created.Add(1)
				}
				return nil
			}}
			res, err := run(t, b, s, restore.Options{Target: target, FS: fsys, Overwrite: overwrite})
			if err != nil {
				t.Fatal(err)
			}
			if r := skipReason(res, "/x"); r != "a folder is in the way: not replaced" {
				t.Errorf("/x skipped with %q, want the folder in the way", r)
			}
			got, err := os.ReadFile(filepath.Join(target, "small"))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case overwrite && created.Load() != 0:
				t.Errorf("%d files created with no name with Overwrite", created.Load())
			case overwrite && string(got) != "small file":
				t.Errorf("small holds %q, want it replaced", got)
			case !overwrite && created.Load() == 0:
				t.Error("no file created with no name")
			case !overwrite && string(got) != "old":
				t.Errorf("small holds %q, want it kept", got)
			case !overwrite && skipReason(res, "/small") != "exists (use --overwrite to replace it)":
				t.Errorf("/small skipped with %q", skipReason(res, "/small"))
			}
			noTemps(t, target)
		})
	}
}

// Where the file system refuses files with no name, or they can be made
// but not named (no /proc, and linkat's AT_EMPTY_PATH refused), the probe
// before the first file finds out, once: every file gets a temporary
// name, and none is lost after it was written.
func TestRestoreUnnamedFallsBackToTemporaryNames(t *testing.T) {
	for _, refusedOp := range []string{"CreateUnnamed", "LinkUnnamed"} {
		t.Run(refusedOp+" refused", func(t *testing.T) {
			b := newBuilder(t)
			s := sample(b)
			var refused, unnamed, temps atomic.Int32
			fsys := &faultFS{unnamed: true, hook: func(op, name string, _ int64, _ int) error {
				switch {
				case op == refusedOp:
					refused.Add(1)
					if op == "CreateUnnamed" {
						return fmt.Errorf("open %s: %w", name, errors.Join(errors.ErrUnsupported, syscall.EOPNOTSUPP))
					}
					return fmt.Errorf("link %s: %w", name, syscall.ENOENT)
				case op == "CreateUnnamed" && !isTemp(name):
					unnamed.Add(1)
				case op == "CreateExclusive" && isTemp(name):
					temps.Add(1)
				}
				return nil
			}}
			restoreSampleThrough(t, b, s, fsys)
			if refused.Load() != 1 || unnamed.Load() != 0 || temps.Load() != 3 {
				t.Errorf("%s refused %d times, %d files made with no name, %d temporary files; want 1 (the probe), 0, 3 (big, d/f, small)",
					refusedOp, refused.Load(), unnamed.Load(), temps.Load())
			}
		})
	}
}

// embeddingFS embeds the OS to watch file creation and nothing more, as a
// caller's wrapper may: the restore must not go around it with the OS's
// files with no name or their own metadata calls.
type embeddingFS struct {
	restore.OS
	created, chmods atomic.Int32
}

func (f *embeddingFS) CreateExclusive(root, name string) (restore.File, error) {
	f.created.Add(1)
	return f.OS.CreateExclusive(root, name)
}

func (f *embeddingFS) Chmod(root, name string, mode uint32) error {
	f.chmods.Add(1)
	return f.OS.Chmod(root, name, mode)
}

func TestRestoreThroughAnEmbeddingWrapperCreatesThroughIt(t *testing.T) {
	b := newBuilder(t)
	s := sample(b)
	fsys := &embeddingFS{}
	restoreSampleThrough(t, b, s, fsys)
	// big, d/f and small, and the folders' and files' modes by name.
	if fsys.created.Load() != 3 || fsys.chmods.Load() < 3 {
		t.Errorf("the wrapper saw %d creations and %d chmods; want 3 and at least 3", fsys.created.Load(), fsys.chmods.Load())
	}
}

// restoreSampleThrough restores sample's snapshot s through fsys into a
// new target: nothing skipped, big, d/f and small as in the snapshot, and
// no temporary name left.
func restoreSampleThrough(t *testing.T, b *builder, s *repo.Snapshot, fsys restore.FS) {
	t.Helper()
	target := filepath.Join(t.TempDir(), "target")
	res, err := run(t, b, s, restore.Options{Target: target, FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 {
		t.Fatalf("skipped %v", res.Skipped)
	}
	for _, rel := range []string{"big", "d/f", "small"} {
		sameContent(t, b, target, rel)
	}
	noTemps(t, target)
}
