package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Counters of a prune run (a repository's maintenance), and of the prune
// of a retention run.
const (
	CounterPacksDeleted       = "packs_deleted"       // wholly unused packs deleted
	CounterPacksRepacked      = "packs_repacked"      // partly unused packs whose used blobs were rewritten, then deleted
	CounterPacksWritten       = "packs_written"       // new packs of the repacked blobs
	CounterBytesFreed         = "bytes_freed"         // sizes of every pack deleted, leftovers too
	CounterBytesWritten       = "bytes_written"       // bytes of the new packs and index files
	CounterUnusedLeft         = "bytes_unused_left"   // unused bytes that stay, within the max-unused limit
	CounterLeftoversDeleted   = "leftovers_deleted"   // packs of interrupted backups, old enough, deleted
	CounterLeftoversKept      = "leftovers_kept"      // such packs too young to delete
	CounterPacksKeptYoung     = "packs_kept_young"    // packs to delete or repack, kept as too young (storage with leased locks)
	CounterForgetsCompleted   = "forgets_completed"   // snapshots of an interrupted forget removed first
	CounterBlobsUsed          = "blobs_used"          // indexed blobs the snapshots use
	CounterBlobsUnused        = "blobs_unused"        // indexed blobs (and extra copies) nothing uses
	CounterSnapshotsRemaining = "snapshots_remaining" // snapshots whose data stays
)

// CodeInvalidManifest is a prune (of a prune or retention run) stopped by
// a snapshot or tree it could not read: it deleted no data.
const CodeInvalidManifest = "INVALID_MANIFEST"

// pruneRun is a repository's maintenance: repo.Prune with restic's
// defaults (at most 10% unused data stays, no bound on repacking, the
// default age of leftovers). Prune takes the exclusive lock by trying: a
// busy repository is class busy, and retried. The scheduler starts it only
// when no run of the repository runs, and holds their runs meanwhile.
func (e *Executor) pruneRun(ctx context.Context, job pass.JobDef, progress func(pass.Progress)) (pass.Result, error) {
	var res pass.Result
	r, err := e.openRepository(ctx, job, e.Open)
	if err != nil {
		return res, err
	}
	defer r.Close()
	res.Figures.Counters = map[string]int64{}
	sweepSortFiles(&res)
	if err := prune(ctx, r, func(current string) { progress(pass.Progress{Current: current}) }, res.Figures.Counters); err != nil {
		return res, fmt.Errorf("prune of repository %s: %w", job.Repository, err)
	}
	return res, nil
}

// prune runs repo.Prune with restic's defaults (at most DefaultMaxUnused
// unused data stays, no bound on repacking, the default age of
// leftovers) for a prune or retention run: it tells report each phase
// (one call at a time, none once it has returned) and adds its figures
// to counters. A snapshot or tree it cannot read is class integrity, code
// INVALID_MANIFEST: it deleted no data.
func prune(ctx context.Context, r *repo.Repository, report func(current string), counters map[string]int64) error {
	var mu sync.Mutex
	progress := func(p repo.PruneProgress) {
		mu.Lock()
		defer mu.Unlock()
		if report == nil {
			return
		}
		current := "prune: " + p.Phase
		if p.Total > 0 {
			current += fmt.Sprintf(" %d of %d", p.Done, p.Total)
		}
		report(current)
	}
	out, err := r.Prune(ctx, repo.PruneOptions{MaxUnused: repo.DefaultMaxUnused, Progress: progress})
	// A report still under way ends before this returns, and none comes
	// after: Execute must not call progress once it has returned.
	mu.Lock()
	report = nil
	mu.Unlock()
	if errors.Is(err, repo.ErrInvalidManifest) {
		return &pass.ClassError{Class: pass.ClassIntegrity, Code: CodeInvalidManifest, Err: fmt.Errorf("%w (no data was deleted)", err)}
	}
	if err != nil {
		return Classify(err)
	}
	counters[CounterPacksDeleted] = int64(out.PacksDeleted)
	counters[CounterPacksRepacked] = int64(out.PacksRepacked)
	counters[CounterPacksWritten] = int64(out.PacksWritten)
	counters[CounterBytesFreed] = out.BytesFreed
	counters[CounterBytesWritten] = out.BytesWritten
	counters[CounterUnusedLeft] = out.UnusedLeft
	counters[CounterLeftoversDeleted] = int64(out.LeftoversDeleted)
	counters[CounterLeftoversKept] = int64(out.LeftoversKept)
	counters[CounterPacksKeptYoung] = int64(out.PacksKeptYoung)
	counters[CounterForgetsCompleted] = int64(len(out.ForgetsCompleted))
	counters[CounterBlobsUsed] = out.BlobsUsed
	counters[CounterBlobsUnused] = out.BlobsUnused
	counters[CounterSnapshotsRemaining] = int64(out.Snapshots)
	return nil
}
