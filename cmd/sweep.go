package cmd

import (
	"context"

	"github.com/dustin/go-humanize"

	"github.com/nightjar-backup/nightjar/repo"
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
