package repo

import (
	"context"
	"encoding/json"
	"errors"
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
// It holds the exclusive lock, as Forget does, so that no forget removes a
// snapshot while its record is replaced and no two tag changes race. A
// changed snapshot keeps its ID: its record is replaced whole, atomically,
// under the same name (docs/FORMAT.md, Changed snapshots), so that its pin,
// its verification record, the snapshots that name it as their parent
// and the runs that recorded it still refer to it, and a crash leaves
// either the old record or the new one. A snapshot that an interrupted
// forget marked is not changed: the next forget removes it.
func (r *Repository) ChangeTags(ctx context.Context, selectSnaps TagSelect, change TagChange) (*TagResult, error) {
	lock, err := r.Lock(ctx, true, "tag")
	if err != nil {
		return nil, fmt.Errorf("tag: %w", err)
	}
	defer lock.Unlock()
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
		changed := *s
		changed.Tags = tags
		if err := r.replaceSnapshot(ctx, &changed); err != nil {
			return nil, fmt.Errorf("tag %s: %w", id, err)
		}
		res.Changed = append(res.Changed, TagsChanged{Snapshot: &changed, Old: s.Tags})
	}
	return res, nil
}

// replaceSnapshot writes a changed record of an existing snapshot under its
// own ID, replacing the old one whole (Backend.Save is atomic). Only the
// snapshot's tags may differ from what is stored: what it refers to stays
// the same, so nothing it names can be missing.
func (r *Repository) replaceSnapshot(ctx context.Context, s *Snapshot) error {
	old, err := r.LoadSnapshot(ctx, s.ID)
	if err != nil {
		return err
	}
	same := *old
	same.Tags = s.Tags
	if !snapshotsEqual(&same, s) {
		return errors.New("replace snapshot: only its tags may change")
	}
	plain, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	return r.be.Save(ctx, Handle{Type: SnapshotFile, Name: s.ID}, sealObject(r.seal, "snapshot", s.ID, plain))
}

// snapshotsEqual compares two snapshot records by their encoding.
func snapshotsEqual(a, b *Snapshot) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
