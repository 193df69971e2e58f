// Command bigrepo makes a repository of many indexed blobs, for
// bench/bigrepo/run.sh, and times opening it:
//
//	bigrepo -dir DIR -make -blobs N   # a repository of N tiny data blobs
//	bigrepo -dir DIR                  # open it and load its index, timed
//
// The password is NIGHTJAR_PASSWORD's, as nightjar itself takes it.
//
// The blobs go through the ordinary write path (repo.Writer), so packs,
// index files (at most 65,536 blobs each) and their sizes are what a
// backup of N small chunks writes; blobs are stored uncompressed, as their
// content is 12 to 16 bytes. One snapshot, "small", holds a folder of ten
// of them as files: the rest are indexed and unused, which check reports
// but does not call damage.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/nightjar-backup/nightjar/bench/internal/cpuprofile"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

const smallFiles = 10

func main() {
	dir := flag.String("dir", "", "the repository's folder")
	create := flag.Bool("make", false, "make the repository")
	blobs := flag.Int("blobs", 1_000_000, "data blobs of the repository made")
	memProfile := flag.String("memprofile", "", "write a heap profile after the index is loaded")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run")
	noCache := flag.Bool("no-cache", false, "open without the local index cache (as nightjar --no-cache)")
	flag.Parse()
	if *dir == "" {
		log.Fatal("bigrepo: -dir is required")
	}
	password := []byte(os.Getenv("NIGHTJAR_PASSWORD"))
	if len(password) == 0 {
		log.Fatal("bigrepo: NIGHTJAR_PASSWORD is empty or not set")
	}
	var err error
	ctx := context.Background()
	stopProfile, err := cpuprofile.Start(*cpuProfile)
	if err != nil {
		log.Fatalf("bigrepo: %v", err)
	}
	defer stopProfile()
	if *create {
		err = makeRepository(ctx, *dir, *blobs, password)
	} else {
		err = openTimed(ctx, *dir, password, *memProfile, !*noCache)
	}
	if err != nil {
		stopProfile()
		log.Fatalf("bigrepo: %v", err)
	}
}

func makeRepository(ctx context.Context, dir string, blobs int, password []byte) error {
	if blobs < smallFiles {
		return fmt.Errorf("-blobs %d: want at least %d", blobs, smallFiles)
	}
	be, err := backend.Create(ctx, dir)
	if err != nil {
		return err
	}
	r, err := repo.Init(ctx, be, password, repo.InitOptions{KDF: repotest.FastKDF, Chunker: repo.ChunkerParams{Min: 512 << 10, Avg: 1 << 20, Max: 8 << 20}})
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.SetCompression(repo.CompressionOff); err != nil {
		return err
	}
	start := time.Now()
	var root repo.ID
	// Sessions of a million blobs each, as a series of backups would.
	const perSession = 1_000_000
	for first := 0; first < blobs; first += perSession {
		_, err = r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
			t := &repo.Tree{}
			for i := first; i < min(first+perSession, blobs); i++ {
				data := fmt.Appendf(nil, "blob %d", i)
				id := r.BlobID(data)
				if _, err := w.SaveBlob(ctx, repo.DataBlob, id, data); err != nil {
					return err
				}
				if i < smallFiles {
					t.Nodes = append(t.Nodes, repo.Node{Name: fmt.Sprintf("f%02d", i), Type: repo.NodeFile, Mode: 0o644,
						Size: uint64(len(data)), Content: []repo.ID{id}, MTime: time.Unix(1_700_000_000, 0).UTC()})
				}
			}
			if first > 0 {
				return nil
			}
			folder, err := w.SaveTree(ctx, t)
			if err != nil {
				return err
			}
			root, err = w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "small", Type: repo.NodeDir, Mode: 0o755,
				Subtree: &folder, MTime: time.Unix(1_700_000_000, 0).UTC()}}})
			return err
		})
		if err != nil {
			return err
		}
		fmt.Printf("%d blobs stored (%.0f s)\n", min(first+perSession, blobs), time.Since(start).Seconds())
	}
	// The snapshot is saved by a session of its own, after its trees are
	// durable (SaveSnapshot needs a finished session).
	written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(context.Context, *repo.Writer) error { return nil })
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	snap := &repo.Snapshot{ID: "small", Time: now, Hostname: "bench", Paths: []string{"/small"}, Tree: root,
		Summary: repo.SnapshotSummary{Started: now}}
	if err := r.LoadIndex(ctx); err != nil {
		return err
	}
	if err := written.SaveSnapshot(ctx, snap); err != nil {
		return err
	}
	fmt.Printf("made %s: %d data blobs, snapshot %q of %d files\n", dir, blobs, snap.ID, smallFiles)
	return nil
}

// openTimed opens the repository and loads its index, and prints how long
// that took and the heap it holds.
func openTimed(ctx context.Context, dir string, password []byte, memProfile string, useCache bool) error {
	be, err := backend.Open(ctx, dir)
	if err != nil {
		return err
	}
	start := time.Now()
	r, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return password, nil }})
	if err != nil {
		return err
	}
	defer r.Close()
	if useCache {
		// As nightjar opens it: the index cache in the user's cache folder.
		cacheDir, err := os.UserCacheDir()
		if err != nil {
			return err
		}
		r.UseIndexCache(filepath.Join(cacheDir, "nightjar"), func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "warning: "+format+"\n", args...)
		})
	}
	opened := time.Now()
	if err := r.LoadIndex(ctx); err != nil {
		return err
	}
	loaded := time.Now()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("open %.2f s, load index %.2f s: %d blobs, heap in use %d MiB\n",
		opened.Sub(start).Seconds(), loaded.Sub(opened).Seconds(), r.Index().Len(), ms.HeapInuse>>20)
	if memProfile != "" {
		f, err := os.Create(memProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.WriteHeapProfile(f)
	}
	return nil
}
