package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// VerifyReport is what VerifySnapshot found about one snapshot.
type VerifyReport struct {
	Snapshot  string    `json:"snapshot"`
	Deep      bool      `json:"deep"`
	Trees     int       `json:"trees"`      // trees loaded, authenticated and decoded
	Blobs     int       `json:"blobs"`      // references to data blobs checked (a chunk a snapshot uses twice counts twice)
	PacksRead int       `json:"packs_read"` // deep: packs read whole
	BytesRead int64     `json:"bytes_read"` // deep: bytes of those packs
	Problems  []Problem `json:"problems"`   // each with the snapshot's paths it breaks
}

// OK reports whether the snapshot verified.
func (v *VerifyReport) OK() bool { return len(v.Problems) == 0 }

// ProblemLines gives each problem as one line: the broken object, why, and
// the first path it breaks ("data blob 1a2b...: pack 3c4d... that holds it
// is missing (/src/a.txt and 2 more paths)").
func (v *VerifyReport) ProblemLines() []string {
	lines := make([]string, 0, len(v.Problems))
	for _, p := range v.Problems {
		line := p.Object + ": " + p.Error
		if len(p.Affected) > 0 {
			line += " (" + p.Affected[0].Path
			if p.Total > 1 {
				line += fmt.Sprintf(" and %d more paths", p.Total-1)
			}
			line += ")"
		}
		lines = append(lines, line)
	}
	return lines
}

// VerifySnapshot checks one snapshot. Structural (deep false): its record
// opens, every tree it uses loads and decodes, and every chunk it
// references has an index entry in a pack that exists and is long enough.
// Deep: besides, every pack holding a chunk or tree of the snapshot is read
// whole, once, and each of its blobs decrypted and checked against its ID;
// at most one pack per core plus one is in memory at a time. Problems name
// the broken object and the snapshot's paths it breaks.
//
// The caller loads the index first (LoadIndex) and holds a lock of the
// repository (a shared one suffices), so that no prune removes what it
// reads. A snapshot that does not exist fails with an error wrapping
// ErrSnapshotNotFound; a snapshot record that cannot be opened is a
// problem of the report.
func (r *Repository) VerifySnapshot(ctx context.Context, id string, deep bool) (*VerifyReport, error) {
	rep := &VerifyReport{Snapshot: id, Deep: deep}
	s, err := r.LoadSnapshot(ctx, id)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, ErrIntegrity) || errors.Is(err, ErrUnsupportedVersion):
		rep.Problems = []Problem{{Object: "snapshot " + id, Error: err.Error()}}
		return rep, nil
	default:
		return nil, fmt.Errorf("verify snapshot %s: %w", id, err)
	}
	c := newChecker(r)
	c.rereadDone = true // the caller loaded the index: there are no index files read here to compare with
	packSizes, err := c.listPacks(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify snapshot %s: %w", id, err)
	}
	if err := c.checkEntries(packSizes); err != nil {
		return nil, fmt.Errorf("verify snapshot %s: %w", id, err)
	}
	if deep {
		packs, err := r.packsOfSnapshot(ctx, s.Tree, packSizes)
		if err != nil {
			return nil, fmt.Errorf("verify snapshot %s: %w", id, err)
		}
		if err := c.readPacks(ctx, packSizes, packs); err != nil {
			return nil, fmt.Errorf("verify snapshot %s: %w", id, err)
		}
		rep.PacksRead, rep.BytesRead = c.report.PacksRead, c.report.BytesRead
	}
	refs, err := c.walkSnapshot(ctx, s.Tree)
	if err != nil {
		return nil, fmt.Errorf("verify snapshot %s: %w", id, err)
	}
	rep.Trees, rep.Blobs = c.report.Trees, c.blobRefs
	// Only the problems that break this snapshot count: check's
	// bookkeeping also marks blobs of other snapshots.
	for _, ref := range refs {
		c.affect(ref.object, "", id, "/"+ref.path)
	}
	for _, p := range c.problems {
		if p.Total > 0 {
			rep.Problems = append(rep.Problems, *p)
		}
	}
	sort.Slice(rep.Problems, func(i, j int) bool { return rep.Problems[i].Object < rep.Problems[j].Object })
	return rep, nil
}

// packsOfSnapshot returns the existing packs that hold a copy of a tree or
// a data blob of the snapshot with root tree root: what a deep verification
// reads. A tree that cannot be loaded is passed over here; the walk that
// follows reports it.
func (r *Repository) packsOfSnapshot(ctx context.Context, root ID, packSizes map[ID]int64) (map[ID]bool, error) {
	packs := map[ID]bool{}
	seenTrees := map[ID]bool{}
	// Every place of a blob is read: a healed copy beside a lost or
	// damaged one is what keeps the snapshot whole.
	add := func(id ID) {
		b, ok := r.idx.Lookup(id)
		if !ok {
			return
		}
		for _, p := range append([]IndexedBlob{b}, r.idx.alternates(id)...) {
			if _, exists := packSizes[p.Pack]; exists {
				packs[p.Pack] = true
			}
		}
	}
	err := r.Walk(ctx, root, WalkOptions{}, WalkVisitor{
		Enter: func(_ *WalkEntry, id ID) error {
			add(id)
			if seenTrees[id] {
				return SkipTree
			}
			seenTrees[id] = true
			return nil
		},
		Tree: func(_ *WalkEntry, _ ID, parts []ID, _ *Tree) error {
			for _, p := range parts {
				add(p)
			}
			return nil
		},
		Node: func(e *WalkEntry) error {
			if e.Node.Type == NodeFile {
				for _, b := range e.Node.Content {
					add(b)
				}
			}
			return nil
		},
		TreeError: func(*WalkEntry, ID, error) error { return nil },
	})
	return packs, err
}
