package jobs

import (
	"os"
	"strconv"

	"github.com/nightjar-backup/nightjar/repo/extsort"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// CounterSortFilesRemoved is the counter of a prune or retention run for
// the sorted runs of killed checks and prunes that it removed from the
// temporary folder first.
const CounterSortFilesRemoved = "sort_files_removed"

// sweepSortFiles removes the sorted runs that killed checks and prunes
// left in the temporary folder (extsort.Sweep: never those of a sort that
// still runs, in any process) before a prune sorts, counts them in f, and
// makes skipped objects of those it could not remove and of an older
// nightjar's, which it may not judge. It never fails the run.
func sweepSortFiles(f *pass.Figures) {
	dir := os.TempDir()
	sw, err := extsort.Sweep(dir)
	f.Counters[CounterSortFilesRemoved] += int64(sw.Runs)
	if err != nil {
		skip(f, "sort files in "+dir, strconv.Itoa(sw.Failed)+" of killed checks or prunes not removed: "+err.Error())
	}
	if sw.Older > 0 {
		skip(f, "sort files in "+dir, strconv.Itoa(sw.Older)+" named nightjar-sort-*.run by an older nightjar, which took no lock, left: delete them once no nightjar runs")
	}
}
