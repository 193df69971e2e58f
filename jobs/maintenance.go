package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Counters of a prune run (a repository's maintenance).
const (
	CounterPacksDeleted       = "packs_deleted"       // wholly unused packs deleted
	CounterPacksRepacked      = "packs_repacked"      // partly unused packs whose used blobs were rewritten, then deleted
	CounterPacksWritten       = "packs_written"       // new packs of the repacked blobs
	CounterBytesFreed         = "bytes_freed"         // sizes of every pack deleted, leftovers too
	CounterBytesWritten       = "bytes_written"       // bytes of the new packs and index files
	CounterUnusedLeft         = "bytes_unused_left"   // unused bytes that stay, within the max-unused limit
	CounterLeftoversDeleted   = "leftovers_deleted"   // packs of interrupted backups, old enough, deleted
	CounterLeftoversKept      = "leftovers_kept"      // such packs too young to delete
	CounterForgetsCompleted   = "forgets_completed"   // snapshots of an interrupted forget removed first
	CounterBlobsUsed          = "blobs_used"          // indexed blobs the snapshots use
	CounterBlobsUnused        = "blobs_unused"        // indexed blobs (and extra copies) nothing uses
	CounterSnapshotsRemaining = "snapshots_remaining" // snapshots whose data stays
)

// CodeInvalidManifest is a prune stopped by a snapshot or tree it could
// not read: it deleted nothing.
const CodeInvalidManifest = "INVALID_MANIFEST"

// pruneRun is a repository's maintenance: repo.Prune with restic's
// defaults (at most 10% unused data stays, no bound on repacking, the
// default age of leftovers). Prune takes the exclusive lock by trying: a
// busy repository is class busy, and retried. The scheduler starts it only
// when no run of the repository runs, and holds their runs meanwhile.
func (e *Executor) pruneRun(ctx context.Context, job pass.JobDef, progress func(pass.Progress)) (pass.Result, error) {
	var res pass.Result
	r, err := e.Open(ctx, job.Repository)
	if err != nil {
		return res, Classify(fmt.Errorf("open repository %s: %w", job.Repository, err))
	}
	defer r.Close()
	var mu sync.Mutex // progress takes one call at a time
	report := func(p repo.PruneProgress) {
		mu.Lock()
		defer mu.Unlock()
		current := "prune: " + p.Phase
		if p.Total > 0 {
			current += fmt.Sprintf(" %d of %d", p.Done, p.Total)
		}
		progress(pass.Progress{Current: current})
	}
	out, err := r.Prune(ctx, repo.PruneOptions{MaxUnused: repo.DefaultMaxUnused, Progress: report})
	// A report still under way ends before this returns, and none comes
	// after: Execute must not call progress once it has returned.
	mu.Lock()
	progress = func(pass.Progress) {}
	mu.Unlock()
	if errors.Is(err, repo.ErrInvalidManifest) {
		return res, &pass.ClassError{Class: pass.ClassIntegrity, Code: CodeInvalidManifest,
			Err: fmt.Errorf("prune of repository %s: %w", job.Repository, err)}
	}
	if err != nil {
		return res, Classify(fmt.Errorf("prune of repository %s: %w", job.Repository, err))
	}
	res.Figures.Counters = map[string]int64{
		CounterPacksDeleted:       int64(out.PacksDeleted),
		CounterPacksRepacked:      int64(out.PacksRepacked),
		CounterPacksWritten:       int64(out.PacksWritten),
		CounterBytesFreed:         out.BytesFreed,
		CounterBytesWritten:       out.BytesWritten,
		CounterUnusedLeft:         out.UnusedLeft,
		CounterLeftoversDeleted:   int64(out.LeftoversDeleted),
		CounterLeftoversKept:      int64(out.LeftoversKept),
		CounterForgetsCompleted:   int64(len(out.ForgetsCompleted)),
		CounterBlobsUsed:          out.BlobsUsed,
		CounterBlobsUnused:        out.BlobsUnused,
		CounterSnapshotsRemaining: int64(out.Snapshots),
	}
	return res, nil
}
