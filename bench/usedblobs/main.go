// Command usedblobs measures prune's set of used blobs (repo.BlobUsage) and
// prune itself (repo.Prune) on a generated repository, for
// bench/usedblobs/run.sh:
//
//	usedblobs -dir DIR -make -blobs N   # a repository of N data blobs
//	usedblobs -dir DIR                  # BlobUsage of its newer snapshot
//	usedblobs -dir DIR -prune           # forget "old", then Prune (-max-unused 0)
//
// The repository holds N tiny data blobs, one file each, in folders of
// 1000 files (split trees), and two snapshots: "old" holds every folder,
// "new" all but the first tenth, so that BlobUsage of "new" finds about
// nine in ten blobs used, and a prune after forgetting "old" has a tenth
// of the blobs to delete or repack away. Run under /usr/bin/time -v for
// the peak RSS.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/bench/internal/cpuprofile"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

var password = []byte("usedblobs")

const perFolder = 1000

func main() {
	dir := flag.String("dir", "", "the repository's folder")
	create := flag.Bool("make", false, "make the repository")
	prune := flag.Bool("prune", false, "forget snapshot old, then prune")
	maxUnused := flag.String("max-unused", "0", "prune's --max-unused (0: repack every partly used pack)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	blobs := flag.Int("blobs", 1_000_000, "data blobs of the repository made")
	flag.Parse()
	if *dir == "" {
		log.Fatal("usedblobs: -dir is required")
	}
	ctx := context.Background()
	stopProfile, err := cpuprofile.Start(*cpuProfile)
	if err != nil {
		log.Fatalf("usedblobs: %v", err)
	}
	defer stopProfile()
	switch {
	case *create:
		err = makeRepository(ctx, *dir, *blobs)
	case *prune:
		var limit repo.UnusedLimit
		if limit, err = repo.ParseUnusedLimit(*maxUnused); err == nil {
			err = forgetAndPrune(ctx, *dir, limit)
		}
	default:
		err = usage(ctx, *dir)
	}
	if err != nil {
		stopProfile()
		log.Fatalf("usedblobs: %v", err)
	}
}

func makeRepository(ctx context.Context, dir string, blobs int) error {
	be, err := backend.Create(ctx, dir)
	if err != nil {
		return err
	}
	// The chunker never runs here: its sizes are the usual ones.
	r, err := repo.Init(ctx, be, password, repo.InitOptions{KDF: repotest.FastKDF, Chunker: repo.ChunkerParams{Min: 512 << 10, Avg: 1 << 20, Max: 8 << 20}})
	if err != nil {
		return err
	}
	defer r.Close()
	var folders []repo.Node
	_, err = r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		for start := 0; start < blobs; start += perFolder {
			t := &repo.Tree{}
			for i := start; i < min(start+perFolder, blobs); i++ {
				data := fmt.Appendf(nil, "blob %d", i)
				id := r.BlobID(data)
				if _, err := w.SaveBlob(ctx, repo.DataBlob, id, data); err != nil {
					return err
				}
				t.Nodes = append(t.Nodes, repo.Node{Name: fmt.Sprintf("f%07d", i), Type: repo.NodeFile, Mode: 0o644,
					Size: uint64(len(data)), Content: []repo.ID{id}})
			}
			id, err := w.SaveTree(ctx, t)
			if err != nil {
				return err
			}
			folders = append(folders, repo.Node{Name: fmt.Sprintf("d%07d", start/perFolder), Type: repo.NodeDir, Mode: 0o755, Subtree: &id})
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Each snapshot's root is stored in a session of its own, after the
	// folders it names are durable.
	for _, s := range []struct {
		name  string
		nodes []repo.Node
	}{{"old", folders}, {"new", folders[len(folders)/10:]}} {
		var root repo.ID
		written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
			root, err = w.SaveTree(ctx, &repo.Tree{Nodes: s.nodes})
			return err
		})
		if err != nil {
			return err
		}
		now := time.Now().UTC()
		snap := &repo.Snapshot{ID: s.name, Time: now, Hostname: "bench", Paths: []string{"/bench"}, Tree: root,
			Summary: repo.SnapshotSummary{Started: now}}
		if err := written.SaveSnapshot(ctx, snap); err != nil {
			return err
		}
	}
	fmt.Printf("made %s: %d data blobs in %d folders\n", dir, blobs, len(folders))
	return nil
}

func usage(ctx context.Context, dir string) error {
	be, err := backend.Open(ctx, dir)
	if err != nil {
		return err
	}
	r, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return password, nil }})
	if err != nil {
		return err
	}
	defer r.Close()
	snap, err := r.LoadSnapshot(ctx, "new")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "usedblobs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	used, unused := 0, 0
	stats, err := r.BlobUsage(ctx, []*repo.Snapshot{snap}, repo.UsageOptions{TempDir: tmp}, func(b repo.BlobUse) error {
		if b.Used {
			used++
		} else {
			unused++
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Printf("%d blobs used, %d unused, %d trees walked\n", used, unused, stats.Trees)
	fmt.Printf("peak RSS after BlobUsage %s (it streams the index: no LoadIndex)\n", peakRSS())
	return nil
}

// forgetAndPrune forgets snapshot "old" and prunes, without loading the
// index (Prune streams it). Its clock is past the leftover age, so that
// packs just made are old enough to delete or repack, as for a prune that
// runs hours after the backups.
func forgetAndPrune(ctx context.Context, dir string, maxUnused repo.UnusedLimit) error {
	be, err := backend.Open(ctx, dir)
	if err != nil {
		return err
	}
	later := func() time.Time { return time.Now().Add(repo.DefaultLeftoverAge + time.Hour) }
	r, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return password, nil }, Now: later})
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = r.Forget(ctx, repo.ForgetOptions{
		Plan: func(snaps []*repo.Snapshot, _ map[string]bool) ([]string, error) {
			for _, s := range snaps {
				if s.ID == "old" {
					return []string{"old"}, nil
				}
			}
			return nil, nil // forgotten by an earlier run
		},
		GroupKey: func(*repo.Snapshot) string { return "" },
	})
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "usedblobs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	res, err := r.Prune(ctx, repo.PruneOptions{MaxUnused: maxUnused, TempDir: tmp})
	if err != nil {
		return err
	}
	fmt.Printf("prune in %s: %d blobs used, %d unused; %d packs deleted, %d repacked (%d blobs copied), %d written; %d index files replaced; %.1f MiB freed, %.1f MiB unused left\n",
		time.Since(start).Round(time.Millisecond), res.BlobsUsed, res.BlobsUnused, res.PacksDeleted, res.PacksRepacked,
		res.BlobsCopied, res.PacksWritten, res.IndexFilesReplaced, float64(res.BytesFreed)/(1<<20), float64(res.UnusedLeft)/(1<<20))
	fmt.Printf("peak RSS after Prune %s\n", peakRSS())
	return nil
}

// peakRSS is the process's peak resident set so far (Linux's VmHWM), or
// "?" where /proc does not say.
func peakRSS() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
