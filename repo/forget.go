package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"time"
)

// ForgetPlan chooses the snapshots to forget, by full ID, from the
// snapshots the repository holds (oldest first) and the IDs of the pinned
// ones. Forget calls it while it holds the exclusive lock, so that it
// decides on what the repository holds at that moment.
type ForgetPlan func(snapshots []*Snapshot, pinned map[string]bool) ([]string, error)

// ForgetOptions says what a Forget removes.
type ForgetOptions struct {
	Plan ForgetPlan
	// GroupKey gives a snapshot's retention group. Forget refuses to
	// remove the newest snapshot of any group (a safety net beneath the
	// policy, which never chooses it).
	GroupKey func(*Snapshot) string
}

// ForgetResult is what a Forget removed and kept, each list sorted.
type ForgetResult struct {
	Completed  []string `json:"completed"`   // snapshots of an interrupted forget, removed now
	Forgotten  []string `json:"forgotten"`   // the plan's snapshots, removed now
	KeptPinned []string `json:"kept_pinned"` // marked snapshots found pinned after marking: kept
}

// forgetMark is the content of a forgetting/<snapshot ID> object: who
// marked the snapshot, for people looking at a repository. What marks is
// the object's name.
type forgetMark struct {
	Snapshot string    `json:"snapshot"`
	Hostname string    `json:"hostname"`
	PID      int       `json:"pid"`
	Time     time.Time `json:"time"`
}

