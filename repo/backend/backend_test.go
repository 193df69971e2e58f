package backend_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
)

// inDir runs the test in a new temporary folder, for relative locations.
func inDir(t *testing.T) string {
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

// makeRepo prepares a repository folder at path (a config object is what
// Open looks for).
func makeRepo(t *testing.T, path string) {
	t.Helper()
	be, err := local.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Save(context.Background(), repo.Handle{Type: repo.ConfigFile, Name: "config"}, []byte("config")); err != nil {
		t.Fatal(err)
	}
	be.Close()
}

func TestOpen(t *testing.T) {
	dir := inDir(t)
	for _, name := range []string{"repo", "with:colon", "C:x"} {
		makeRepo(t, filepath.Join(dir, name))
	}
	tests := []struct {
		name     string
		location string
		want     string // the backend's Location, or "" for an error
		wantErr  error
	}{
		{"absolute path", filepath.Join(dir, "repo"), filepath.Join(dir, "repo"), nil},
		{"relative path", "repo", filepath.Join(dir, "repo"), nil},
		{"local scheme", "local:repo", filepath.Join(dir, "repo"), nil},
		{"local scheme, absolute path", "local:" + filepath.Join(dir, "repo"), filepath.Join(dir, "repo"), nil},
		{"colon after a slash", "./with:colon", filepath.Join(dir, "with:colon"), nil},
		{"colon in a local location", "local:with:colon", filepath.Join(dir, "with:colon"), nil},
		{"one letter before the colon is no scheme", "C:x", filepath.Join(dir, "C:x"), nil},
		{"no repository there", "missing", "", repo.ErrNoRepository},
		{"unknown scheme", "with:colon", "", backend.ErrUnknownScheme},
		{"sftp is not known", "sftp:host:/srv", "", backend.ErrUnknownScheme},
		{"s3 without a bucket", "s3:https://host", "", s3.ErrBadLocation},
		{"scheme without a path", "local:", "", backend.ErrNoPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be, err := backend.Open(context.Background(), tt.location)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("open %q: %v, want %v", tt.location, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("open %q: %v", tt.location, err)
			}
			if c, ok := be.(interface{ Close() error }); ok {
				defer c.Close()
			}
			if be.Location() != tt.want {
				t.Errorf("open %q: location %s, want %s", tt.location, be.Location(), tt.want)
			}
		})
	}
}

// An unknown scheme is one line that names it and the schemes known.
func TestUnknownSchemeMessage(t *testing.T) {
	_, err := backend.Open(context.Background(), "sftp:host:/srv")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{`unknown scheme "sftp"`, "known: local, s3", "sftp:host:/srv"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("message %q has more than one line", msg)
	}
}

func TestCreate(t *testing.T) {
	dir := inDir(t)
	makeRepo(t, filepath.Join(dir, "existing"))
	if err := os.MkdirAll(filepath.Join(dir, "full"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "full", "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		location string
		want     string
		wantErr  error
	}{
		{"new folder", "new", filepath.Join(dir, "new"), nil},
		{"new folder, local scheme", "local:" + filepath.Join(dir, "new2"), filepath.Join(dir, "new2"), nil},
		{"a repository is there", "existing", "", repo.ErrAlreadyExists},
		{"a folder with files", "full", "", repo.ErrNotEmpty},
		{"unknown scheme", "gs:bucket", "", backend.ErrUnknownScheme},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be, err := backend.Create(context.Background(), tt.location)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("create %q: %v, want %v", tt.location, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("create %q: %v", tt.location, err)
			}
			if be.Location() != tt.want {
				t.Errorf("create %q: location %s, want %s", tt.location, be.Location(), tt.want)
			}
			if _, err := os.Stat(filepath.Join(tt.want, "data")); err != nil {
				t.Errorf("create %q made no repository folder: %v", tt.location, err)
			}
		})
	}
}

func TestLockCreation(t *testing.T) {
	dir := inDir(t)
	tests := []struct {
		name     string
		location string
		folder   string // made by the lock, or "" for an error
		wantErr  error
	}{
		{"path", "new", filepath.Join(dir, "new"), nil},
		{"local scheme", "local:" + filepath.Join(dir, "new2"), filepath.Join(dir, "new2"), nil},
		{"unknown scheme", "sftp:host:/srv", "", backend.ErrUnknownScheme},
		{"bad s3 location", "s3:https://host:99999/bucket", "", s3.ErrBadLocation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unlock, err := backend.LockCreation(context.Background(), tt.location, backend.Options{})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("lock creation at %q: %v, want %v", tt.location, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("lock creation at %q: %v", tt.location, err)
			}
			if _, err := os.Stat(tt.folder); err != nil {
				t.Errorf("lock creation at %q made no folder: %v", tt.location, err)
			}
			unlock()
			// Released: it can be taken again at once.
			again, err := backend.LockCreation(context.Background(), tt.location, backend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			again()
		})
	}
}
