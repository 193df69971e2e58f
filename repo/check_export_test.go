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
