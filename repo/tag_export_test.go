package repo

import "context"

// SaveSnapshotJSON stores plain as the record of snapshot id, sealed, as a
// version that writes fields this one does not know would.
func (r *Repository) SaveSnapshotJSON(ctx context.Context, id string, plain []byte) error {
	return r.be.Save(ctx, Handle{Type: SnapshotFile, Name: id}, sealObject(r.seal, "snapshot", id, plain))
}

// SnapshotJSON returns the plaintext of snapshot id's record.
func (r *Repository) SnapshotJSON(ctx context.Context, id string) ([]byte, error) {
	data, err := r.be.Load(ctx, Handle{Type: SnapshotFile, Name: id}, 0, -1)
	if err != nil {
		return nil, err
	}
	return openObject(r.seal, "snapshot", id, data)
}
