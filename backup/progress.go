package backup

import (
	"context"
	"path/filepath"
	"sync/atomic"

	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/repo"
)

// Progress holds the running figures of a backup, for whoever shows them
// while it runs (a terminal line, JSON status objects, a scheduled run's
// heartbeat). The archiver only adds to atomic counters (one add per file,
// per read and per skipped entry, never a lock), and Read may be called at
// any time from any goroutine. A Progress serves one backup.
type Progress struct {
	filesDone atomic.Int64 // regular files read (or failed), or taken from the parent unchanged
	bytesRead atomic.Int64 // bytes read from the sources
	bytesKept atomic.Int64 // bytes of files done without reading: unchanged, or another link of a file read
	skipped   atomic.Int64 // entries that could not be saved

	dirsNew        atomic.Int64 // folders saved that the parent snapshot lacks
	dirsChanged    atomic.Int64 // folders saved whose tree differs from the parent's
	dirsUnmodified atomic.Int64 // folders saved with the parent's very tree

	totalFiles atomic.Int64 // regular files the scanner counted so far
	totalBytes atomic.Int64 // and their bytes
	scanned    atomic.Bool  // the scanner walked every source

	writer  atomic.Pointer[repo.Writer]              // the backup's write session, for the bytes added
	current atomic.Pointer[[]atomic.Pointer[string]] // per file worker: the file it reads; nil: none
}

// ProgressFigures is one reading of a Progress.
type ProgressFigures struct {
	FilesDone  int64 // regular files done: read (or given up), or unchanged since the parent
	BytesDone  int64 // bytes of those files: read, or unchanged
	BytesRead  int64 // bytes read from the sources
	BytesAdded int64 // bytes of packs and index files written to the repository so far
	Skipped    int64 // entries that could not be saved
	TotalFiles int64 // regular files below the sources (so far, until TotalKnown)
	TotalBytes int64 // their bytes
	TotalKnown bool  // the scanner has counted every source (Options.Scan)
	// Current are the files being read now, at most one per file worker.
	Current []string
	// Folders saved, by how they compare with the same folder in the
	// parent snapshot: not there, another tree, the same tree.
	DirsNew, DirsChanged, DirsUnmodified int64
	// New blobs the write session stored so far, and their plaintext
	// bytes before compression (packs written; see BytesAdded).
	DataBlobs, TreeBlobs int
	RawBytesAdded        int64
}

// Read returns the figures as they are now.
func (p *Progress) Read() ProgressFigures {
	f := ProgressFigures{
		FilesDone:  p.filesDone.Load(),
		BytesRead:  p.bytesRead.Load(),
		Skipped:    p.skipped.Load(),
		TotalFiles: p.totalFiles.Load(),
		TotalBytes: p.totalBytes.Load(),
		TotalKnown: p.scanned.Load(),

		DirsNew:        p.dirsNew.Load(),
		DirsChanged:    p.dirsChanged.Load(),
		DirsUnmodified: p.dirsUnmodified.Load(),
	}
	f.BytesDone = f.BytesRead + p.bytesKept.Load()
	if w := p.writer.Load(); w != nil {
		stats := w.Stats()
		f.BytesAdded, f.DataBlobs, f.TreeBlobs, f.RawBytesAdded = stats.Bytes, stats.DataBlobs, stats.TreeBlobs, stats.RawBytes
	}
	if slots := p.current.Load(); slots != nil {
		for i := range *slots {
			if name := (*slots)[i].Load(); name != nil {
				f.Current = append(f.Current, *name)
			}
		}
	}
	return f
}

// savedDir counts a folder saved as tree id, whose tree in the parent
// snapshot was prev (nil: none).
func (p *Progress) savedDir(prev *repo.ID, id repo.ID) {
	switch {
	case prev == nil:
		p.dirsNew.Add(1)
	case *prev == id:
		p.dirsUnmodified.Add(1)
	default:
		p.dirsChanged.Add(1)
	}
}

// start prepares one slot per file worker for the files being read.
func (p *Progress) start(workers int) {
	slots := make([]atomic.Pointer[string], workers)
	p.current.Store(&slots)
}

// reading records that worker reads path ("" when it reads nothing).
func (p *Progress) reading(worker int, path string) {
	slots := p.current.Load()
	if path == "" {
		(*slots)[worker].Store(nil)
		return
	}
	(*slots)[worker].Store(&path)
}

// scan counts the regular files below paths and their bytes into p, as
// the archiver meets them: the same excludes (below a source, not the
// source itself), no symlink followed, unreadable entries left out. It
// marks the total known when it has walked everything, and stops early,
// leaving it unknown, when ctx ends.
func (p *Progress) scan(ctx context.Context, fsys FS, paths []string, exclude *filter.Matcher) {
	for _, source := range paths {
		stack := []string{source}
		for len(stack) > 0 {
			if ctx.Err() != nil {
				return
			}
			path := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			fi, err := fsys.Lstat(path)
			if err != nil {
				continue
			}
			switch {
			case fi.Mode().IsRegular():
				p.totalFiles.Add(1)
				p.totalBytes.Add(fi.Size())
			case fi.IsDir():
				names, err := fsys.ReadDirNames(path)
				if err != nil {
					continue
				}
				for _, name := range names {
					if child := filepath.Join(path, name); exclude == nil || !exclude.Match(excludePath(child)) {
						stack = append(stack, child)
					}
				}
			}
		}
	}
	p.scanned.Store(true)
}
