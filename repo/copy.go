package repo

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
)

// SnapshotOrigin is where a copied snapshot came from: the repository, the
// snapshot and its root tree there. Blob and tree IDs are keyed by each
// repository's own secret, so a copy's tree has another ID than its
// original's; Tree is what tells that a snapshot was copied already.
type SnapshotOrigin struct {
	Repository string `json:"repository"` // the source repository's ID
	Snapshot   string `json:"snapshot"`   // the snapshot's ID there
	Tree       ID     `json:"tree"`       // its root tree's ID there
}

// CopyResult is what Copy did, in the order of the snapshots it was given.
type CopyResult struct {
	Copied  []CopiedSnapshot
	Skipped []CopiedSnapshot // copied before: Copy is the copy found in the destination
	Stats   WriteStats       // what the destination stored
}

// CopiedSnapshot pairs a source snapshot with its copy in the destination.
type CopiedSnapshot struct {
	Source *Snapshot
	Copy   *Snapshot
}

// ErrSameRepository: copy was asked to copy a repository into itself.
var ErrSameRepository = errors.New("source and destination are the same repository")

// maxCopiedTrees bounds the memory of the trees Copy remembers having
// copied (about 100 bytes each): past it, it forgets them and copies a
// tree it meets again once more (which stores nothing new).
const maxCopiedTrees = 1 << 20

// Copy copies snapshots of src into dst, oldest first. A snapshot that was
// copied into dst before is skipped: restic's rule, a snapshot of dst with
// the same time, host and paths whose origin has the same tree. Each
// snapshot's trees and file contents are read from src, decrypted and
// checked, and stored in dst under dst's own keys; a blob that dst has
// already is not stored again. Every copied snapshot gets a new ID, no
// parent (its parent's ID means nothing in dst) and its origin
// (CopiedFrom). Each is copied in a write session of its own and saved as
// soon as its data is durable, so that an interrupted copy keeps the
// snapshots it finished; copying again goes on from there.
//
// Copy reads one directory listing per level of the tree being copied and
// one chunk per core at a time, never a whole file. It holds a shared lock on both
// repositories, and loads both indexes.
func Copy(ctx context.Context, src, dst *Repository, snaps []*Snapshot) (_ *CopyResult, err error) {
	if src.ID() == dst.ID() {
		return nil, ErrSameRepository
	}
	srcLock, err := src.Lock(ctx, false, "copy from")
	if err != nil {
		return nil, fmt.Errorf("copy: source: %w", err)
	}
	defer srcLock.Release(&err)
	dstLock, err := dst.Lock(ctx, false, "copy")
	if err != nil {
		return nil, fmt.Errorf("copy: destination: %w", err)
	}
	defer dstLock.Release(&err)
	for _, r := range []*Repository{src, dst} {
		if err := r.LoadIndex(ctx); err != nil {
			return nil, fmt.Errorf("copy: %w", err)
		}
	}
	existing, err := dst.Snapshots(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy: destination: %w", err)
	}
	snaps = slices.Clone(snaps)
	SortSnapshots(snaps)
	c := &copier{src: src, dst: dst, trees: map[ID]ID{}, bufs: sync.Pool{New: func() any { return new(BlobBuffer) }}}
	res := &CopyResult{}
	for _, s := range snaps {
		if prior := copiedBefore(s, existing); prior != nil {
			res.Skipped = append(res.Skipped, CopiedSnapshot{Source: s, Copy: prior})
			continue
		}
		cp, stats, err := c.snapshot(ctx, s)
		if err != nil {
			return res, fmt.Errorf("copy snapshot %s: %w", s.ID, err)
		}
		res.Stats.Blobs += stats.Blobs
		res.Stats.Packs += stats.Packs
		res.Stats.Bytes += stats.Bytes
		res.Copied = append(res.Copied, CopiedSnapshot{Source: s, Copy: cp})
		existing = append(existing, cp)
	}
	return res, nil
}

