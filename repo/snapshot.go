package repo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Snapshot is the record of one backup. It becomes visible, and the backup
// complete, when its object is written; everything it refers to is written
// and indexed before.
type Snapshot struct {
	ID             string          `json:"-"` // the object's name
	Time           time.Time       `json:"time"`
	Hostname       string          `json:"hostname"`
	Username       string          `json:"username"`
	Paths          []string        `json:"paths"` // absolute source paths, sorted
	Tags           []string        `json:"tags,omitempty"`
	Excludes       []string        `json:"excludes,omitempty"`
	Parent         string          `json:"parent,omitempty"`
	Tree           ID              `json:"tree"`      // root tree: the sources under their full paths
	Inventory      []ID            `json:"inventory"` // inventory blobs in order
	ProgramVersion string          `json:"program_version"`
	Summary        SnapshotSummary `json:"summary"`
}

// SnapshotSummary holds the figures of the backup that made a snapshot.
type SnapshotSummary struct {
	Started        time.Time `json:"started"`
	Finished       time.Time `json:"finished"`
	FilesNew       int64     `json:"files_new"`
	FilesChanged   int64     `json:"files_changed"`
	FilesUnchanged int64     `json:"files_unchanged"`
	Dirs           int64     `json:"dirs"`
	OtherEntries   int64     `json:"other_entries"` // symlinks, FIFOs, devices, sockets
	BytesRead      int64     `json:"bytes_read"`
	BytesAdded     int64     `json:"bytes_added"` // stored bytes of new blobs (after dedup, compression, sealing)
	TotalSize      int64     `json:"total_size"`  // size of all files in the snapshot
	FilesSkipped   int64     `json:"files_skipped"`
	Skipped        []Skip    `json:"skipped,omitempty"` // the first MaxListedSkips
	ChangedDuring  []string  `json:"changed_during_read,omitempty"`
	Partial        bool      `json:"partial"` // something was skipped: not a complete backup
}

// Skip is one entry that a backup could not save, and why.
type Skip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// MaxListedSkips bounds the skipped entries listed in a snapshot; all are
// counted.
const MaxListedSkips = 1000

