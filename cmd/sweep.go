package cmd

import (
	"context"
	"os"

	"github.com/dustin/go-humanize"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/extsort"
)

// sweepTemp removes the temporary files of interrupted writes whose
// writer is provably gone (repo.Repository.SweepTemp), says how many and
// how big, and returns what it did for the command's JSON (nil: nothing
// was there). A sweep that fails is a warning: the command goes on.
func sweepTemp(ctx context.Context, p *printer, r *repo.Repository) *repo.TempSweep {
	sw, err := r.SweepTemp(ctx)
	if err != nil {
		p.Warnf("temporary files of interrupted writes were not swept: %v", err)
	}
	if sw == (repo.TempSweep{}) {
		return nil
	}
	if sw.Removed > 0 {
		p.Printf("removed %d temporary files (%s) that interrupted writes left in tmp/\n", sw.Removed, humanize.IBytes(uint64(sw.BytesRemoved)))
	}
	return &sw
}

// sweepSortRuns removes the sorted runs that killed nightjar commands
// (checks, prunes, index-cache builds) left in the temporary folder
// (extsort.Sweep: never those of a sort that still runs, nor another
// user's) and says so on stderr. A sweep that fails is a warning of one
// line: the command goes on.
func sweepSortRuns(p *printer) {
	dir := os.TempDir()
	sw, err := extsort.Sweep(dir)
	if err != nil {
		p.Warnf("sort files of killed nightjar commands in %s were not all swept: %v", dir, err)
	}
	if sw.Runs > 0 {
		p.Warnf("removed %d sort files (%s) that killed nightjar commands left in %s", sw.Runs, humanize.IBytes(uint64(sw.Bytes)), dir)
	}
	if sw.Older > 0 {
		p.Warnf("%d sort files of an older nightjar (nightjar-sort-*.run) are in %s: delete them once no nightjar runs", sw.Older, dir)
	}
}
