package repo

import (
	"context"
	"errors"
	"fmt"
)

// The one tree walker. ls, check, restore and restore --verify walk a
// snapshot with it, and prune will: it visits every tree below a root in
// one defined order (depth first, entries in name order, a folder's
// subtree right after the folder's entry), applies include and exclude
// filters once, and hands its visitor every blob the trees use: each
// tree's ID and, for a split tree, the IDs of its parts (Tree), and each
// entry, whose node holds its data blobs or subtree (Node).
//
// It lives in package repo, not in a sub-package, because Check walks
// snapshots with it and Check needs the repository's private index and
// pack reading: a repo/walk could not be imported by repo.

// SkipTree, returned by a WalkVisitor's Enter or Node, passes over a tree:
// Enter's tree is not loaded, a folder's subtree is not entered.
var SkipTree = errors.New("skip this tree")

// PathMatcher selects snapshot paths ("/a/b"), as backup/filter.Matcher
// does.
type PathMatcher interface {
	// Match reports whether the path is selected (and so is all below it).
	Match(path string) bool
	// ChildMayMatch reports whether some path below the folder could be
	// selected.
	ChildMayMatch(dir string) bool
}

// WalkOptions choose the entries Walk hands its visitor.
type WalkOptions struct {
	// Include selects the paths to visit, with the folders that lead to
	// them; nil selects everything.
	Include PathMatcher
	// Exclude leaves out the paths it matches; an excluded folder's
	// subtree is not walked. Nil leaves out nothing.
	Exclude PathMatcher
}

// WalkEntry is an entry Walk meets. It is valid only during the call it is
// handed to.
type WalkEntry struct {
	// Path is the entry's path in the snapshot: "/" for the root,
	// "/a/b" below it. An unsafe name appears quoted and uncleaned, as
	// stored ("/a/\"..\"", "/\"x/../y\"").
	Path string
	// Node is the entry; nil for the root.
	Node *Node
	// Unsafe is set for a name that cannot be a folder entry (see
	// ValidName). Walk never goes below such an entry.
	Unsafe bool
}

// WalkVisitor receives what Walk meets. Every function may be nil. An
// error other than SkipTree ends the walk with that error.
type WalkVisitor struct {
	// Enter is called for the tree id of folder dir before it is loaded;
	// SkipTree leaves it unloaded and unvisited.
	Enter func(dir *WalkEntry, id ID) error
	// Tree is called for a loaded tree with the blobs it is stored in:
	// its own blob id and, when it is split, parts, the tree blobs the
	// tree list id names (nil otherwise).
	Tree func(dir *WalkEntry, id ID, parts []ID, t *Tree) error
	// Node is called for every selected entry of a loaded tree, in name
	// order, and for each folder leading to a selected entry. For a
	// folder, SkipTree keeps Walk out of its subtree.
	Node func(e *WalkEntry) error
	// Leave is called for a loaded tree after its entries and everything
	// below them.
	Leave func(dir *WalkEntry, id ID) error
	// TreeError is called for a tree that cannot be loaded or decoded
	// (the error names the tree, or the part of it, that failed). If it
	// returns nil the walk goes on after that tree; without TreeError the
	// walk ends with the error.
	TreeError func(dir *WalkEntry, id ID, err error) error
}

// Walk visits the tree root (a snapshot's Tree) and every tree below it
// that opts select, calling v's functions on the way.
func (r *Repository) Walk(ctx context.Context, root ID, opts WalkOptions, v WalkVisitor) error {
	w := walker{r: r, opts: opts, v: v}
	return w.tree(ctx, &WalkEntry{Path: "/"}, root, false)
}

type walker struct {
	r    *Repository
	opts WalkOptions
	v    WalkVisitor
}

// tree walks tree id of folder dir; included says that dir is selected
// (by Include), and with it everything below.
func (w *walker) tree(ctx context.Context, dir *WalkEntry, id ID, included bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.v.Enter != nil {
		if err := w.v.Enter(dir, id); err != nil {
			return skipped(err)
		}
	}
	t, parts, err := w.r.loadTree(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if w.v.TreeError == nil {
			return err
		}
		return w.v.TreeError(dir, id, err)
	}
	if w.v.Tree != nil {
		if err := w.v.Tree(dir, id, parts, t); err != nil {
			return skipped(err)
		}
	}
	var e WalkEntry
	for i := range t.Nodes {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := &t.Nodes[i]
		e = WalkEntry{Node: n}
		if !ValidName(n.Name) {
			e.Path, e.Unsafe = childPath(dir.Path, fmt.Sprintf("%q", n.Name)), true
			if err := w.node(&e); err != nil && err != SkipTree {
				return err
			}
			continue
		}
		e.Path = childPath(dir.Path, n.Name)
		selected, descend := w.selected(e.Path, included)
		if !selected && !(descend && n.Type == NodeDir) {
			continue
		}
		err := w.node(&e)
		if err != nil && err != SkipTree {
			return err
		}
		if err == SkipTree || n.Type != NodeDir || n.Subtree == nil {
			continue
		}
		if err := w.tree(ctx, &e, *n.Subtree, selected); err != nil {
			return err
		}
	}
	if w.v.Leave != nil {
		return w.v.Leave(dir, id)
	}
	return nil
}

// childPath is the path of the entry called name in the folder at dir. It
// joins without cleaning: a quoted unsafe name keeps every byte ("a/../b"
// stays "/\"a/../b\"", where path.Join would make it "/b\""), and a valid
// name has nothing to clean.
func childPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

func (w *walker) node(e *WalkEntry) error {
	if w.v.Node == nil {
		return nil
	}
	return w.v.Node(e)
}

// skipped turns SkipTree into nil.
func skipped(err error) error {
	if err == SkipTree {
		return nil
	}
	return err
}

// selected tells whether the entry at p is selected, and whether to
// descend into it (a folder) in search of selected entries. An excluded
// entry is neither; below a selected folder everything is selected.
func (w *walker) selected(p string, included bool) (selected, descend bool) {
	if w.opts.Exclude != nil && w.opts.Exclude.Match(p) {
		return false, false
	}
	if included || w.opts.Include == nil || w.opts.Include.Match(p) {
		return true, true
	}
	return false, w.opts.Include.ChildMayMatch(p)
}
