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
			p := ProbeRepository(context.Background(), location, tt.password)
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
