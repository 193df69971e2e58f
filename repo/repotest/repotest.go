package repotest

import (
	"context"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// FastKDF derives keys in about a millisecond: tests open many
// repositories, and the strength of their key does not matter.
var FastKDF = repo.KDFParams{Algorithm: "argon2id", Time: 1, MemoryKiB: 64, Threads: 1}

// SmallChunks cuts files of a few MiB into many chunks, so that tests
// meet every path of chunked reading and writing.
var SmallChunks = repo.ChunkerParams{Min: 16 << 10, Avg: 64 << 10, Max: 256 << 10}

// New initialises an encrypted repository in be with FastKDF and
// SmallChunks, and closes it when the test ends.
func New(tb testing.TB, be repo.Backend) *repo.Repository {
	tb.Helper()
	return NewWithChunks(tb, be, SmallChunks)
}

// NewWithChunks is New with chunks of the given sizes.
func NewWithChunks(tb testing.TB, be repo.Backend, chunks repo.ChunkerParams) *repo.Repository {
	tb.Helper()
	r, err := repo.Init(context.Background(), be, []byte("pw"), repo.InitOptions{KDF: FastKDF, Chunker: chunks})
	if err != nil {
		tb.Fatalf("init test repository: %v", err)
	}
	tb.Cleanup(r.Close)
	return r
}
