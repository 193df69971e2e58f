package backup

import (
	"context"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// testRepositoryOn makes a repository in be with a fast key derivation.
func testRepositoryOn(t *testing.T, be repo.Backend) *repo.Repository {
	t.Helper()
	r, err := repo.Init(context.Background(), be, []byte("pw"), repo.InitOptions{
		KDF:     repo.KDFParams{Algorithm: "argon2id", Time: 1, MemoryKiB: 64, Threads: 1},
		Chunker: repo.ChunkerParams{Min: 16 << 10, Avg: 64 << 10, Max: 256 << 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
