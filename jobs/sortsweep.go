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
	CounterSortFilesOthers     = "sort_files_other_users" // another user's: left to that user, not a failure
)

// sweepSortFiles removes the sorted runs that killed nightjar commands
// left in the temporary folder (extsort.Sweep: never those of a sort that
// still runs, in any process, nor another user's) and counts in f what it
// removed and what it left. Files outside the run's repository are no
// reason to call the run partial: they are counters, not skipped objects,
// and a sweep that fails never fails the run; its failure is a line of
// the run's output (runs show), and counted (at least one: a folder that
// could not be listed has no files to count).
func sweepSortFiles(res *pass.Result) {
	f := &res.Figures
	sw, err := extsort.Sweep("")
	f.Counters[CounterSortFilesRemoved] += int64(sw.Runs)
	if err != nil {
		f.Counters[CounterSortFilesNotRemoved] += int64(max(sw.Failed, 1))
		res.Output += "warning: sort files of killed nightjar commands were not all swept: " + err.Error() + "\n"
	}
	if sw.Older > 0 {
		f.Counters[CounterSortFilesOlder] += int64(sw.Older)
	}
	if sw.Others > 0 {
		f.Counters[CounterSortFilesOthers] += int64(sw.Others)
	}
}
