package repo

import (
	"context"
	"fmt"
	"slices"
)

// ChangeKind says how an entry differs between two trees; the values are
// the letters restic's diff prints.
type ChangeKind byte

// The kinds of change Diff reports.
const (
	ChangeAdded    ChangeKind = '+' // only in the new tree
	ChangeRemoved  ChangeKind = '-' // only in the old tree
	ChangeModified ChangeKind = 'M' // content changed: a file's data, a symlink's target, a device's number
	ChangeMetadata ChangeKind = 'U' // same content, other metadata (mode, owner, times, xattrs)
	ChangeType     ChangeKind = 'T' // the entry's type changed (a file became a symlink, ...)
)

// Change is one difference Diff finds. It is valid only during the call it
// is handed to.
type Change struct {
	// Path is the entry's path in the snapshot ("/a/b"); an unsafe name
	// appears quoted, as Walk shows it.
	Path string
	Kind ChangeKind
	// Old and New are the entry in the old and the new tree; nil on the
	// side where it does not exist.
	Old, New *Node
}

// DiffCounts counts the entries on one side of a diff and their bytes.
type DiffCounts struct {
	Files  int64 `json:"files"`
	Dirs   int64 `json:"dirs"`
	Others int64 `json:"others"`
	// Bytes are the plaintext bytes of the data blobs of this side's
	// files that the other side's entry at the same path does not hold:
	// all of an added (removed) file, the new (old) chunks of a changed
	// one.
	Bytes int64 `json:"bytes"`
}

// DiffStats sums up a diff.
type DiffStats struct {
	ChangedFiles int64      `json:"changed_files"` // files with ChangeModified
	Added        DiffCounts `json:"added"`
	Removed      DiffCounts `json:"removed"`
}

// Diff compares the trees old and new (snapshots' Tree), calling fn for
// every entry that differs, in path order (a folder before what it holds).
// The entries below an added or removed folder are reported one by one
// too. Folders whose subtrees have the same ID are equal and are not
// loaded, so a diff of two snapshots of a mostly unchanged tree reads
// little; memory holds one pair of trees per level. The index must be
// loaded.
func (r *Repository) Diff(ctx context.Context, old, new ID, fn func(*Change) error) (DiffStats, error) {
	d := differ{r: r, fn: fn}
	err := d.trees(ctx, "/", &old, &new)
	return d.stats, err
}

type differ struct {
	r     *Repository
	fn    func(*Change) error
	stats DiffStats
}

