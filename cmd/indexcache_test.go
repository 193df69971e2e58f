package cmd

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// A command that loads the index keeps a local index cache of a big
// index, of a local repository too, in the user's cache folder (0600 in
// 0700); --no-cache and NIGHTJAR_NO_CACHE=1 keep none.
func TestIndexCacheOfLocalRepository(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("NIGHTJAR_PASSWORD", "pw")
	for _, v := range []string{"NIGHTJAR_REPOSITORY", "NIGHTJAR_PASSWORD_FILE", "NIGHTJAR_PASSWORD_COMMAND", "NIGHTJAR_NO_CACHE"} {
		t.Setenv(v, "")
	}
	old := repo.IndexCacheMinBlobs
	repo.IndexCacheMinBlobs = 1
	t.Cleanup(func() { repo.IndexCacheMinBlobs = old })

	dir := filepath.Join(t.TempDir(), "repo")
	be, err := backend.Create(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t, be)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Backup(ctx, r, backup.Options{Paths: []string{src}}); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(cache, "nightjar", r.ID())
	file := filepath.Join(folder, "index.cache")

	if _, stderr, code := runCLI(t, "backup", "--no-cache", "-r", dir, src); code != ExitOK {
		t.Fatalf("backup --no-cache: exit %d: %s", code, stderr)
	}
	t.Setenv("NIGHTJAR_NO_CACHE", "1")
	if _, stderr, code := runCLI(t, "backup", "-r", dir, src); code != ExitOK {
		t.Fatalf("backup with NIGHTJAR_NO_CACHE=1: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("an index cache without the cache: %v", err)
	}

	t.Setenv("NIGHTJAR_NO_CACHE", "")
	if _, stderr, code := runCLI(t, "backup", "-r", dir, src); code != ExitOK {
		t.Fatalf("backup: exit %d: %s", code, stderr)
	}
	for p, want := range map[string]fs.FileMode{file: 0o600, folder: 0o700 | fs.ModeDir} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatalf("index cache: %v", err)
		}
		if st.Mode() != want {
			t.Errorf("%s has mode %v, want %v", p, st.Mode(), want)
		}
	}
}
