package jobs

import (
	"github.com/nightjar-backup/nightjar/repo/extsort"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Counters of a prune or retention run for the sorted runs that killed
// checks and prunes left in the temporary folder, swept before it sorts.
// Only the first is always there.
const (
	CounterSortFilesRemoved    = "sort_files_removed"     // removed: their process had ended
	CounterSortFilesNotRemoved = "sort_files_not_removed" // of ended processes, but removing or judging them failed
	CounterSortFilesOlder      = "sort_files_older"       // named by a nightjar before 2026-12-02, which took no lock: left
)

// sweepSortFiles removes the sorted runs that killed checks and prunes
// left in the temporary folder (extsort.Sweep: never those of a sort that
// still runs, in any process) and counts in f what it removed and what it
// left. Files outside the run's repository are no reason to call the run
// partial: they are counters, not skipped objects, and a sweep that fails
// never fails the run.
func sweepSortFiles(f *pass.Figures) {
	sw, _ := extsort.Sweep("") // what failed is counted in sw.Failed
	f.Counters[CounterSortFilesRemoved] += int64(sw.Runs)
	if sw.Failed > 0 {
		f.Counters[CounterSortFilesNotRemoved] += int64(sw.Failed)
	}
	if sw.Older > 0 {
		f.Counters[CounterSortFilesOlder] += int64(sw.Older)
	}
}
