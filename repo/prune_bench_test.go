package repo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// repackBenchMiB is how many MiB of used blobs (their plaintext)
// BenchmarkPruneRepack copies: about as many again are unused, mixed
// into the same packs.
const repackBenchMiB = 64

// repackBenchBlobSize is the size of its blobs.
const repackBenchBlobSize = 256 << 10

// BenchmarkPruneRepack measures a prune that repacks every pack of a
// repository in memory: 2 x repackBenchMiB MiB of 256 KiB blobs (half
// of them compressible), each used or unused at random, so that every
// pack is about half used and is repacked with MaxUnused 0. Each
// iteration prunes a fresh copy of the repository; making the copy is not
// timed. The bytes per second are of used blobs copied.
func BenchmarkPruneRepack(b *testing.B) {
	ctx := context.Background()
	src := repackBenchRepo(b)
	b.SetBytes(repackBenchMiB << 20)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		be := cloneMemory(b, src)
		r := openLater(b, be)
		b.StartTimer()
		res, err := r.Prune(ctx, repo.PruneOptions{TempDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if want := int64(repackBenchMiB << 20 / repackBenchBlobSize); res.BlobsCopied < want {
			b.Fatalf("repacked %d packs, copying %d blobs; want every data pack, at least %d blobs", res.PacksRepacked, res.BlobsCopied, want)
		}
	}
}

// repackBenchRepo makes BenchmarkPruneRepack's repository: one snapshot
// that uses half of its data blobs.
func repackBenchRepo(b *testing.B) *memory.Backend {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(b, be)
	rng := rand.New(rand.NewPCG(7, 7))
	const size = repackBenchBlobSize
	var nodes []repo.Node
	var tree repo.ID
	written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		for i := 0; len(nodes) < repackBenchMiB<<20/size; i++ {
			var data []byte
			if i%2 == 0 {
				data = compressible(size)
				copy(data, fmt.Sprintf("blob %d", i))
			} else {
				data = random(uint64(i), size)
			}
			id := r.BlobID(data)
			if _, err := w.SaveBlob(ctx, repo.DataBlob, id, data); err != nil {
				return err
			}
			if rng.IntN(2) == 0 {
				nodes = append(nodes, repo.Node{Name: fmt.Sprintf("f%06d", i), Type: repo.NodeFile, Mode: 0o644,
					Size: size, Content: []repo.ID{id}})
			}
		}
		var err error
		tree, err = w.SaveTree(ctx, &repo.Tree{Nodes: nodes})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	snap := &repo.Snapshot{ID: "bench", Time: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Hostname: "h",
		Paths: []string{"/data"}, Tree: tree}
	if err := written.SaveSnapshot(ctx, snap); err != nil {
		b.Fatal(err)
	}
	return be
}

// cloneMemory copies every object of src into a new memory backend.
func cloneMemory(b *testing.B, src *memory.Backend) *memory.Backend {
	dst := memory.New()
	store(b, dst, repo.Handle{Type: repo.ConfigFile, Name: "config"}, load(b, src, repo.Handle{Type: repo.ConfigFile, Name: "config"}))
	for _, ft := range []repo.FileType{repo.KeyFile, repo.PackFile, repo.IndexFile, repo.SnapshotFile} {
		for _, name := range names(b, src, ft) {
			h := repo.Handle{Type: ft, Name: name}
			store(b, dst, h, load(b, src, h))
		}
	}
	got, want := names(b, dst, repo.PackFile), names(b, src, repo.PackFile)
	slices.Sort(got)
	slices.Sort(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		b.Fatal("clone of the repository lacks packs")
	}
	return dst
}
