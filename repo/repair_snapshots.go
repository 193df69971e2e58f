package repo

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
)

// RepairedTag is the tag of every snapshot RepairSnapshots writes.
const RepairedTag = "repaired"

// RepairSnapshotsOptions are the choices of RepairSnapshots.
type RepairSnapshotsOptions struct {
	IDs    []string // full snapshot IDs; none: every snapshot
	DryRun bool     // only say what would change
	Forget bool     // remove each damaged original once its repaired copy is stored
}

// RepairedSnapshot is one snapshot RepairSnapshots found damaged.
type RepairedSnapshot struct {
	Original  string `json:"original"`
	Repaired  string `json:"repaired,omitempty"` // the new snapshot's ID ("" in a dry run)
	Removed   []Skip `json:"removed"`            // what the copy leaves out, and why
	Forgotten bool   `json:"forgotten"`          // the original was removed (--forget)
}

// RepairSnapshotsResult is what RepairSnapshots found and did.
type RepairSnapshotsResult struct {
	Snapshots   int                `json:"snapshots"` // snapshots read
	Repaired    []RepairedSnapshot `json:"repaired"`
	Unreadable  []Skip             `json:"unreadable"`   // snapshot files that cannot be read: left alone (check names them)
	KeptPinned  []string           `json:"kept_pinned"`  // damaged originals kept despite --forget: they are pinned
	TreesStored int                `json:"trees_stored"` // trees written for the copies
}

// RepairSnapshots writes a repaired copy of every snapshot that refers to
// a tree or a data blob the repository has lost (restic's repair
// snapshots). The copy keeps the original's time, host, paths, tags (plus
// RepairedTag) and run; what it leaves out is listed in its summary's
// skipped entries, and it is marked partial:
//
//   - a file any of whose data blobs is lost is left out (no file with a
//     hole or the wrong size is ever restored);
//   - a folder whose listing (tree) is lost is kept, empty.
//
// Lost means not in the index, or in a pack that is missing or cut short;
// run RepairIndex or RepairPacks first so that damaged packs are known.
// The index must be loaded. The caller holds the exclusive lock when
// Forget is set, else a shared one (none for DryRun).
func (r *Repository) RepairSnapshots(ctx context.Context, opts RepairSnapshotsOptions) (*RepairSnapshotsResult, error) {
	res := &RepairSnapshotsResult{Repaired: []RepairedSnapshot{}, Unreadable: []Skip{}, KeptPinned: []string{}}
	sizes, err := r.packSizes(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := r.idx.dropPacks(r.idx.damagedPacks(sizes)); err != nil {
		return nil, err
	}
	ids := opts.IDs
	if len(ids) == 0 {
		if ids, err = r.ListSnapshotIDs(ctx); err != nil {
			return nil, fmt.Errorf("list snapshots: %w", err)
		}
		slices.Sort(ids)
	}
	fix := &treeFixer{r: r, done: map[ID]fixedTree{}}
	var written *Written
	session := func(ctx context.Context, w *Writer) error {
		fix.w = w
		for _, id := range ids {
			snap, err := r.LoadSnapshot(ctx, id)
			if err != nil {
				if errors.Is(err, ErrSnapshotNotFound) && len(opts.IDs) > 0 {
					return err
				}
				if errors.Is(err, ErrIntegrity) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrSnapshotNotFound) {
					res.Unreadable = append(res.Unreadable, Skip{Path: id, Reason: err.Error()})
					continue
				}
				return err
			}
			res.Snapshots++
			root, err := fix.tree(ctx, snap.Tree, "/")
			if err != nil {
				return err
			}
			if len(root.removed) == 0 {
				continue
			}
			res.Repaired = append(res.Repaired, RepairedSnapshot{Original: id, Removed: root.removed})
			fix.pending = append(fix.pending, pendingSnap{snap: snap, root: root.id})
		}
		return nil
	}
	if opts.DryRun {
		fix.dryRun = true
		if err := session(ctx, nil); err != nil {
			return nil, err
		}
		return res, nil
	}
	written, err = r.WriteSession(ctx, WriteOptions{}, session)
	if err != nil {
		return nil, err
	}
	res.TreesStored = written.Stats().TreeBlobs
	for i, p := range fix.pending {
		rep := &res.Repaired[i]
		copied := *p.snap
		copied.ID = "" // SaveSnapshot gives it a new one
		copied.Tree = p.root
		copied.Tags = append(slices.Clone(p.snap.Tags), RepairedTag)
		copied.Parent = p.snap.ID
		s := &copied.Summary
		s.Skipped = slices.Clone(s.Skipped)
		for _, skip := range rep.Removed {
			if len(s.Skipped) < MaxListedSkips {
				s.Skipped = append(s.Skipped, skip)
			}
		}
		s.FilesSkipped += int64(len(rep.Removed))
		s.Partial = true
		if err := written.SaveSnapshot(ctx, &copied); err != nil {
			return nil, err
		}
		rep.Repaired = copied.ID
	}
	if !opts.Forget || len(fix.pending) == 0 {
		return res, nil
	}
	// The originals go by the forget protocol once every copy is stored:
	// marked first, then the pins are read (those pinned meanwhile are
	// kept), and each record leaves with its verification record.
	marked := make([]string, 0, len(fix.pending))
	for _, p := range fix.pending {
		if err := r.markForget(ctx, p.snap.ID); err != nil {
			return nil, fmt.Errorf("mark snapshot %s to forget: %w", p.snap.ID, err)
		}
		marked = append(marked, p.snap.ID)
	}
	removed, pinnedKept, err := r.completeForget(ctx, marked)
	if err != nil {
		return nil, fmt.Errorf("forget damaged originals: %w", err)
	}
	res.KeptPinned = append(res.KeptPinned, pinnedKept...)
	for i := range res.Repaired {
		res.Repaired[i].Forgotten = slices.Contains(removed, res.Repaired[i].Original)
	}
	return res, nil
}

