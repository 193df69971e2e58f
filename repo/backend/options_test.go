package backend_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/limit"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
)

// Bandwidth caps in Options put the limit wrapper around the storage that
// OpenWith and CreateWith return, keeping its capabilities; without caps the
// storage is returned bare.
func TestOptionsCapBandwidth(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "repo")
	created, err := backend.CreateWith(ctx, path, backend.Options{UploadLimit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := created.(*limit.Backend); !ok {
		t.Errorf("CreateWith with an upload cap returned %T, want a *limit.Backend", created)
	}
	if err := created.Save(ctx, repo.Handle{Type: repo.ConfigFile, Name: "config"}, []byte("config")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		opts    backend.Options
		limited bool
	}{
		{"no caps", backend.Options{}, false},
		{"download cap", backend.Options{DownloadLimit: 1 << 20}, true},
		{"both caps", backend.Options{UploadLimit: 1 << 20, DownloadLimit: 1 << 20}, true},
	} {
		be, err := backend.OpenWith(ctx, path, tt.opts)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		_, limited := be.(*limit.Backend)
		if limited != tt.limited {
			t.Errorf("%s: OpenWith returned %T", tt.name, be)
		}
		if _, ok := repo.Capability[*local.Backend](be); !ok {
			t.Errorf("%s: the local backend is not reachable through %T", tt.name, be)
		}
		if _, ok := repo.Capability[repo.ProcessLocker](be); !ok {
			t.Errorf("%s: ProcessLocker lost", tt.name)
		}
	}
}
