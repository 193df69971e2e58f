package repo_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// BenchmarkSaveBlob measures the whole write path of new 256 KiB blobs:
// hashing, compression (half of the blobs compress), sealing, packing and
// storing the packs in memory, on all cores.
func BenchmarkSaveBlob(b *testing.B) {
	r := initRepo(b, memory.New())
	ctx := context.Background()
	const size = 256 << 10
	base := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range base {
		base[i] = byte(rng.Uint32())
	}
	b.SetBytes(size)
	_, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		b.RunParallel(func(pb *testing.PB) {
			data := append([]byte(nil), base...)
			n := rng.Uint64()
			for pb.Next() {
				n++
				binary.LittleEndian.PutUint64(data, n) // a new blob each time
				if n%2 == 0 {
					clear(data[8 : size/2]) // compressible half of the time
				} else {
					copy(data[8:size/2], base[8:size/2])
				}
				if _, err := w.SaveBlob(ctx, repo.DataBlob, r.BlobID(data), data); err != nil {
					b.Error(err)
					return
				}
			}
		})
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
