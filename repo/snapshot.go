package repo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
	"sync"
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
	Run            int64           `json:"run,omitempty"` // the scheduled run that made it, by the state database's number; 0: none
	Excludes       []string        `json:"excludes,omitempty"`
	Parent         string          `json:"parent,omitempty"`
	Tree           ID              `json:"tree"` // root tree: the sources under their full paths
	ProgramVersion string          `json:"program_version"`
	Summary        SnapshotSummary `json:"summary"`
	CopiedFrom     *SnapshotOrigin `json:"copied_from,omitempty"` // set by copy (repo/copy.go)
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
	return len(id) <= 64 && ValidObjectName(id)
}

// SaveSnapshot writes the snapshot record, once its write session has
// ended: everything the snapshot names is durable and indexed. Its root
// tree must be indexed. A snapshot without an ID gets a new random one
// (NewSnapshotID), which no snapshot in the repository can have: 128
// random bits; it is set in s only when the save succeeds. An ID the
// caller chose is first looked up, and one that exists is refused, never
// overwritten.
func (w *Written) SaveSnapshot(ctx context.Context, s *Snapshot) (err error) {
	if w == nil || w.r == nil {
		return errors.New("save snapshot: no finished write session")
	}
	r := w.r
	// A snapshot saved after its lock was lost may name blobs a prune
	// beside it deleted.
	if err := r.checkLocks(); err != nil {
		return fmt.Errorf("save snapshot: %w", err)
	}
	if !r.idx.Has(s.Tree) {
		return fmt.Errorf("save snapshot: its tree %s is not stored", s.Tree.Short())
	}
	chosen := s.ID != ""
	if !chosen {
		s.ID = NewSnapshotID()
		// A failed save leaves the snapshot without an ID again, so that
		// a retry with it makes a fresh one instead of taking the one
		// that may have landed as chosen and refusing itself.
		defer func() {
			if err != nil {
				s.ID = ""
			}
		}()
	}
	if !ValidSnapshotID(s.ID) {
		return fmt.Errorf("invalid snapshot id %q", s.ID)
	}
	plain, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	h := Handle{Type: SnapshotFile, Name: s.ID}
	if chosen {
		switch _, err := r.be.Stat(ctx, h); {
		case err == nil:
			return fmt.Errorf("snapshot %s already exists", s.ID)
		case !errors.Is(err, ErrNotFound):
			return fmt.Errorf("save snapshot %s: %w", s.ID, err)
		}
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

// UnreadableSnapshot is a snapshot file that is in the repository but
// cannot be read: damaged, stray (another repository's, garbage) or written
// by a newer nightjar.
type UnreadableSnapshot struct {
	ID  string
	Err error
}

// File is the unreadable file's path in the repository: snapshots/ID.
func (u UnreadableSnapshot) File() string { return string(SnapshotFile) + "/" + u.ID }

// unreadableSnapshots remembers the unreadable snapshot files a Repository
// met, so that each is reported once however often the list is read.
type unreadableSnapshots struct {
	mu     sync.Mutex
	met    map[string]UnreadableSnapshot
	report func([]UnreadableSnapshot)
}

// ReportUnreadableSnapshots makes every later read of the snapshot list
// (Snapshots, ReadSnapshots, FindSnapshot's "latest") call report with the
// unreadable snapshot files it skipped that were not reported before.
func (r *Repository) ReportUnreadableSnapshots(report func([]UnreadableSnapshot)) {
	r.unreadable.mu.Lock()
	r.unreadable.report = report
	r.unreadable.mu.Unlock()
}

// UnreadableSnapshots returns every unreadable snapshot file that a read of
// the snapshot list skipped so far, by ID.
func (r *Repository) UnreadableSnapshots() []UnreadableSnapshot {
	r.unreadable.mu.Lock()
	defer r.unreadable.mu.Unlock()
	out := make([]UnreadableSnapshot, 0, len(r.unreadable.met))
	for _, u := range r.unreadable.met {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// metUnreadable records the unreadable snapshot files of one listing and
// reports those not reported before.
func (r *Repository) metUnreadable(list []UnreadableSnapshot) {
	if len(list) == 0 {
		return
	}
	u := &r.unreadable
	u.mu.Lock()
	var fresh []UnreadableSnapshot
	for _, s := range list {
		if _, ok := u.met[s.ID]; !ok {
			if u.met == nil {
				u.met = map[string]UnreadableSnapshot{}
			}
			u.met[s.ID] = s
			fresh = append(fresh, s)
		}
	}
	report := u.report
	u.mu.Unlock()
	if report != nil && len(fresh) > 0 {
		report(fresh)
	}
}

// unreadableSnapshot reports whether err, of loading one snapshot file,
// says that the file itself is bad (damaged, stray, of a newer format, or
// refused by the file system) rather than that the storage failed.
func unreadableSnapshot(err error) bool {
	return errors.Is(err, ErrIntegrity) || errors.Is(err, ErrUnsupportedVersion) || errors.Is(err, fs.ErrPermission)
}

// ReadSnapshots reads every snapshot record, oldest first. This is the one
// rule for a list of snapshots: a file that cannot be read (damaged, stray,
// of a newer format) is returned in unreadable, not as an error, and
// reported (ReportUnreadableSnapshots); one that vanished since it was
// listed (a forget completed) is left out; any other failure, such as
// storage that cannot be read, is the error, so that an unreachable
// repository never passes for damaged records.
func (r *Repository) ReadSnapshots(ctx context.Context) (snaps []*Snapshot, unreadable []UnreadableSnapshot, err error) {
	ids, err := r.ListSnapshotIDs(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("list snapshots: %w", err)
	}
	snaps = make([]*Snapshot, 0, len(ids))
	for _, id := range ids {
		s, err := r.LoadSnapshot(ctx, id)
		switch {
		case err == nil:
			snaps = append(snaps, s)
		case errors.Is(err, ErrSnapshotNotFound):
		case unreadableSnapshot(err) && ctx.Err() == nil:
			unreadable = append(unreadable, UnreadableSnapshot{ID: id, Err: err})
		default:
			return nil, nil, fmt.Errorf("read snapshot %s: %w", id, err)
		}
	}
	SortSnapshots(snaps)
	r.metUnreadable(unreadable)
	return snaps, unreadable, nil
}

// Snapshots loads every readable snapshot record, oldest first; the
// unreadable ones are skipped and reported, as ReadSnapshots does.
func (r *Repository) Snapshots(ctx context.Context) ([]*Snapshot, error) {
	snaps, _, err := r.ReadSnapshots(ctx)
	return snaps, err
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
