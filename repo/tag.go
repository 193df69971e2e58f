package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// TagChange is a change of the tags of snapshots, as restic's tag command
// makes it: Set replaces the tags when SetTags is true (an empty Set
// removes them all), then Add adds the tags a snapshot lacks and Remove
// takes tags away.
type TagChange struct {
	Set     []string
	SetTags bool
	Add     []string
	Remove  []string
}

// Apply returns tags changed by c. Tags keep their order; added ones go at
// the end; a tag is never listed twice.
func (c TagChange) Apply(tags []string) []string {
	var out []string
	if !c.SetTags {
		out = slices.Clone(tags)
	}
	for _, t := range slices.Concat(c.Set, c.Add) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return slices.DeleteFunc(out, func(t string) bool { return slices.Contains(c.Remove, t) })
}

// TagSelect chooses, by full ID, the snapshots whose tags change, from the
// snapshots the repository holds (oldest first). ChangeTags calls it while
// it holds the exclusive lock.
type TagSelect func(snapshots []*Snapshot) ([]string, error)

// TagResult is what ChangeTags did, each list in the order of the
// selection.
type TagResult struct {
	Changed    []TagsChanged
	Unchanged  []*Snapshot // had the tags asked for already
	Forgetting []string    // being forgotten (an interrupted forget marked them): left alone
}

// TagsChanged is a snapshot whose tags changed, and its tags before.
type TagsChanged struct {
	Snapshot *Snapshot // as it is now
	Old      []string
}

// ChangeTags changes the tags of the snapshots that selectSnaps chooses.
// When it fails part way, it returns what it did before with the error.
// It holds the exclusive lock, as Forget does, so that no forget removes a
// snapshot while its record is replaced and no two tag changes race. A
// changed snapshot keeps its ID: its record is replaced whole, atomically,
// under the same name (docs/FORMAT.md, Changed snapshots), so that its pin,
// its verification record, the snapshots that name it as their parent
// and the runs that recorded it still refer to it, and a crash leaves
// either the old record or the new one. A snapshot that an interrupted
// forget marked is not changed: the next forget removes it.
func (r *Repository) ChangeTags(ctx context.Context, selectSnaps TagSelect, change TagChange) (_ *TagResult, err error) {
	lock, err := r.Lock(ctx, true, "tag")
	if err != nil {
		return nil, fmt.Errorf("tag: %w", err)
	}
	defer lock.Release(&err)
	snaps, err := r.Snapshots(ctx)
	if err != nil {
		return nil, fmt.Errorf("tag: %w", err)
	}
	ids, err := selectSnaps(snaps)
	if err != nil {
		return nil, fmt.Errorf("tag: %w", err)
	}
	forgetting, err := r.ForgettingIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("tag: %w", err)
	}
	byID := make(map[string]*Snapshot, len(snaps))
	for _, s := range snaps {
		byID[s.ID] = s
	}
	res := &TagResult{}
	for _, id := range ids {
		s, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("tag %s: %w", id, ErrSnapshotNotFound)
		}
		if slices.Contains(forgetting, id) {
			res.Forgetting = append(res.Forgetting, id)
			continue
		}
		tags := change.Apply(s.Tags)
		if slices.Equal(tags, s.Tags) {
			res.Unchanged = append(res.Unchanged, s)
			continue
		}
		changed, err := r.retagSnapshot(ctx, id, tags)
		if err != nil {
			return res, fmt.Errorf("tag %s: %w", id, err)
		}
		res.Changed = append(res.Changed, TagsChanged{Snapshot: changed, Old: s.Tags})
	}
	return res, nil
}

// retagSnapshot writes the record of snapshot id again with tags, under
// its own ID, replacing the old one whole (Backend.Save is atomic). Every
// other field is kept exactly as stored, also those this version does not
// know, so that what the snapshot refers to stays the same and nothing it
// names can be missing.
func (r *Repository) retagSnapshot(ctx context.Context, id string, tags []string) (*Snapshot, error) {
	h := Handle{Type: SnapshotFile, Name: id}
	data, err := r.be.Load(ctx, h, 0, -1)
	if err != nil {
		return nil, err
	}
	plain, err := openObject(r.seal, "snapshot", id, data)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(plain, &fields); err != nil {
		return nil, fmt.Errorf("snapshot %s: %v: %w", id, err, ErrIntegrity)
	}
	delete(fields, "tags")
	if len(tags) > 0 {
		if fields["tags"], err = json.Marshal(tags); err != nil {
			return nil, err
		}
	}
	if plain, err = json.Marshal(fields); err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	var s Snapshot
	if err := json.Unmarshal(plain, &s); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	s.ID = id
	if err := r.checkLocks(); err != nil {
		return nil, err
	}
	if err := r.be.Save(ctx, h, sealObject(r.seal, "snapshot", id, plain)); err != nil {
		return nil, err
	}
	return &s, nil
}
