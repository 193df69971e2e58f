//go:build linux

package schede2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// randomBytes returns n incompressible bytes, different for every seed.
func randomBytes(seed uint64, n int) []byte {
	var key [32]byte
	copy(key[:], fmt.Sprintf("schede2e-%016x", seed))
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

// writeRandomFile writes size incompressible bytes to p, in pieces, so that
// a large file does not need as much memory.
func writeRandomFile(t *testing.T, p string, seed uint64, size int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	var key [32]byte
	copy(key[:], fmt.Sprintf("schede2e-big-%016x", seed))
	src := rand.NewChaCha8(key)
	bw := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := min(left, int64(len(buf)))
		_, _ = src.Read(buf[:n])
		if _, err := bw.Write(buf[:n]); err != nil {
			t.Fatal(err)
		}
		left -= n
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// makeTree builds a small folder with what a backup must bring back: nested
// folders with their own modes, files of several sizes and modes (empty,
// executable, private, several chunks), a relative symlink and mtimes in
// the past with nanoseconds. seed makes the contents differ between trees.
func makeTree(t *testing.T, root string, seed uint64) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sub", "deeper"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "empty-dir"), 0o755))
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"empty", nil, 0o644},
		{"notes.txt", []byte(fmt.Sprintf("tree %d\nsecond line\n", seed)), 0o644},
		{"private.key", randomBytes(seed+1, 300), 0o600},
		{"run.sh", []byte("#!/bin/sh\necho hello\n"), 0o755},
		{"sub/data.bin", randomBytes(seed+2, 3<<20), 0o640},
		{"sub/deeper/log.txt", bytes.Repeat([]byte("2026-03-29 03:00:00 nightjar line\n"), 5000), 0o444},
	}
	mtime := time.Date(2024, 2, 29, 12, 34, 56, 123456789, time.UTC).Add(time.Duration(seed) * time.Hour)
	for i, f := range files {
		p := filepath.Join(root, f.name)
		must(os.WriteFile(p, f.data, 0o600))
		must(os.Chmod(p, f.mode))
		stamp := mtime.Add(time.Duration(i) * time.Minute)
		must(os.Chtimes(p, stamp, stamp))
	}
	must(os.Symlink("notes.txt", filepath.Join(root, "link-to-notes")))
	must(os.Chmod(filepath.Join(root, "sub"), 0o750))
	must(os.Chmod(filepath.Join(root, "sub", "deeper"), 0o700))
	must(os.Chmod(filepath.Join(root, "empty-dir"), 0o711))
}

// entry is one path of a tree as the comparison sees it.
type entry struct {
	mode  fs.FileMode // type and permission bits
	size  int64
	sum   [32]byte // SHA-256 of a regular file's content
	link  string   // a symlink's target
	mtime time.Time
}

func (e entry) String() string {
	return fmt.Sprintf("%v size %d sha256 %x link %q mtime %s", e.mode, e.size, e.sum[:6], e.link, e.mtime.Format(time.RFC3339Nano))
}

// manifest walks root and describes every entry below it by its path
// relative to root.
func manifest(t *testing.T, root string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := entry{mode: fi.Mode() & (fs.ModeType | fs.ModePerm)}
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.size, e.sum, e.mtime = fi.Size(), sha256.Sum256(data), fi.ModTime()
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return out
}

// compareTrees reports every path whose type, mode, content, link target or
// (for regular files) mtime differs, and every path only one side has.
func compareTrees(t *testing.T, want, got map[string]entry) {
	t.Helper()
	var paths []string
	seen := map[string]bool{}
	for p := range want {
		paths, seen[p] = append(paths, p), true
	}
	for p := range got {
		if !seen[p] {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	bad := 0
	for _, p := range paths {
		w, inWant := want[p]
		g, inGot := got[p]
		switch {
		case !inGot:
			t.Errorf("restored tree lacks %s (%s)", p, w)
		case !inWant:
			t.Errorf("restored tree has %s, which the source did not (%s)", p, g)
		case w.mode != g.mode || w.size != g.size || w.sum != g.sum || w.link != g.link || !w.mtime.Equal(g.mtime):
			t.Errorf("%s differs:\n  source   %s\n  restored %s", p, w, g)
		default:
			continue
		}
		if bad++; bad > 20 {
			t.Fatal("too many differences")
		}
	}
	if len(want) == 0 {
		t.Error("the source tree was empty: nothing was compared")
	}
}
