package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/nightjar-backup/nightjar/repo/extsort"
)

// Which blobs do the snapshots that stay use? Prune asks it of every
// indexed blob, and the answer must not cost memory in proportion to the
// number of blobs. BlobUsage therefore never holds a set of blobs or of
// trees: every ID it meets goes into an external sorter (repo/extsort),
// and the sorted streams are joined in order. Nor does it load the index:
// it reads the index files one at a time into a sorter of entries, and
// keeps in memory only where the trees are, for the walk.
//
// The trees are walked level by level, breadth first: the roots of all
// snapshots are level 0, the subtrees their trees name are level 1, and so
// on. Each level's tree IDs are sorted without duplicates and joined with
// the sorted IDs of the trees already walked at the levels above, so that
// every distinct tree is loaded once, however many snapshots share it and
// at whatever depth. A tree is walked with Walk alone (its folders'
// subtrees are skipped and put on the next level), by a few workers at a
// time. The alternative, a depth-first walk of each snapshot, loads every
// shared tree again for every snapshot: with daily snapshots that differ
// in a few folders, a prune would read the same trees a hundred times.

// ErrBlobMissing is returned by BlobUsage for a blob the snapshots use that
// no index lists: the repository is damaged and nothing may be deleted.
var ErrBlobMissing = errors.New("a blob the snapshots use is not in the index")

// SnapshotTreeError is BlobUsage's error for a tree that cannot be read or
// decoded: what the snapshots that reach it use is unknown, so no blob may
// be judged unused.
type SnapshotTreeError struct {
	// Snapshots are the snapshots that reach the tree (empty when the
	// search for them found none, for a tree below an unsafe name).
	Snapshots []string
	// Path is the tree's folder in the first of them.
	Path string
	// Tree is the tree that failed (a tree list when a part failed).
	Tree ID
	// Err says why it failed.
	Err error
}

func (e *SnapshotTreeError) Error() string {
	if len(e.Snapshots) == 0 {
		return fmt.Sprintf("tree %s of a snapshot cannot be read: %v", e.Tree.Short(), e.Err)
	}
	return fmt.Sprintf("snapshot %s: tree %s at %s cannot be read: %v",
		strings.Join(e.Snapshots, ", "), e.Tree.Short(), e.Path, e.Err)
}

func (e *SnapshotTreeError) Unwrap() error { return e.Err }

// BlobUse is an indexed blob, with its pack, and whether a snapshot uses
// it.
type BlobUse struct {
	IndexedBlob
	Used bool
}

// UsageStats say what BlobUsage walked.
type UsageStats struct {
	// Trees is the number of distinct trees loaded, each once.
	Trees int
	// Depth is the number of levels of folders walked (1: only roots).
	Depth int
}

// UsageOptions choose where and in how much memory BlobUsage sorts.
type UsageOptions struct {
	// TempDir is the folder of the sorted runs; "" is os.TempDir().
	TempDir string
	// MemoryBudget is the bytes of IDs each sorter holds before it spills
	// a run; at most three sorters fill at once. 0 is
	// extsort.DefaultMemoryBudget.
	MemoryBudget int
}

// sorterMaxOpen bounds the files of one sorter: two merges are read at
// once (a level's trees and the trees walked, or the used blobs and the
// index) while up to three sorters spill, 2*30+3 run files in all, and one
// lock file for each sorter that spilled. A streamed check
// (check_streamindex.go) keeps the merge of the index entries open beside
// the walk's two: 3*30+3 = 93 run files at most.
const sorterMaxOpen = 30

// cancelCheck is how many blobs the loops over the index handle between
// two looks at the context.
const cancelCheck = 1 << 16

// usage makes the sorters of one BlobUsage and removes all their files.
type usage struct {
	opts    UsageOptions
	sorters []*extsort.Sorter
}

func (u *usage) sorter() *extsort.Sorter {
	s := extsort.New(extsort.Options{Dir: u.opts.TempDir, MemoryBudget: u.opts.MemoryBudget, MaxOpen: sorterMaxOpen})
	u.sorters = append(u.sorters, s)
	return s
}

// recordSorter is sorter for records of size bytes.
func (u *usage) recordSorter(size int) *extsort.Sorter {
	s := extsort.New(extsort.Options{Dir: u.opts.TempDir, MemoryBudget: u.opts.MemoryBudget, MaxOpen: sorterMaxOpen, RecordSize: size})
	u.sorters = append(u.sorters, s)
	return s
}