// Forget removes snapshot records by the protocol of docs/FORMAT.md
// (Forget): it takes the exclusive lock by trying (a busy repository fails
// at once with an error wrapping ErrBusy), completes the marks an
// interrupted forget left, asks the plan for its victims, marks them,
// lists the pins, unmarks the pinned victims, removes the records of the
// others and then their marks. Every step can be repeated: a forget that
// fails or dies at any point is completed by the next one. Data that only
// the removed snapshots referenced stays until a prune.
func (r *Repository) Forget(ctx context.Context, opts ForgetOptions) (_ *ForgetResult, err error) {
	if opts.Plan == nil || opts.GroupKey == nil {
		return nil, errors.New("forget: no plan or no grouping")
	}
	lock, err := r.Lock(ctx, true, "forget")
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	defer lock.Release(&err)

	res := &ForgetResult{}
	pending, err := r.ForgettingIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	if len(pending) > 0 {
		if res.Completed, res.KeptPinned, err = r.completeForget(ctx, pending); err != nil {
			return nil, fmt.Errorf("forget: complete an interrupted forget: %w", err)
		}
	}
	victims, err := r.planForget(ctx, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	for _, id := range victims {
		if err := r.markForget(ctx, id); err != nil {
			return nil, fmt.Errorf("forget: mark %s: %w", id, err)
		}
	}
	forgotten, kept, err := r.completeForget(ctx, victims)
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	res.Forgotten = forgotten
	res.KeptPinned = append(res.KeptPinned, kept...)
	sort.Strings(res.KeptPinned)
	return res, nil
}

// PreviewForget says what Forget would do now, without a lock and without
// writing anything (a dry run). Beside a running backup, a forget, or a pin
// it may be out of date by the time it returns.
func (r *Repository) PreviewForget(ctx context.Context, opts ForgetOptions) (*ForgetResult, error) {
	if opts.Plan == nil || opts.GroupKey == nil {
		return nil, errors.New("forget: no plan or no grouping")
	}
	pending, err := r.ForgettingIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	pinned, err := r.pinnedSet(ctx)
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	res := &ForgetResult{}
	completing := map[string]bool{}
	for _, id := range pending {
		if pinned[id] {
			res.KeptPinned = append(res.KeptPinned, id)
			continue
		}
		completing[id] = true
		switch ok, err := r.HasSnapshot(ctx, id); {
		case err != nil:
			return nil, fmt.Errorf("forget: %w", err)
		case ok:
			res.Completed = append(res.Completed, id)
		}
	}
	victims, err := r.planForget(ctx, opts, completing)
	if err != nil {
		return nil, fmt.Errorf("forget: %w", err)
	}
	for _, id := range victims {
		if pinned[id] {
			res.KeptPinned = append(res.KeptPinned, id)
		} else {
			res.Forgotten = append(res.Forgotten, id)
		}
	}
	sort.Strings(res.KeptPinned)
	return res, nil
}

// ForgettingIDs returns, sorted, the IDs of the snapshots marked as being
// forgotten: an interrupted forget's, which the next forget completes.
func (r *Repository) ForgettingIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := r.be.List(ctx, ForgetFile, func(name string, _ int64) error {
		if ValidSnapshotID(name) {
			ids = append(ids, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list forget marks: %w", err)
	}
	sort.Strings(ids)
	return ids, nil
}

// planForget loads the snapshots (without those in skip), asks the plan
// for its victims and checks them: each exists, none is given twice, and
// none is the newest of its group. It returns them sorted. The plan sees
// only the readable snapshots; an unreadable snapshot file (reported by
// ReadSnapshots, so UnreadableSnapshots lists it) may be a victim, named by
// its ID: forgetting it removes only the file.
func (r *Repository) planForget(ctx context.Context, opts ForgetOptions, skip map[string]bool) ([]string, error) {
	all, unreadable, err := r.ReadSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	snaps := slices.DeleteFunc(all, func(s *Snapshot) bool { return skip[s.ID] })
	pinned, err := r.pinnedSet(ctx)
	if err != nil {
		return nil, err
	}
	victims, err := opts.Plan(snaps, pinned)
	if err != nil {
		return nil, err
	}
	victims = slices.Clone(victims)
	sort.Strings(victims)
	newest := map[string]string{} // group key -> the ID of its newest snapshot
	known := map[string]bool{}
	for _, s := range snaps { // oldest first: the last one of a group is its newest
		newest[opts.GroupKey(s)] = s.ID
		known[s.ID] = true
	}
	for _, u := range unreadable {
		known[u.ID] = !skip[u.ID]
	}
	newestOf := map[string]string{}
	for key, id := range newest {
		newestOf[id] = key
	}
	for i, id := range victims {
		if i > 0 && victims[i-1] == id {
			return nil, fmt.Errorf("snapshot %s is to be forgotten twice", id)
		}
		if !known[id] {
			return nil, fmt.Errorf("%s: %w", id, ErrSnapshotNotFound)
		}
		if key, ok := newestOf[id]; ok {
			return nil, fmt.Errorf("refusing to forget snapshot %s: it is the newest of its group %s, which is always kept", id, key)
		}
	}
	return victims, nil
}

// markForget writes the durable mark that snapshot id is being forgotten.
func (r *Repository) markForget(ctx context.Context, id string) error {
	if err := r.checkLocks(); err != nil {
		return err
	}
	m := forgetMark{Snapshot: id, PID: os.Getpid(), Time: r.now().UTC()}
	m.Hostname, _ = os.Hostname()
	plain, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode forget mark: %w", err)
	}
	return r.be.Save(ctx, Handle{Type: ForgetFile, Name: id}, sealObject(r.seal, "forget", id, plain))
}

// completeForget finishes the forgetting of marked snapshots: it lists the
// pins (after the marks were written), unmarks the pinned ones, removes the
// records of the others (each with its verification record, if any) and
// then their marks. It returns the IDs whose
// record it removed or found removed, and those it kept for their pins.
func (r *Repository) completeForget(ctx context.Context, marked []string) (removed, pinnedKept []string, err error) {
	pinned, err := r.pinnedSet(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, id := range marked {
		if !pinned[id] {
			continue
		}
		if err := r.removeIfPresent(ctx, Handle{Type: ForgetFile, Name: id}); err != nil {
			return nil, nil, fmt.Errorf("unmark pinned snapshot %s: %w", id, err)
		}
		pinnedKept = append(pinnedKept, id)
	}
	verifiedIDs, err := r.VerifiedIDs(ctx)
	if err != nil {
		return nil, nil, err
	}
	verified := map[string]bool{}
	for _, id := range verifiedIDs {
		verified[id] = true
	}
	for _, id := range marked {
		if pinned[id] {
			continue
		}
		if err := r.removeIfPresent(ctx, Handle{Type: SnapshotFile, Name: id}); err != nil {
			return nil, nil, fmt.Errorf("remove snapshot %s: %w", id, err)
		}
		// Its verification record goes with it, before the mark, so that
		// a crash between the two is completed by the next forget.
		if verified[id] {
			if err := r.removeIfPresent(ctx, Handle{Type: VerifyFile, Name: id}); err != nil {
				return nil, nil, fmt.Errorf("remove verification of %s: %w", id, err)
			}
		}
		removed = append(removed, id)
	}
	for _, id := range removed {
		if err := r.removeIfPresent(ctx, Handle{Type: ForgetFile, Name: id}); err != nil {
			return nil, nil, fmt.Errorf("remove forget mark of %s: %w", id, err)
		}
	}
	return removed, pinnedKept, nil
}

// removeIfPresent removes an object; one that is already gone is no error,
// so that a step done before a crash can be done again. It removes
// nothing once a lock this Repository holds is lost.
func (r *Repository) removeIfPresent(ctx context.Context, h Handle) error {
	if err := r.checkLocks(); err != nil {
		return err
	}
	if err := r.be.Remove(ctx, h); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

func (r *Repository) pinnedSet(ctx context.Context) (map[string]bool, error) {
	ids, err := r.PinnedIDs(ctx)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set, nil
}
