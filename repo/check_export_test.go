package repo

import "context"

// CheckReadWindow and CheckTailRead are checkReadWindow and checkTailRead,
// for tests that bound the reads of check --read-data.
const (
	CheckReadWindow = checkReadWindow
	CheckTailRead   = checkTailRead
)

// SaveIndexFile stores an index file that lists blobs, as a stale or
// damaged index would list them, and returns its name.
func (r *Repository) SaveIndexFile(ctx context.Context, blobs []IndexedBlob) (string, error) {
	data := sealObject(r.seal, "index", "", encodeIndexBody(sortedIndexFile(blobs)))
	name := fileID(data).String()
	return name, r.be.Save(ctx, Handle{Type: IndexFile, Name: name}, data)
}

// CheckMemo is Check with sorters of budget bytes of tree IDs; it also
// returns how many trees the depth-first walk's memo held at the end.
func (r *Repository) CheckMemo(ctx context.Context, opts CheckOptions, budget int) (*CheckReport, int, error) {
	c := newChecker(r)
	c.treesBudget = budget
	rep, err := c.check(ctx, opts)
	return rep, len(c.wholeTrees) + len(c.treeRefs), err
}

// CheckStreamFrom is Check with the index streamed from blobs indexed (0:
// always, for a structural check), each of its sorters holding budget
// bytes of records before it spills a run.
func (r *Repository) CheckStreamFrom(ctx context.Context, opts CheckOptions, blobs, budget int) (*CheckReport, error) {
	c := newChecker(r)
	c.streamFrom, c.streamBudget = blobs, budget
	return c.check(ctx, opts)
}

// CheckStreamFromDefault is the index size from which Check streams it.
const CheckStreamFromDefault = checkStreamFrom