// NewSnapshotID returns a random snapshot ID of 32 hex digits.
func NewSnapshotID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("nightjar: system random source failed: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// ValidSnapshotID reports whether id may name a snapshot: 1 to 64 of
// [A-Za-z0-9._-], not starting with '.'.
func ValidSnapshotID(id string) bool {
	if id == "" || len(id) > 64 || id[0] == '.' {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// SaveSnapshot writes the snapshot record. Call it only after Flush.
func (r *Repository) SaveSnapshot(ctx context.Context, s *Snapshot) error {
	if !ValidSnapshotID(s.ID) {
		return fmt.Errorf("invalid snapshot id %q", s.ID)
	}
	plain, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	h := Handle{Type: SnapshotFile, Name: s.ID}
	switch _, err := r.be.Stat(ctx, h); {
	case err == nil:
		return fmt.Errorf("snapshot %s already exists", s.ID)
	case !errors.Is(err, ErrNotFound):
		return fmt.Errorf("save snapshot %s: %w", s.ID, err)
	}
	return r.be.Save(ctx, h, sealObject(r.seal, "snapshot", s.ID, plain))
}

// HasSnapshot reports whether a snapshot with exactly this ID exists.
func (r *Repository) HasSnapshot(ctx context.Context, id string) (bool, error) {
	_, err := r.be.Stat(ctx, Handle{Type: SnapshotFile, Name: id})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// LoadSnapshot reads one snapshot record by its full ID.
func (r *Repository) LoadSnapshot(ctx context.Context, id string) (*Snapshot, error) {
	data, err := r.be.Load(ctx, Handle{Type: SnapshotFile, Name: id}, 0, -1)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", id, ErrSnapshotNotFound)
	}
	if err != nil {
		return nil, err
	}
	plain, err := openObject(r.seal, "snapshot", id, data)
	if err != nil {
		return nil, err
	}
	var s Snapshot
	if err := json.Unmarshal(plain, &s); err != nil {
		return nil, fmt.Errorf("snapshot %s: %v: %w", id, err, ErrIntegrity)
	}
	s.ID = id
	return &s, nil
}

// ListSnapshotIDs returns the IDs of all snapshots.
func (r *Repository) ListSnapshotIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := r.be.List(ctx, SnapshotFile, func(name string, _ int64) error {
		ids = append(ids, name)
		return nil
	})
	sort.Strings(ids)
	return ids, err
}

// Snapshots loads every snapshot record, oldest first. A record that
// cannot be read fails the call.
func (r *Repository) Snapshots(ctx context.Context) ([]*Snapshot, error) {
	ids, err := r.ListSnapshotIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	snaps := make([]*Snapshot, 0, len(ids))
	for _, id := range ids {
		s, err := r.LoadSnapshot(ctx, id)
		if err != nil {
			return nil, err
		}
		snaps = append(snaps, s)
	}
	SortSnapshots(snaps)
	return snaps, nil
}

// SortSnapshots orders snapshots by time, then ID.
func SortSnapshots(snaps []*Snapshot) {
	sort.SliceStable(snaps, func(i, j int) bool {
		if !snaps[i].Time.Equal(snaps[j].Time) {
			return snaps[i].Time.Before(snaps[j].Time)
		}
		return snaps[i].ID < snaps[j].ID
	})
}

// FindSnapshot resolves "latest", a full ID or a unique ID prefix. With
// "latest", only snapshots whose paths equal paths count when paths is not
// empty.
func (r *Repository) FindSnapshot(ctx context.Context, ref string, paths []string) (*Snapshot, error) {
	if ref == "" {
		return nil, fmt.Errorf("empty snapshot reference: want an ID, a prefix of one, or latest")
	}
	if ref == "latest" {
		snaps, err := r.Snapshots(ctx)
		if err != nil {
			return nil, err
		}
		for i := len(snaps) - 1; i >= 0; i-- {
			if len(paths) == 0 || slices.Equal(snaps[i].Paths, paths) {
				return snaps[i], nil
			}
		}
		return nil, fmt.Errorf("latest: %w", ErrSnapshotNotFound)
	}
	ids, err := r.ListSnapshotIDs(ctx)
	if err != nil {
		return nil, err
	}
	var match []string
	for _, id := range ids {
		if id == ref {
			return r.LoadSnapshot(ctx, id)
		}
		if strings.HasPrefix(id, ref) {
			match = append(match, id)
		}
	}
	switch len(match) {
	case 0:
		return nil, fmt.Errorf("%q: %w", ref, ErrSnapshotNotFound)
	case 1:
		return r.LoadSnapshot(ctx, match[0])
	}
	return nil, fmt.Errorf("snapshot prefix %q is ambiguous: %d snapshots start with it", ref, len(match))
}

// An inventory is the sorted, duplicate-free list of the IDs of every blob a
// snapshot's trees refer to (its trees and file contents), stored as
// inventory blobs (32 bytes per ID, no framing) whose concatenation is the
// list. A blob ends after an ID whose last two bytes, read as a big-endian
// number, are below InventoryCutBelow (about one ID in 1024, so blobs of
// about 32 KiB), or at InventoryBlobIDs IDs. The cut points depend only on
// the IDs, so a snapshot that differs from its parent in a few blobs
// shares all other inventory blobs with it, and stores only the few that
// changed. Prune can merge inventories with the sorted index files as
// streams.

// InventoryBlobIDs is the most IDs one inventory blob holds (2 MiB).
const InventoryBlobIDs = 1 << 16

// InventoryCutBelow: an inventory blob ends after an ID whose last two
// bytes (big-endian) are below this value.
const InventoryCutBelow = 64

func inventoryCut(id ID) bool {
	return int(id[30])<<8|int(id[31]) < InventoryCutBelow
}

// InventoryWriter stores a sorted stream of IDs as inventory blobs.
type InventoryWriter struct {
	r     *Repository
	buf   []byte
	last  ID
	any   bool
	blobs []ID
}

// NewInventoryWriter starts an inventory.
func (r *Repository) NewInventoryWriter() *InventoryWriter {
	return &InventoryWriter{r: r}
}

// Add appends id, which must sort after every ID added before.
func (w *InventoryWriter) Add(ctx context.Context, id ID) error {
	if w.any && string(id[:]) <= string(w.last[:]) {
		return fmt.Errorf("inventory: %s added after %s", id.Short(), w.last.Short())
	}
	w.last, w.any = id, true
	w.buf = append(w.buf, id[:]...)
	if inventoryCut(id) || len(w.buf) >= InventoryBlobIDs*32 {
		return w.flush(ctx)
	}
	return nil
}

func (w *InventoryWriter) flush(ctx context.Context) error {
	if len(w.buf) == 0 {
		return nil
	}
	id := w.r.BlobID(w.buf)
	if _, err := w.r.SaveBlob(ctx, InventoryBlob, id, w.buf); err != nil {
		return err
	}
	w.blobs = append(w.blobs, id)
	w.buf = w.buf[:0]
	return nil
}

// Close stores the last blob and returns the inventory's blob IDs.
func (w *InventoryWriter) Close(ctx context.Context) ([]ID, error) {
	if err := w.flush(ctx); err != nil {
		return nil, err
	}
	return w.blobs, nil
}

// ReadInventory calls fn for each ID of a snapshot's inventory, in order.
func (r *Repository) ReadInventory(ctx context.Context, s *Snapshot, fn func(ID) error) error {
	var last ID
	first := true
	for _, blob := range s.Inventory {
		data, err := r.LoadBlob(ctx, blob)
		if err != nil {
			return fmt.Errorf("inventory of %s: %w", s.ID, err)
		}
		if len(data)%32 != 0 {
			return fmt.Errorf("inventory of %s: blob of %d bytes: %w", s.ID, len(data), ErrIntegrity)
		}
		for off := 0; off < len(data); off += 32 {
			id := ID(data[off : off+32])
			if !first && string(id[:]) <= string(last[:]) {
				return fmt.Errorf("inventory of %s: not sorted: %w", s.ID, ErrIntegrity)
			}
			first, last = false, id
			if err := fn(id); err != nil {
				return err
			}
		}
	}
	return nil
}
