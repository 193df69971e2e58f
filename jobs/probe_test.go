package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/chunker"
)

var probeKDF = repo.KDFParams{Algorithm: "argon2id", Time: 1, MemoryKiB: 64, Threads: 1}

// newProbedRepository makes a repository in a new folder and returns the
// folder.
func newProbedRepository(t *testing.T, insecure bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	be, err := backend.Create(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cp := chunker.DefaultParams
	r, err := repo.Init(context.Background(), be, []byte("right"), repo.InitOptions{Insecure: insecure, KDF: probeKDF,
		Chunker: repo.ChunkerParams{Min: cp.Min, Avg: cp.Avg, Max: cp.Max}})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	return dir
}

func TestProbeRepository(t *testing.T) {
	const secretFile = "/etc/nightjar/secret-password-file"
	right := func() ([]byte, error) { return []byte("right"), nil }
	wrong := func() ([]byte, error) { return []byte("hunter2"), nil }
	unreadable := func() ([]byte, error) {
		return nil, errors.New("read password file: open " + secretFile + ": permission denied")
	}
	tests := []struct {
		name      string
		setup     func(t *testing.T) string // the location
		password  func() ([]byte, error)
		reachable bool
		encrypted string // "yes", "no" or "unknown"
		errorHas  string
	}{
		{"encrypted and writable", func(t *testing.T) string { return newProbedRepository(t, false) }, right, true, "yes", ""},
		{"unencrypted", func(t *testing.T) string { return newProbedRepository(t, true) }, unreadable, true, "no", ""},
		{"wrong password", func(t *testing.T) string { return newProbedRepository(t, false) }, wrong, false, "yes", "wrong password"},
		{"password source unreadable", func(t *testing.T) string { return newProbedRepository(t, false) }, unreadable, false, "yes", "could not be read from its source"},
		{"folder removed", func(t *testing.T) string {
			dir := newProbedRepository(t, false)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			return dir
		}, right, false, "unknown", "no repository here"},
		{"folder replaced by a file", func(t *testing.T) string {
			dir := newProbedRepository(t, false)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dir, []byte("not a repository"), 0o600); err != nil {
				t.Fatal(err)
			}
			return dir
		}, right, false, "unknown", "not a directory"},
		{"temporary folder replaced by a file: no write", func(t *testing.T) string {
			dir := newProbedRepository(t, false)
			tmp := filepath.Join(dir, "tmp")
			if err := os.RemoveAll(tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(tmp, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return dir
		}, right, false, "yes", "write probe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			location := tt.setup(t)
			p := ProbeRepository(context.Background(), location, backend.Options{}, tt.password)
			if p.Reachable != tt.reachable {
				t.Errorf("reachable = %v, want %v (error %q)", p.Reachable, tt.reachable, p.Error)
			}
			encrypted := "unknown"
			if p.EncryptionKnown {
				encrypted = map[bool]string{true: "yes", false: "no"}[p.Encrypted]
			}
			if encrypted != tt.encrypted {
				t.Errorf("encrypted = %s, want %s", encrypted, tt.encrypted)
			}
			if tt.errorHas == "" && p.Error != "" || !strings.Contains(p.Error, tt.errorHas) {
				t.Errorf("error = %q, want one with %q", p.Error, tt.errorHas)
			}
			if strings.Contains(p.Error, secretFile) || strings.Contains(p.Error, "hunter2") || strings.Contains(p.Error, "\n") {
				t.Errorf("error carries a secret or several lines: %q", p.Error)
			}
			if !p.SpaceKnown && tt.encrypted != "unknown" {
				t.Errorf("the free space of a repository's file system was not read")
			}
			if p.SpaceKnown && (p.TotalBytes <= 0 || p.FreeBytes < 0 || p.FreeBytes > p.TotalBytes) {
				t.Errorf("space: %d free of %d", p.FreeBytes, p.TotalBytes)
			}
			if tt.reachable && (!p.SizeKnown || p.SizeBytes <= 0) {
				t.Errorf("the size of a reachable repository was not listed: %v, %d", p.SizeKnown, p.SizeBytes)
			}
			if p.Missing != (tt.name == "folder removed") {
				t.Errorf("missing = %v", p.Missing)
			}
			if tt.reachable {
				entries, err := os.ReadDir(filepath.Join(location, "tmp"))
				if err != nil || len(entries) != 0 {
					t.Errorf("the probe left files in tmp/: %v, %v", entries, err)
				}
			}
		})
	}
}

// A probe's size is the bytes of the repository's objects, as the files
// in its folder hold them: config, keys, packs, indexes, snapshots, but
// not a lock of a process at work nor a temporary file.
func TestProbeRepositorySize(t *testing.T) {
	ctx := context.Background()
	dir := newProbedRepository(t, false)
	be, err := backend.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	objects := map[repo.Handle]int{
		{Type: repo.PackFile, Name: strings.Repeat("ab", 32)}:     5000,
		{Type: repo.PackFile, Name: strings.Repeat("cd", 32)}:     123,
		{Type: repo.IndexFile, Name: strings.Repeat("01", 32)}:    700,
		{Type: repo.SnapshotFile, Name: strings.Repeat("02", 32)}: 300,
		{Type: repo.LockFile, Name: strings.Repeat("03", 32)}:     40, // not counted
	}
	for h, n := range objects {
		if err := be.Save(ctx, h, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tmp", "upload-in-progress"), make([]byte, 999), 0o600); err != nil {
		t.Fatal(err)
	}
	var want, objectsOnly int64
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if top := strings.Split(rel, string(filepath.Separator))[0]; top == "tmp" || top == "locks" {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want += fi.Size()
		if top := strings.Split(rel, string(filepath.Separator))[0]; top != "config" && top != "keys" {
			objectsOnly += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if objectsOnly != 5000+123+700+300 {
		t.Fatalf("the test's objects hold %d bytes, want %d", objectsOnly, 5000+123+700+300)
	}
	p := ProbeRepository(ctx, dir, backend.Options{}, func() ([]byte, error) { return []byte("right"), nil })
	if !p.Reachable || !p.SizeKnown || p.SizeBytes != want {
		t.Errorf("probe: reachable %v, size known %v, %d bytes; want %d (the files but tmp/ and locks/)", p.Reachable, p.SizeKnown, p.SizeBytes, want)
	}
	wrong := ProbeRepository(ctx, dir, backend.Options{}, func() ([]byte, error) { return []byte("wrong"), nil })
	if wrong.SizeKnown {
		t.Errorf("a repository that did not open has a size: %d", wrong.SizeBytes)
	}
}
