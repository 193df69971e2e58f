package repo

import (
	"context"
	"encoding/json"
)

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

// SaveLockObject stores a lock object with info that no process holds: what
// a holder that died leaves, on this host or another.
func (r *Repository) SaveLockObject(ctx context.Context, info LockInfo) (string, error) {
	plain, err := json.Marshal(info)
	if err != nil {
		return "", err
	}
	name := NewSnapshotID()
	return name, r.be.Save(ctx, Handle{Type: LockFile, Name: name}, sealObject(r.seal, "lock", name, plain))
}