// trees compares the folder dir's trees a and b (nil: an empty folder).
func (d *differ) trees(ctx context.Context, dir string, a, b *ID) error {
	if a != nil && b != nil && *a == *b {
		return nil
	}
	ta, err := d.load(ctx, dir, a)
	if err != nil {
		return err
	}
	tb, err := d.load(ctx, dir, b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ta.Nodes) || j < len(tb.Nodes) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch {
		case j == len(tb.Nodes) || (i < len(ta.Nodes) && ta.Nodes[i].Name < tb.Nodes[j].Name):
			err = d.oneSide(ctx, dir, &ta.Nodes[i], ChangeRemoved)
			i++
		case i == len(ta.Nodes) || tb.Nodes[j].Name < ta.Nodes[i].Name:
			err = d.oneSide(ctx, dir, &tb.Nodes[j], ChangeAdded)
			j++
		default:
			err = d.both(ctx, dir, &ta.Nodes[i], &tb.Nodes[j])
			i++
			j++
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (d *differ) load(ctx context.Context, dir string, id *ID) (*Tree, error) {
	if id == nil {
		return &Tree{}, nil
	}
	t, err := d.r.LoadTree(ctx, *id)
	if err != nil {
		return nil, fmt.Errorf("folder %s: %w", dir, err)
	}
	return t, nil
}

// entryPath is the path of n in dir, quoted when its name is unsafe (as
// Walk shows it); ok is false for an unsafe name, below which nothing is
// compared.
func entryPath(dir string, n *Node) (p string, ok bool) {
	if !ValidName(n.Name) {
		return childPath(dir, fmt.Sprintf("%q", n.Name)), false
	}
	return childPath(dir, n.Name), true
}

// oneSide reports n, which only one side has, and everything below it.
func (d *differ) oneSide(ctx context.Context, dir string, n *Node, kind ChangeKind) error {
	p, safe := entryPath(dir, n)
	if err := d.report(p, kind, n); err != nil {
		return err
	}
	if !safe || n.Type != NodeDir || n.Subtree == nil {
		return nil
	}
	return d.r.Walk(ctx, *n.Subtree, WalkOptions{}, WalkVisitor{Node: func(e *WalkEntry) error {
		return d.report(p+e.Path, kind, e.Node)
	}})
}

// report counts n on the side kind says and hands the change to fn.
func (d *differ) report(p string, kind ChangeKind, n *Node) error {
	c, counts := &Change{Path: p, Kind: kind, New: n}, &d.stats.Added
	if kind == ChangeRemoved {
		c, counts = &Change{Path: p, Kind: kind, Old: n}, &d.stats.Removed
	}
	count(counts, n)
	if n.Type == NodeFile {
		counts.Bytes += d.blobBytes(n.Content, nil)
	}
	return d.fn(c)
}

func count(c *DiffCounts, n *Node) {
	switch n.Type {
	case NodeFile:
		c.Files++
	case NodeDir:
		c.Dirs++
	default:
		c.Others++
	}
}

// blobBytes sums the plaintext sizes of the blobs of ids that except does
// not hold, each counted once.
func (d *differ) blobBytes(ids, except []ID) int64 {
	var sum int64
	for i, id := range ids {
		if slices.Contains(except, id) || slices.Contains(ids[:i], id) {
			continue
		}
		if b, ok := d.r.idx.Lookup(id); ok {
			sum += int64(b.RawLength)
		}
	}
	return sum
}

// both compares the entries a (old) and b (new) of the same name.
func (d *differ) both(ctx context.Context, dir string, a, b *Node) error {
	p, safe := entryPath(dir, a)
	if a.Type != b.Type {
		if err := d.fn(&Change{Path: p, Kind: ChangeType, Old: a, New: b}); err != nil {
			return err
		}
		count(&d.stats.Removed, a)
		count(&d.stats.Added, b)
		d.stats.Removed.Bytes += d.blobBytes(a.Content, nil)
		d.stats.Added.Bytes += d.blobBytes(b.Content, nil)
		if !safe {
			return nil
		}
		// What was below a folder is gone, what is below a new one came.
		if a.Type == NodeDir {
			return d.trees(ctx, p, a.Subtree, nil)
		}
		if b.Type == NodeDir {
			return d.trees(ctx, p, nil, b.Subtree)
		}
		return nil
	}
	kind := ChangeKind(0)
	switch {
	case !sameContent(a, b):
		kind = ChangeModified
	case !sameMetadata(a, b):
		kind = ChangeMetadata
	}
	if kind != 0 {
		if kind == ChangeModified && a.Type == NodeFile {
			d.stats.ChangedFiles++
			d.stats.Added.Bytes += d.blobBytes(b.Content, a.Content)
			d.stats.Removed.Bytes += d.blobBytes(a.Content, b.Content)
		}
		if err := d.fn(&Change{Path: p, Kind: kind, Old: a, New: b}); err != nil {
			return err
		}
	}
	if a.Type == NodeDir && safe {
		return d.trees(ctx, p, a.Subtree, b.Subtree)
	}
	return nil
}

// sameContent compares what an entry holds: a file's data, a symlink's
// target, a device's number. A folder's entries are compared one by one.
func sameContent(a, b *Node) bool {
	switch a.Type {
	case NodeFile:
		return a.Size == b.Size && slices.Equal(a.Content, b.Content)
	case NodeSymlink:
		return a.LinkTarget == b.LinkTarget
	case NodeCharDev, NodeBlockDev:
		return a.Rdev == b.Rdev
	}
	return true
}

// sameMetadata compares what restore gives an entry besides its content:
// mode, owner, modification time and extended attributes. The change
// time, inode and link count say where a file was read, not what it is,
// and are not compared.
func sameMetadata(a, b *Node) bool {
	return a.Mode == b.Mode && a.UID == b.UID && a.GID == b.GID && a.User == b.User && a.Group == b.Group &&
		a.MTime.Equal(b.MTime) && slices.EqualFunc(a.Xattrs, b.Xattrs, func(x, y Xattr) bool {
		return x.Name == y.Name && string(x.Value) == string(y.Value)
	})
}