// pendingSnap is a damaged snapshot and the root of its repaired copy.
type pendingSnap struct {
	snap *Snapshot
	root ID
}

// fixedTree is a tree as repaired: its new ID (the old one where nothing
// was lost) and what was left out, by path below the tree.
type fixedTree struct {
	id      ID
	removed []Skip
}

// treeFixer rewrites trees without what was lost, each tree once.
type treeFixer struct {
	r       *Repository
	w       *Writer
	dryRun  bool
	done    map[ID]fixedTree // by the original tree's ID, paths relative to it
	pending []pendingSnap
}

// tree returns the repaired form of tree id, found at dir (for the paths
// of what is removed).
func (f *treeFixer) tree(ctx context.Context, id ID, dir string) (fixedTree, error) {
	if done, ok := f.done[id]; ok {
		return rebase(done, dir), nil
	}
	fixed, err := f.fixTree(ctx, id)
	if err != nil {
		return fixedTree{}, err
	}
	f.done[id] = fixed
	return rebase(fixed, dir), nil
}

// rebase turns the relative paths of t into paths below dir.
func rebase(t fixedTree, dir string) fixedTree {
	out := fixedTree{id: t.id}
	for _, s := range t.removed {
		out.removed = append(out.removed, Skip{Path: path.Join(dir, s.Path), Reason: s.Reason})
	}
	return out
}

func (f *treeFixer) fixTree(ctx context.Context, id ID) (fixedTree, error) {
	tree, err := f.r.LoadTree(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return fixedTree{}, ctx.Err()
		}
		// Only a tree the repository lost (not indexed, its pack gone,
		// or its bytes damaged) is given up; a storage error (network,
		// I/O) says nothing about the tree and ends the repair.
		if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrIntegrity) {
			return fixedTree{}, fmt.Errorf("read tree %s: %w", id.Short(), err)
		}
		empty, serr := f.save(ctx, &Tree{})
		return fixedTree{id: empty, removed: []Skip{{Path: ".", Reason: "folder listing lost (" + err.Error() + "): kept empty"}}}, serr
	}
	var out fixedTree
	changed := false
	nodes := make([]Node, 0, len(tree.Nodes))
	for _, n := range tree.Nodes {
		switch {
		case n.Type == NodeFile:
			if lost := f.lostBlob(n.Content); lost != nil {
				out.removed = append(out.removed, Skip{Path: n.Name, Reason: fmt.Sprintf("content lost (blob %s): left out", lost.Short())})
				changed = true
				continue
			}
		case n.Subtree != nil:
			sub, err := f.tree(ctx, *n.Subtree, n.Name)
			if err != nil {
				return fixedTree{}, err
			}
			out.removed = append(out.removed, sub.removed...)
			if sub.id != *n.Subtree {
				n.Subtree = &sub.id
				changed = true
			}
		}
		nodes = append(nodes, n)
	}
	out.id = id
	if changed {
		out.id, err = f.save(ctx, &Tree{Nodes: nodes})
	}
	return out, err
}

// lostBlob returns the first of ids the repository has lost, or nil.
func (f *treeFixer) lostBlob(ids []ID) *ID {
	for i := range ids {
		if !f.r.idx.Has(ids[i]) {
			return &ids[i]
		}
	}
	return nil
}

// save stores a repaired tree; a dry run only computes its ID.
func (f *treeFixer) save(ctx context.Context, t *Tree) (ID, error) {
	if f.dryRun {
		data, err := encodeTree(t)
		if err != nil {
			return ID{}, err
		}
		return f.r.BlobID(data), nil
	}
	return f.w.SaveTree(ctx, t)
}