// PreviewCopy says what Copy would do now, without a lock and without
// writing anything (a dry run): the snapshots it would copy (in Copied,
// with no Copy) and those it would skip.
func PreviewCopy(ctx context.Context, src, dst *Repository, snaps []*Snapshot) (*CopyResult, error) {
	if src.ID() == dst.ID() {
		return nil, ErrSameRepository
	}
	existing, err := dst.Snapshots(ctx)
	if err != nil {
		return nil, fmt.Errorf("copy: destination: %w", err)
	}
	snaps = slices.Clone(snaps)
	SortSnapshots(snaps)
	res := &CopyResult{}
	for _, s := range snaps {
		if prior := copiedBefore(s, existing); prior != nil {
			res.Skipped = append(res.Skipped, CopiedSnapshot{Source: s, Copy: prior})
			continue
		}
		res.Copied = append(res.Copied, CopiedSnapshot{Source: s})
		existing = append(existing, &Snapshot{Time: s.Time, Hostname: s.Hostname, Paths: s.Paths,
			CopiedFrom: &SnapshotOrigin{Tree: s.Tree}})
	}
	return res, nil
}

// copiedBefore returns the snapshot of existing that is a copy of s, or nil.
func copiedBefore(s *Snapshot, existing []*Snapshot) *Snapshot {
	for _, e := range existing {
		if e.CopiedFrom != nil && e.CopiedFrom.Tree == s.Tree && e.Time.Equal(s.Time) &&
			e.Hostname == s.Hostname && slices.Equal(e.Paths, s.Paths) {
			return e
		}
	}
	return nil
}

// copier copies trees from src to dst, remembering the trees it copied.
type copier struct {
	src, dst *Repository
	trees    map[ID]ID // source tree ID to destination tree ID, of trees durable in dst
	bufs     sync.Pool // of *BlobBuffer, one per worker reading chunks
}

// snapshot copies one snapshot's trees and data, then saves its record.
func (c *copier) snapshot(ctx context.Context, s *Snapshot) (*Snapshot, WriteStats, error) {
	done := map[ID]ID{}
	var root ID
	written, err := c.dst.WriteSession(ctx, WriteOptions{}, func(ctx context.Context, w *Writer) error {
		var err error
		root, err = c.tree(ctx, w, s.Tree, done)
		return err
	})
	if err != nil {
		return nil, WriteStats{}, err
	}
	if len(c.trees)+len(done) > maxCopiedTrees {
		clear(c.trees)
	}
	for from, to := range done {
		c.trees[from] = to
	}
	cp := *s
	cp.ID = "" // SaveSnapshot gives it a new one
	cp.Tree = root
	cp.Parent = ""
	cp.CopiedFrom = &SnapshotOrigin{Repository: c.src.ID(), Snapshot: s.ID, Tree: s.Tree}
	if err := written.SaveSnapshot(ctx, &cp); err != nil {
		return nil, WriteStats{}, err
	}
	return &cp, written.Stats(), nil
}

// tree copies the tree id of src and everything under it into dst and
// returns the tree's ID in dst. done holds the trees copied in this
// session.
func (c *copier) tree(ctx context.Context, w *Writer, id ID, done map[ID]ID) (ID, error) {
	if to, ok := c.trees[id]; ok && c.dst.idx.Has(to) {
		return to, nil
	}
	if to, ok := done[id]; ok {
		return to, nil
	}
	t, err := c.src.LoadTree(ctx, id)
	if err != nil {
		return ID{}, err
	}
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if n.Subtree != nil {
			sub, err := c.tree(ctx, w, *n.Subtree, done)
			if err != nil {
				return ID{}, err
			}
			n.Subtree = &sub
		}
	}
	// The folder's file contents, a chunk per worker at a time.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i := range t.Nodes {
		n := &t.Nodes[i]
		for j := range n.Content {
			g.Go(func() error {
				to, err := c.data(gctx, w, n.Content[j])
				if err != nil {
					return fmt.Errorf("%s: %w", n.Name, err)
				}
				n.Content[j] = to
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return ID{}, err
	}
	to, err := w.SaveTree(ctx, t)
	if err != nil {
		return ID{}, err
	}
	done[id] = to
	return to, nil
}

// data copies one data blob and returns its ID in dst. It is safe for
// concurrent use.
func (c *copier) data(ctx context.Context, w *Writer, id ID) (ID, error) {
	buf := c.bufs.Get().(*BlobBuffer)
	defer c.bufs.Put(buf)
	plain, err := c.src.LoadBlobTo(ctx, id, buf)
	if err != nil {
		return ID{}, err
	}
	to := c.dst.BlobID(plain)
	if _, err := w.SaveBlob(ctx, DataBlob, to, plain); err != nil {
		return ID{}, err
	}
	return to, nil
}
