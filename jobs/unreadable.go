package jobs

import (
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// CounterSnapshotFilesUnreadable counts the snapshot files of the
// repository that a backup run skipped because they cannot be read.
const CounterSnapshotFilesUnreadable = "snapshot_files_unreadable"

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
