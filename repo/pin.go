package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"sort"
	"time"
)

// ErrNotPinned: unpin was asked for a snapshot that has no pin.
var ErrNotPinned = errors.New("snapshot is not pinned")

// Pin keeps one snapshot from every forget, whatever the policy. It is its
// own object, pins/<snapshot ID>, so that pinning never rewrites a snapshot
// record. The object's name is what pins: forget keeps a snapshot whose pin
// exists, also when the pin's content cannot be read.
type Pin struct {
	Snapshot string    `json:"snapshot"` // the pinned snapshot's full ID (also the object's name)
	Reason   string    `json:"reason"`
	Hostname string    `json:"hostname"` // who pinned it, and when
	Username string    `json:"username"`
	Time     time.Time `json:"time"`
}

// Pin pins the snapshot with this full ID, or gives a pinned one a new
// reason. The snapshot must exist. It holds the repository's shared lock
// while it works, so that it never runs beside a forget (see docs/FORMAT.md,
// Pins): a busy repository fails at once with an error wrapping ErrBusy.
func (r *Repository) Pin(ctx context.Context, snapshotID, reason string) (_ *Pin, err error) {
	if !ValidSnapshotID(snapshotID) {
		return nil, fmt.Errorf("pin %q: %w", snapshotID, ErrSnapshotNotFound)
	}
	lock, err := r.Lock(ctx, false, "pin")
	if err != nil {
		return nil, fmt.Errorf("pin %s: %w", snapshotID, err)
	}
	defer lock.Release(&err)
	switch ok, err := r.HasSnapshot(ctx, snapshotID); {
	case err != nil:
		return nil, fmt.Errorf("pin %s: %w", snapshotID, err)
	case !ok:
		return nil, fmt.Errorf("pin %s: %w", snapshotID, ErrSnapshotNotFound)
	}
	p := &Pin{Snapshot: snapshotID, Reason: reason, Time: r.now().UTC()}
	p.Hostname, _ = os.Hostname()
	if u, err := user.Current(); err == nil {
		p.Username = u.Username
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode pin: %w", err)
	}
	// A pin is the one object besides config that is replaced whole: a
	// second pin of a snapshot updates its reason, who and when.
	if err := r.be.Save(ctx, Handle{Type: PinFile, Name: snapshotID}, sealObject(r.seal, "pin", snapshotID, plain)); err != nil {
		return nil, fmt.Errorf("pin %s: %w", snapshotID, err)
	}
	return p, nil
}

// Unpin removes the pin of the snapshot with this full ID; the snapshot
// itself need not exist any more. A snapshot without a pin fails with an
// error wrapping ErrNotPinned. Like Pin, it holds the shared lock.
func (r *Repository) Unpin(ctx context.Context, snapshotID string) (err error) {
	if !ValidSnapshotID(snapshotID) {
		return fmt.Errorf("unpin %q: %w", snapshotID, ErrNotPinned)
	}
	lock, err := r.Lock(ctx, false, "unpin")
	if err != nil {
		return fmt.Errorf("unpin %s: %w", snapshotID, err)
	}
	defer lock.Release(&err)
	err = r.be.Remove(ctx, Handle{Type: PinFile, Name: snapshotID})
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("unpin %s: %w", snapshotID, ErrNotPinned)
	}
	if err != nil {
		return fmt.Errorf("unpin %s: %w", snapshotID, err)
	}
	return nil
}

// PinnedIDs returns the IDs of the pinned snapshots, sorted, from the names
// of the pin objects alone: what forget must keep, even where a pin's
// content is damaged. A repository made before pins existed has none.
func (r *Repository) PinnedIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := r.be.List(ctx, PinFile, func(name string, _ int64) error {
		if ValidSnapshotID(name) {
			ids = append(ids, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list pins: %w", err)
	}
	sort.Strings(ids)
	return ids, nil
}

// Pins loads every pin, by snapshot ID. A pin that cannot be read fails the
// call with an error naming it.
func (r *Repository) Pins(ctx context.Context) (map[string]*Pin, error) {
	ids, err := r.PinnedIDs(ctx)
	if err != nil {
		return nil, err
	}
	pins := make(map[string]*Pin, len(ids))
	for _, id := range ids {
		p, err := r.loadPin(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // unpinned since it was listed
		}
		if err != nil {
			return nil, err
		}
		pins[id] = p
	}
	return pins, nil
}

func (r *Repository) loadPin(ctx context.Context, id string) (*Pin, error) {
	data, err := r.be.Load(ctx, Handle{Type: PinFile, Name: id}, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("load pin %s: %w", id, err)
	}
	plain, err := openObject(r.seal, "pin", id, data)
	if err != nil {
		return nil, err
	}
	var p Pin
	if err := json.Unmarshal(plain, &p); err != nil {
		return nil, fmt.Errorf("pin %s: %v: %w", id, err, ErrIntegrity)
	}
	if p.Snapshot != id {
		return nil, fmt.Errorf("pin %s names snapshot %q: %w", id, p.Snapshot, ErrIntegrity)
	}
	return &p, nil
}

// checkPins reads every pin: a damaged one is a problem (its reason is
// lost, though its name still pins), a pin of a snapshot that no longer
// exists is listed in DanglingPins, a warning: it loses no data.
func (c *checker) checkPins(ctx context.Context) error {
	ids, err := c.r.PinnedIDs(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := c.r.loadPin(ctx, id); err != nil {
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.problem("pin "+id, err.Error())
			continue
		}
		switch ok, err := c.r.HasSnapshot(ctx, id); {
		case err != nil:
			return fmt.Errorf("pin %s: %w", id, err)
		case !ok:
			c.report.DanglingPins = append(c.report.DanglingPins, id)
		}
	}
	return nil
}
