package restore

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/nightjar-backup/nightjar/repo"
)

// Progress holds the running figures of a restore, for whoever shows them
// while it runs. The restore only adds to atomic counters (one add per
// chunk written and per file, never a lock), and Read may be called at any
// time from any goroutine. A Progress serves one restore.
type Progress struct {
	filesDone     atomic.Int64 // regular files finished: in place, linked, or given up
	bytesDone     atomic.Int64 // bytes of their content written (holes included), or linked
	filesSkipped  atomic.Int64 // regular files given up (counted in filesDone too)
	bytesSkipped  atomic.Int64 // their size in the snapshot
	filesVerified atomic.Int64 // files read back by verify
	bytesVerified atomic.Int64
	verifying     atomic.Bool

	totalFiles atomic.Int64 // regular files the restore has to write
	totalBytes atomic.Int64 // and their bytes
	totalKnown atomic.Bool
}

// ProgressFigures is one reading of a Progress.
type ProgressFigures struct {
	FilesDone int64 // regular files finished: restored, or given up
	BytesDone int64 // bytes of their content written
	// FilesSkipped counts the finished files that were given up (a local
	// error, damage in the repository), BytesSkipped their size.
	FilesSkipped int64
	BytesSkipped int64
	TotalFiles   int64 // regular files to restore (meaningful once TotalKnown)
	TotalBytes   int64 // their bytes
	TotalKnown   bool
	// Verifying is set once every file is in place and Options.Verify
	// reads them back; FilesVerified and BytesVerified count that.
	Verifying     bool
	FilesVerified int64
	BytesVerified int64
}

// Read returns the figures as they are now.
func (p *Progress) Read() ProgressFigures {
	return ProgressFigures{
		FilesDone:     p.filesDone.Load(),
		BytesDone:     p.bytesDone.Load(),
		FilesSkipped:  p.filesSkipped.Load(),
		BytesSkipped:  p.bytesSkipped.Load(),
		TotalFiles:    p.totalFiles.Load(),
		TotalBytes:    p.totalBytes.Load(),
		TotalKnown:    p.totalKnown.Load(),
		Verifying:     p.verifying.Load(),
		FilesVerified: p.filesVerified.Load(),
		BytesVerified: p.bytesVerified.Load(),
	}
}

// settle makes the total known once every file is in place: when the
// count beside the restore had not finished, the total is what was done.
func (p *Progress) settle() {
	if p.totalKnown.Load() {
		return
	}
	p.totalFiles.Store(p.filesDone.Load())
	p.totalBytes.Store(p.bytesDone.Load())
	p.totalKnown.Store(true)
}

// count sets the total. A snapshot made by a backup and restored whole has
// it in its record's summary; otherwise (include or exclude rules, a
// record without a summary) the restore's walk is made once more beside
// the restore, counting the files it selects. It returns when the total is
// known or ctx ends (leaving it unknown).
func (rs *restorer) count(ctx context.Context, s *repo.Snapshot) {
	p := rs.prog
	if rs.opts.Include == nil && rs.opts.Exclude == nil && !s.Summary.Finished.IsZero() {
		sum := s.Summary
		p.totalFiles.Store(sum.FilesNew + sum.FilesChanged + sum.FilesUnchanged)
		p.totalBytes.Store(sum.TotalSize)
		p.totalKnown.Store(true)
		return
	}
	err := rs.r.Walk(ctx, s.Tree, rs.walkOptions(), repo.WalkVisitor{
		TreeError: func(_ *repo.WalkEntry, _ repo.ID, err error) error {
			if errors.Is(err, repo.ErrStorageUnavailable) {
				// The count stops; the restore's own reads decide
				// whether the restore does.
				return err
			}
			return nil // the restore reports it
		},
		Node: func(e *repo.WalkEntry) error {
			if !e.Unsafe && e.Node.Type == repo.NodeFile {
				p.totalFiles.Add(1)
				p.totalBytes.Add(int64(e.Node.Size))
			}
			return nil
		},
	})
	if err == nil {
		p.totalKnown.Store(true)
	}
}