// close removes the files of every sorter and reports what failed.
func (u *usage) close() error {
	var errs []error
	for _, s := range u.sorters {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// BlobUsage walks every tree of snaps once and calls fn for each entry of
// the index files, in blob ID order (a blob listed for several packs comes
// once per pack, by pack ID), with whether snaps use it: as a tree (tree
// lists' parts included) or as a file's data. It reads the index files
// itself, one at a time, and neither needs nor uses the in-memory index
// that LoadIndex fills. It fails, and calls fn no more, when a tree cannot
// be read (a *SnapshotTreeError), when a used blob is not indexed
// (ErrBlobMissing) or when fn fails; fn's answers are final only when it
// returns nil, so a caller deletes nothing before. Its memory does not
// grow with the number of blobs (see the top of used.go).
func (r *Repository) BlobUsage(ctx context.Context, snaps []*Snapshot, opts UsageOptions, fn func(BlobUse) error) (UsageStats, error) {
	return r.blobUsage(ctx, snaps, opts, usageHooks{}, fn)
}

// usageHooks let prune see more of a blobUsage: every index file read
// (with the packs it lists), the moment the index is read, the sorters'
// owner for sorters of its own, and the phases.
type usageHooks struct {
	indexFile func(name string, packs []ID, done, total int)
	indexRead func() error // after the last index file, before the walk
	phase     func(name string)
	usage     *usage // the sorters' owner, closed by the caller; nil: blobUsage's own
}

func (r *Repository) blobUsage(ctx context.Context, snaps []*Snapshot, opts UsageOptions, hooks usageHooks, fn func(BlobUse) error) (stats UsageStats, err error) {
	u := hooks.usage
	if u == nil {
		u = &usage{opts: opts}
		defer func() {
			if cerr := u.close(); err == nil && cerr != nil {
				err = fmt.Errorf("blob usage: %w", cerr)
			}
		}()
	}
	// The walk finds trees in an index of their own: trees are far
	// fewer than data blobs.
	reader, err := r.shadow()
	if err != nil {
		return stats, err
	}
	defer reader.closeShadow()
	if hooks.phase != nil {
		hooks.phase("index")
	}
	entries, err := r.sortIndex(ctx, u, reader.idx, hooks.indexFile)
	if err != nil {
		return stats, err
	}
	if hooks.indexRead != nil {
		if err := hooks.indexRead(); err != nil {
			return stats, err
		}
	}
	if hooks.phase != nil {
		hooks.phase("walk")
	}
	used := u.sorter()
	if stats, err = reader.walkUsed(ctx, snaps, u, used); err != nil {
		return stats, err
	}
	usedIDs, err := used.Sorted()
	if err != nil {
		return stats, fmt.Errorf("sort the used blobs: %w", err)
	}
	indexed, err := entries.Sorted()
	if err != nil {
		return stats, fmt.Errorf("sort the index: %w", err)
	}
	return stats, joinUsage(ctx, usedIDs, indexed, fn)
}

// sortIndex reads the index files one at a time, puts every entry into a
// sorter of records ordered by blob, then pack, and the tree blobs into
// trees.
func (r *Repository) sortIndex(ctx context.Context, u *usage, trees *Index, hook func(name string, packs []ID, done, total int)) (*extsort.Sorter, error) {
	names, err := r.sortedIndexFileNames(ctx)
	if err != nil {
		return nil, err
	}
	entries := u.recordSorter(blobRecordSize)
	var treeBlobs []IndexedBlob
	rec := make([]byte, blobRecordSize)
	done := 0
	err = r.eachIndexFile(ctx, names, func(name string, f indexFile) error {
		if hook != nil {
			hook(name, f.Packs, done, len(names))
		}
		done++
		treeBlobs = treeBlobs[:0]
		for _, b := range f.Blobs {
			if b.Type == TreeBlob {
				treeBlobs = append(treeBlobs, b)
			}
			if err := entries.AddRecord(byBlobRecord(rec, b)); err != nil {
				return fmt.Errorf("sort the index: %w", err)
			}
		}
		trees.add(treeBlobs)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// joinUsage walks the index entries (records ordered by blob, then pack)
// and the sorted used IDs side by side and calls fn for each entry.
func joinUsage(ctx context.Context, used, entries *extsort.Iterator, fn func(BlobUse) error) error {
	haveUsed := used.Next()
	var last ID
	for n := 1; entries.Next(); n++ {
		if n%cancelCheck == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		b := fromBlobRecord(entries.Record())
		if n > 1 && b.ID != last && haveUsed && used.ID() == [32]byte(last) {
			haveUsed = used.Next() // past the blob of the entries before
		}
		if haveUsed && before(used.ID(), b.ID) {
			return fmt.Errorf("blob %s: %w", ID(used.ID()), ErrBlobMissing)
		}
		last = b.ID
		if err := fn(BlobUse{IndexedBlob: b, Used: haveUsed && used.ID() == [32]byte(b.ID)}); err != nil {
			return err
		}
	}
	if err := entries.Err(); err != nil {
		return fmt.Errorf("read the sorted index: %w", err)
	}
	if haveUsed && used.ID() == [32]byte(last) {
		haveUsed = used.Next()
	}
	if err := used.Err(); err != nil {
		return fmt.Errorf("read the sorted used blobs: %w", err)
	}
	if haveUsed {
		return fmt.Errorf("blob %s: %w", ID(used.ID()), ErrBlobMissing)
	}
	return nil
}

// walkUsed walks every tree of snaps once, level by level, and adds every
// blob they use to used.
func (r *Repository) walkUsed(ctx context.Context, snaps []*Snapshot, u *usage, used *extsort.Sorter) (UsageStats, error) {
	return r.walkLevels(ctx, snaps, u, used, runtime.GOMAXPROCS(0), r.treeUse)
}

// walkLevels calls visit once for every distinct tree of snaps, level by
// level, by workers at a time, adds the blobs each visit returns to used
// and walks the subtrees it returns at the next level.
func (r *Repository) walkLevels(ctx context.Context, snaps []*Snapshot, u *usage, used *extsort.Sorter, workers int, visit func(context.Context, ID) (treeUse, error)) (UsageStats, error) {
	var stats UsageStats
	level := u.sorter()
	for _, s := range snaps {
		if err := level.Add(s.Tree); err != nil {
			return stats, fmt.Errorf("sort the snapshots' trees: %w", err)
		}
	}
	var walked *extsort.Sorter // the trees of the levels above, when there are any
	for depth := 0; ; depth++ {
		next, nextWalked := u.sorter(), u.sorter()
		n, err := walkLevel(ctx, level, walked, used, next, nextWalked, workers, visit)
		var te *treeLoadError
		if errors.As(err, &te) {
			return stats, r.snapshotTreeError(ctx, snaps, te)
		}
		if err != nil {
			return stats, err
		}
		// Remove the files of the levels done as soon as they are done.
		if err := level.Close(); err != nil {
			return stats, fmt.Errorf("walk trees: %w", err)
		}
		if walked != nil {
			if err := walked.Close(); err != nil {
				return stats, fmt.Errorf("walk trees: %w", err)
			}
		}
		if n == 0 {
			return stats, nil
		}
		stats.Trees += n
		stats.Depth = depth + 1
		level, walked = next, nextWalked
	}
}

// treeUse is what one tree uses: its own blobs, its files' data and its
// folders' subtrees.
type treeUse struct {
	blobs    []ID
	subtrees []ID
}

// treeLoadError is a tree that cannot be loaded or decoded.
type treeLoadError struct {
	tree ID
	err  error
}

func (e *treeLoadError) Error() string { return e.err.Error() }

// walkLevel visits the trees of level that are not in walked (nil: none
// walked yet), by workers at a time, adding what they use to used and
// their subtrees to next, and the sorted union of walked and level's
// trees to nextWalked. It returns the number of trees it visited.
func walkLevel(ctx context.Context, level, walked, used, next, nextWalked *extsort.Sorter, workers int, visit func(context.Context, ID) (treeUse, error)) (int, error) {
	trees, err := level.Sorted()
	if err != nil {
		return 0, fmt.Errorf("sort trees: %w", err)
	}
	var done *extsort.Iterator
	if walked != nil {
		if done, err = walked.Sorted(); err != nil {
			return 0, fmt.Errorf("sort the trees walked: %w", err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	todo := make(chan ID, 64)
	results := make(chan treeUse, 64)
	n := 0
	// The feeder alone writes nextWalked; the collector below alone
	// writes used and next.
	g.Go(func() error {
		defer close(todo)
		var err error
		n, err = newTrees(trees, done, nextWalked, func(id ID) error {
			select {
			case todo <- id:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
		return err
	})
	var running sync.WaitGroup
	for range workers {
		running.Add(1)
		g.Go(func() error {
			defer running.Done()
			for id := range todo {
				tu, err := visit(gctx, id)
				if err != nil {
					return err
				}
				select {
				case results <- tu:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
	}
	go func() {
		running.Wait()
		close(results)
	}()
	g.Go(func() error {
		for tu := range results {
			for _, id := range tu.blobs {
				if err := used.Add(id); err != nil {
					return fmt.Errorf("sort the used blobs: %w", err)
				}
			}
			for _, id := range tu.subtrees {
				if err := next.Add(id); err != nil {
					return fmt.Errorf("sort trees: %w", err)
				}
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return n, nil
}

// newTrees merges the sorted, distinct trees of a level with the sorted
// trees walked before (done, nil for none), writes the union to union and
// calls walk for each tree of the level not walked before. It returns how
// many it passed to walk.
func newTrees(trees, done *extsort.Iterator, union *extsort.Sorter, walk func(ID) error) (int, error) {
	haveDone := done != nil && done.Next()
	n := 0
	for trees.Next() {
		id := trees.ID()
		for haveDone && before(done.ID(), id) {
			if err := union.Add(done.ID()); err != nil {
				return n, fmt.Errorf("sort the trees walked: %w", err)
			}
			haveDone = done.Next()
		}
		if haveDone && done.ID() == id {
			continue // walked at a level above
		}
		if err := union.Add(id); err != nil {
			return n, fmt.Errorf("sort the trees walked: %w", err)
		}
		if err := walk(id); err != nil {
			return n, err
		}
		n++
	}
	if err := trees.Err(); err != nil {
		return n, fmt.Errorf("read sorted trees: %w", err)
	}
	for ; haveDone; haveDone = done.Next() {
		if err := union.Add(done.ID()); err != nil {
			return n, fmt.Errorf("sort the trees walked: %w", err)
		}
	}
	if done != nil && done.Err() != nil {
		return n, fmt.Errorf("read the sorted trees walked: %w", done.Err())
	}
	return n, nil
}

// treeUse loads tree id alone (with Walk, which reports its parts) and
// returns what it uses. Every entry counts, also one that restore would
// refuse for its name: prune keeps what a tree names.
func (r *Repository) treeUse(ctx context.Context, id ID) (treeUse, error) {
	var tu treeUse
	err := r.Walk(ctx, id, WalkOptions{}, WalkVisitor{
		Tree: func(_ *WalkEntry, id ID, parts []ID, _ *Tree) error {
			tu.blobs = append(tu.blobs, id)
			tu.blobs = append(tu.blobs, parts...)
			return nil
		},
		Node: func(e *WalkEntry) error {
			tu.blobs = append(tu.blobs, e.Node.Content...)
			if e.Node.Type == NodeDir && e.Node.Subtree != nil {
				tu.subtrees = append(tu.subtrees, *e.Node.Subtree)
			}
			return SkipTree
		},
		TreeError: func(_ *WalkEntry, id ID, err error) error {
			return &treeLoadError{tree: id, err: err}
		},
	})
	return tu, err
}

// snapshotTreeError names the snapshots that reach the tree that failed:
// each snapshot is walked depth first until it meets the tree, as check
// walks, which is slow but done only when prune must stop anyway.
func (r *Repository) snapshotTreeError(ctx context.Context, snaps []*Snapshot, te *treeLoadError) error {
	out := &SnapshotTreeError{Tree: te.tree, Err: te.err}
	reached := errors.New("reached the damaged tree")
	for _, s := range snaps {
		var found string
		err := r.Walk(ctx, s.Tree, WalkOptions{}, WalkVisitor{
			Enter: func(dir *WalkEntry, id ID) error {
				if id == te.tree {
					found = dir.Path
					return reached
				}
				return nil
			},
			TreeError: func(*WalkEntry, ID, error) error { return nil },
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == reached {
			if len(out.Snapshots) == 0 {
				out.Path = found
			}
			out.Snapshots = append(out.Snapshots, s.ID)
		}
	}
	return out
}

// before reports whether a sorts before b.
func before(a, b extsort.ID) bool { return bytes.Compare(a[:], b[:]) < 0 }
