package jobs

import (
	"context"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// CounterSnapshotFilesUnreadable counts the snapshot files of the
// repository that a backup or verify run skipped because they cannot be read.
const CounterSnapshotFilesUnreadable = "snapshot_files_unreadable"

// Counters of a backup run's sweep of temporary files (repo.SweepTemp).
const (
	CounterTempFilesSwept = "temp_files_swept" // left by interrupted writes whose writer is gone: removed
	CounterTempBytesSwept = "temp_bytes_swept"
)

// sweepTemp removes the temporary files of interrupted writes whose writer
// is provably gone and counts them in f; a sweep that fails is a skipped
// object, not a failure of the run.
func sweepTemp(ctx context.Context, r *repo.Repository, f *pass.Figures) {
	sw, err := r.SweepTemp(ctx)
	if err != nil {
		f.Skipped = append(f.Skipped, pass.Skipped{Object: "temporary files", Reason: "not swept: " + err.Error()})
	}
	if sw.Removed == 0 {
		return
	}
	if f.Counters == nil {
		f.Counters = map[string]int64{}
	}
	f.Counters[CounterTempFilesSwept] += int64(sw.Removed)
	f.Counters[CounterTempBytesSwept] += sw.BytesRemoved
}

// reportUnreadable adds the snapshot files r skipped so far, unreadable,
// to a run's figures: counted, and each a skipped object with its reason,
// so that the run's message names them. A backup goes on without them
// (they cannot be its parent); check reports them as damage.
func reportUnreadable(r *repo.Repository, f *pass.Figures) {
	list := r.UnreadableSnapshots()
	if len(list) == 0 {
		return
	}
	if f.Counters == nil {
		f.Counters = map[string]int64{}
	}
	f.Counters[CounterSnapshotFilesUnreadable] = int64(len(list))
	for _, u := range list {
		f.Skipped = append(f.Skipped, pass.Skipped{Object: u.File(), Reason: "unreadable snapshot file, skipped: " + u.Err.Error()})
	}
}
