package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nightjar-backup/nightjar/backup/limit"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/chunker"
)

// StreamOptions describe the backup of one stream (standard input, a
// command's output) as one file.
type StreamOptions struct {
	// Name is the file's name in the snapshot: a plain name, no slash.
	// The snapshot's path is "/" + Name, and its root tree holds the file.
	Name     string
	Tags     []string
	Limiter  *limit.Limiter // nil: unlimited
	Time     time.Time      // the snapshot's time; zero: when the backup started
	Run      int64          // the scheduled run that makes it, stored in the snapshot; 0: none
	Hostname string         // "": os.Hostname
	Version  string
	Now      func() time.Time
	// Progress, if set, counts the bytes read and added as the stream is
	// stored, for a progress display (the total is unknown).
	Progress *Progress
}

// StreamPath is the path in the snapshot of a stream backed up as name.
func StreamPath(name string) string { return "/" + name }

// ValidStreamName reports why name cannot name a stream's file ("": it
// can): a plain file name, not "." or "..", without a slash or a NUL.
func ValidStreamName(name string) error {
	switch {
	case name == "":
		return errors.New("empty file name")
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a file name", name)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%q: want a plain file name without a slash", name)
	case len(name) > 255:
		return fmt.Errorf("file name of %d bytes: at most 255", len(name))
	}
	return nil
}

// Stream makes one snapshot of the bytes src gives, as a file named
// opts.Name (mode 0600, owned by the user that runs the backup, modified
// now, its size what was read), without a temporary file: each chunk is
// stored as it is read. An error from src (such as a command that exited
// with a failure) fails the backup and no snapshot is saved, so that data
// cut short never looks like a good snapshot. It writes in one write
// session, which adopts the packs of interrupted backups first.
func Stream(ctx context.Context, r Repository, src io.Reader, opts StreamOptions) (*Result, error) {
	if err := ValidStreamName(opts.Name); err != nil {
		return nil, fmt.Errorf("stream name: %w", err)
	}
	started := snapshotDefaults(&opts.Now, &opts.Time, &opts.Hostname)
	users := newOwnerNames()
	uid, gid := processOwner()
	cfg := r.Config().Chunker
	var read atomic.Int64
	var root repo.ID
	var node repo.Node
	prog := opts.Progress
	if prog == nil {
		prog = &Progress{}
	}
	prog.start(1)
	written, err := r.WriteSession(ctx, repo.WriteOptions{AdoptPacks: true}, func(ctx context.Context, w *repo.Writer) error {
		prog.writer.Store(w)
		prog.reading(0, StreamPath(opts.Name))
		defer prog.reading(0, "")
		in := src
		if opts.Limiter != nil {
			in = opts.Limiter.Reader(ctx, in)
		}
		ch := chunker.New(&countingReader{r: in, n: &read}, chunker.NewGear(r.ChunkerKey()), chunker.Params{Min: cfg.Min, Avg: cfg.Avg, Max: cfg.Max})
		var content []repo.ID
		var hint repo.CompressHint
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			data, err := ch.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", opts.Name, err)
			}
			id := r.BlobID(data)
			if _, err := w.SaveChunk(ctx, repo.DataBlob, id, data, &hint); err != nil {
				return err
			}
			content = append(content, id)
			prog.bytesRead.Add(int64(len(data)))
		}
		prog.filesDone.Add(1)
		now := opts.Now()
		node = repo.Node{
			Name: opts.Name, Type: repo.NodeFile, Mode: 0o600,
			UID: uid, GID: gid, User: users.user(uid), Group: users.group(gid),
			Size: uint64(read.Load()), MTime: now, CTime: now, Links: 1, Content: content,
		}
		var err error
		root, err = w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{node}})
		return err
	})
	if err != nil {
		return nil, err
	}
	stats := written.Stats()
	snap := &repo.Snapshot{
		Run:            opts.Run,
		Time:           opts.Time.UTC(),
		Hostname:       opts.Hostname,
		Username:       users.current(),
		Paths:          []string{StreamPath(opts.Name)},
		Tags:           opts.Tags,
		Tree:           root,
		ProgramVersion: opts.Version,
		Summary: repo.SnapshotSummary{
			Started: started.UTC(), Finished: opts.Now().UTC(),
			FilesNew: 1, BytesRead: read.Load(), BytesAdded: stats.Bytes, TotalSize: int64(node.Size),
		},
	}
	if err := written.SaveSnapshot(ctx, snap); err != nil {
		return nil, err
	}
	return &Result{Snapshot: snap, AdoptedPacks: stats.AdoptedPacks, LostPacks: stats.LostPacks}, nil
}
