package repo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/repo/extsort"
)

// ObjectTimer is implemented by backends that know when an object was
// stored (a local folder: the file's modification time). Prune deletes or
// repacks a pack only when it is older than PruneOptions.LeftoverAge; on a
// backend without ObjectTimer such packs are kept, and counted.
type ObjectTimer interface {
	// ModTime returns when the object h was stored, or an error wrapping
	// ErrNotFound.
	ModTime(ctx context.Context, h Handle) (time.Time, error)
}

// TempSweeper is implemented by backends whose temporary files prove
// whether their writer lives (the local folder: a lock its writer holds).
type TempSweeper interface {
	// SweepTemp removes the temporary files whose writer is provably
	// gone and counts the live ones; it never removes a live writer's.
	SweepTemp(ctx context.Context) (TempSweep, error)
}

// TempSweep is what a sweep of temporary files did.
type TempSweep struct {
	Removed      int   `json:"removed"`       // files of writers that are gone: removed
	BytesRemoved int64 `json:"bytes_removed"` // their size
	Live         int   `json:"live"`          // files of live writers: kept
}

// SweepTemp removes the temporary files of interrupted writes whose writer
// is provably gone, where the backend can tell (TempSweeper); elsewhere it
// does nothing. A backup, check or prune calls it at its start.
func (r *Repository) SweepTemp(ctx context.Context) (TempSweep, error) {
	ts, ok := Capability[TempSweeper](r.be)
	if !ok {
		return TempSweep{}, nil
	}
	return ts.SweepTemp(ctx)
}

// TempFiles is implemented by backends that keep the files of writes in
// progress apart from the objects (a local folder's tmp/). A write that
// was killed leaves its file behind; prune removes those older than
// PruneOptions.LeftoverAge.
type TempFiles interface {
	// ListTemp calls fn for each temporary file.
	ListTemp(ctx context.Context, fn func(name string, size int64, modTime time.Time) error) error
	// RemoveTemp removes one; one already gone is no error.
	RemoveTemp(ctx context.Context, name string) error
}

// packFigures is what prune knows of one pack. Prune keeps one per pack,
// in a map keyed by pack, with the index files' pack lists: the structures
// that grow with the repository, by about 150 bytes a pack. Packs are far
// fewer than blobs: a pack holds 16 MiB, at least 16 chunks of the default
// 1 MiB average and thousands of small files' blobs, so 10 million chunks
// of 1 MiB (10 TiB) make about 625,000 packs and 90 MiB of figures.
type packFigures struct {
	size        int64 // file size; -1: no such file
	indexed     bool  // an index file lists it
	usedBlobs   int64
	usedBytes   int64
	unusedBlobs int64
	unusedBytes int64
	action      packAction
}

// packAction is what prune does to a pack.
type packAction uint8

const (
	packKeep packAction = iota
	packDelete
	packRepack
	packGone          // indexed, wholly unused and already missing: only unindexed
	packLeftoverOld   // no index lists it, old enough: deleted
	packLeftoverYoung // no index lists it, too young or of unknown age: kept
	packKeptYoung     // indexed, to delete or repack, but too young or of unknown age: kept
)

// removed reports whether the pack leaves the index.
func (a packAction) removed() bool { return a == packDelete || a == packRepack || a == packGone }

// pruneRun is one Prune.
type pruneRun struct {
	r     *Repository
	opts  PruneOptions
	res   *PruneResult
	packs map[ID]*packFigures
	// indexFiles are the index files read, sorted, with the packs each
	// lists.
	indexFiles []indexFileInfo
	// copies are the used blobs (one copy each) by pack, then offset: the
	// blobs a repack copies, of the packs it chooses.
	copies *extsort.Sorter
	rec    [blobRecordSize]byte // count's record
}

type indexFileInfo struct {
	name  string
	packs []ID
}

// Prune deletes the data no remaining snapshot uses, by the steps of
// docs/FORMAT.md (Prune): it takes the exclusive lock by trying (a busy
// repository fails at once with an error wrapping ErrBusy), completes an
// interrupted forget, reads every snapshot and every tree they reference
// (one that cannot be read stops it with ErrInvalidManifest before
// anything is written), deletes packs nothing uses, repacks partly used
// ones with the most unused bytes first until opts.MaxUnused holds (within
// opts.MaxRepackSize), rewrites the index files that list packs it
// removes, and deletes packs no index lists; it deletes or repacks only
// packs older than opts.LeftoverAge, so that a live backup's packs, unused
// until its snapshot is saved, stay even if its lock was broken. Every
// step can be repeated, and a prune that fails or dies at any point is
// completed by the next one. It does not use the
// in-memory index (LoadIndex): the index files are streamed. Once it has
// changed anything, the Repository's in-memory index is emptied; call
// LoadIndex again before reading blobs.
func (r *Repository) Prune(ctx context.Context, opts PruneOptions) (_ *PruneResult, err error) {
	if opts.MaxRepackSize < 0 || opts.LeftoverAge < 0 || opts.MaxUnused.Fraction < 0 || opts.MaxUnused.Bytes < 0 {
		return nil, errors.New("prune: negative limit: max-unused, max-repack-size and the leftover age must be at least 0")
	}
	if opts.LeftoverAge == 0 {
		opts.LeftoverAge = DefaultLeftoverAge
	}
	p := &pruneRun{r: r, opts: opts, res: &PruneResult{}, packs: map[ID]*packFigures{}}
	completing := map[string]bool{}
	if !opts.DryRun {
		lock, err := r.Lock(ctx, true, "prune")
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		defer lock.Release(&err)
		p.progress("forget", 0, 0)
		pending, err := r.ForgettingIDs(ctx)
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		if len(pending) > 0 {
			done, _, err := r.completeForget(ctx, pending)
			if err != nil {
				return nil, fmt.Errorf("prune: complete an interrupted forget: %w", err)
			}
			p.res.ForgetsCompleted = done
		}
	} else {
		// As Forget would: the marked snapshots that are not pinned go.
		pending, err := r.ForgettingIDs(ctx)
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		pinned, err := r.pinnedSet(ctx)
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		for _, id := range pending {
			if !pinned[id] {
				completing[id] = true
				p.res.ForgetsCompleted = append(p.res.ForgetsCompleted, id)
			}
		}
	}
	if err := p.run(ctx, completing); err != nil {
		return nil, fmt.Errorf("prune: %w", err)
	}
	return p.res, nil
}

func (p *pruneRun) progress(phase string, done, total int64) {
	if p.opts.Progress != nil {
		p.opts.Progress(PruneProgress{Phase: phase, Done: done, Total: total})
	}
}

// run plans the prune and, unless it is a dry run, carries it out.
func (p *pruneRun) run(ctx context.Context, skip map[string]bool) error {
	snaps, err := p.loadSnapshots(ctx, skip)
	if err != nil {
		return err
	}
	p.res.Snapshots = len(snaps)
	u := &usage{opts: UsageOptions{TempDir: p.opts.TempDir}}
	defer u.close()
	p.copies = u.recordSorter(blobRecordSize)
	hooks := usageHooks{
		usage: u,
		phase: func(name string) { p.progress(name, 0, 0) },
		// The packs are listed after the index is read: a pack that a
		// backup beside a dry run adds then is a young leftover, never
		// an indexed pack that seems missing.
		indexRead: func() error { return p.listPacks(ctx) },
		indexFile: func(name string, packs []ID, done, total int) {
			p.progress("index", int64(done), int64(total))
			p.indexFiles = append(p.indexFiles, indexFileInfo{name: name, packs: packs})
			for _, pk := range packs {
				p.pack(pk).indexed = true
			}
		},
	}
	var g usedGroup
	_, err = p.r.blobUsage(ctx, snaps, u.opts, hooks, func(b BlobUse) error {
		if b.ID != g.id || !g.started {
			if err := g.check(); err != nil {
				return err
			}
			g = usedGroup{id: b.ID, pack: b.Pack, used: b.Used, started: true}
		}
		return p.count(b, &g)
	})
	if err == nil {
		err = g.check()
	}
	var te *SnapshotTreeError
	if errors.As(err, &te) {
		return fmt.Errorf("snapshot %s: %w: %w", strings.Join(te.Snapshots, ", "), ErrInvalidManifest, err)
	}
	if err != nil {
		return err
	}
	p.progress("plan", 0, 0)
	if err := p.plan(ctx); err != nil {
		return err
	}
	if !p.opts.DryRun {
		if err := p.execute(ctx); err != nil {
			return err
		}
	}
	return p.tempFiles(ctx)
}

// tempFiles removes the temporary files of killed writes whose writer is
// provably gone (SweepTemp; not in a dry run), and removes (or, in a dry
// run, counts) those that give no such proof when they are older than the
// leftover age; younger ones are
// counted as kept, and files whose names nightjar never gives (another
// program's, such as NFS's ".nfs..." files) as foreign, and left alone.
func (p *pruneRun) tempFiles(ctx context.Context) error {
	if !p.opts.DryRun {
		// The files that prove whether their writer lives go by that
		// proof, whatever their age.
		sw, err := p.r.SweepTemp(ctx)
		if err != nil {
			return err
		}
		p.res.TempFilesDeleted += sw.Removed
		p.res.TempBytesDeleted += sw.BytesRemoved
		p.res.TempFilesKept += sw.Live
	}
	tf, ok := Capability[TempFiles](p.r.be)
	if !ok {
		return nil
	}
	var old []string
	now := p.r.now()
	err := tf.ListTemp(ctx, func(name string, size int64, modTime time.Time) error {
		if !ValidObjectName(name) {
			p.res.TempFilesForeign++ // not a name nightjar makes: never ours to delete
			return nil
		}
		if now.Sub(modTime) <= p.opts.LeftoverAge {
			p.res.TempFilesKept++
			return nil
		}
		old = append(old, name)
		p.res.TempFilesDeleted++
		p.res.TempBytesDeleted += size
		return nil
	})
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return err
	}
	if p.opts.DryRun {
		return nil
	}
	for _, name := range old {
		if err := p.r.checkLocks(); err != nil {
			return err
		}
		if err := tf.RemoveTemp(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// loadSnapshots reads every snapshot but those in skip (being forgotten);
// one that cannot be read stops prune.
func (p *pruneRun) loadSnapshots(ctx context.Context, skip map[string]bool) ([]*Snapshot, error) {
	ids, err := p.r.ListSnapshotIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var snaps []*Snapshot
	for i, id := range ids {
		p.progress("snapshots", int64(i), int64(len(ids)))
		if skip[id] {
			continue
		}
		s, err := p.r.LoadSnapshot(ctx, id)
		if errors.Is(err, ErrSnapshotNotFound) {
			continue // removed since it was listed: only a forget can, and it holds the lock
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if unreadableSnapshot(err) {
				// What it refers to is unknown: pruning could delete data
				// it uses.
				return nil, fmt.Errorf("snapshot file %s/%s cannot be read, so prune does not know what data it uses and deletes nothing: "+
					"remove the file with nightjar forget %s, or rewrite it with nightjar repair snapshots, then prune again: %w: %w",
					SnapshotFile, id, id, ErrInvalidManifest, err)
			}
			return nil, fmt.Errorf("snapshot %s: %w: %w", id, ErrInvalidManifest, err)
		}
		snaps = append(snaps, s)
	}
	return snaps, nil
}

// listPacks records the size of every pack file.
func (p *pruneRun) listPacks(ctx context.Context) error {
	err := p.r.be.List(ctx, PackFile, func(name string, size int64) error {
		id, err := ParseID(name)
		if err != nil {
			return nil // not a pack of ours: check reports it
		}
		p.pack(id).size = size
		return nil
	})
	if err != nil {
		return fmt.Errorf("list packs: %w", err)
	}
	return nil
}

// pack returns the figures of pack id, making them for a pack that has no
// file.
func (p *pruneRun) pack(id ID) *packFigures {
	f, ok := p.packs[id]
	if !ok {
		f = &packFigures{size: -1}
		p.packs[id] = f
	}
	return f
}

// usedGroup is the entries of one blob that prune has counted so far.
type usedGroup struct {
	id      ID
	pack    ID // of its first entry
	used    bool
	kept    bool // a copy counts as the used one
	started bool
}

// check fails for a used blob none of whose copies is whole in a pack
// that exists.
func (g *usedGroup) check() error {
	if g.started && g.used && !g.kept {
		return fmt.Errorf("blob %s is used but no pack holds it whole (pack %s is missing or too short): run nightjar check", g.id.Short(), g.pack.Short())
	}
	return nil
}

// count adds an index entry to its pack's figures. Of a used blob indexed
// in several packs, one copy counts as used: the first (entries come by
// pack ID) that ends within its pack's file, so that a copy in a missing
// or truncated pack never stands for the blob; the other copies are
// unused bytes of their packs. The copy that counts goes to p.copies, by
// pack.
func (p *pruneRun) count(b BlobUse, g *usedGroup) error {
	f := p.pack(b.Pack)
	whole := placeWhole(int64(b.Offset)+int64(b.Length), f.size) // false for a missing pack (size -1)
	if !b.Used || g.kept || !whole {
		f.unusedBlobs++
		f.unusedBytes += int64(b.Length)
		return nil
	}
	g.kept = true
	f.usedBlobs++
	f.usedBytes += int64(b.Length)
	if err := p.copies.AddRecord(byPackRecord(p.rec[:], b.IndexedBlob)); err != nil {
		return fmt.Errorf("sort the blobs to copy: %w", err)
	}
	return nil
}

// blobRecordSize is the size of an index entry as an extsort record:
// two IDs (blob and pack, in either order), type, compression, offset,
// length and raw length.
const blobRecordSize = 32 + 32 + 1 + 1 + 4 + 4 + 4

// byBlobRecord writes b into rec so that records sort by blob, then pack.
func byBlobRecord(rec []byte, b IndexedBlob) []byte {
	copy(rec, b.ID[:])
	copy(rec[32:], b.Pack[:])
	putBlobPlace(rec[64:], b.PackedBlob)
	return rec
}

// byPackRecord writes b into rec so that records sort by pack, then
// offset.
func byPackRecord(rec []byte, b IndexedBlob) []byte {
	copy(rec, b.Pack[:])
	putBlobPlace(rec[32:], b.PackedBlob)
	copy(rec[46:], b.ID[:])
	return rec
}

// putBlobPlace writes the offset first, big-endian, so that it orders.
func putBlobPlace(p []byte, b PackedBlob) {
	binary.BigEndian.PutUint32(p, b.Offset)
	binary.BigEndian.PutUint32(p[4:], b.Length)
	binary.BigEndian.PutUint32(p[8:], b.RawLength)
	p[12], p[13] = byte(b.Type), b.Compression
}

func blobPlace(p []byte) PackedBlob {
	return PackedBlob{Offset: binary.BigEndian.Uint32(p), Length: binary.BigEndian.Uint32(p[4:]),
		RawLength: binary.BigEndian.Uint32(p[8:]), Type: BlobType(p[12]), Compression: p[13]}
}

func fromBlobRecord(rec []byte) IndexedBlob {
	b := IndexedBlob{PackedBlob: blobPlace(rec[64:]), Pack: ID(rec[32:64])}
	b.ID = ID(rec[:32])
	return b
}

func fromPackRecord(rec []byte) IndexedBlob {
	b := IndexedBlob{PackedBlob: blobPlace(rec[32:46]), Pack: ID(rec[:32])}
	b.ID = ID(rec[46:78])
	return b
}

// plan chooses what happens to every pack and fills the result's figures.
func (p *pruneRun) plan(ctx context.Context) error {
	res := p.res
	var candidates []ID
	var usedTotal, unusedLeft int64
	ids := make([]ID, 0, len(p.packs))
	for id := range p.packs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
	for _, id := range ids {
		f := p.packs[id]
		res.BlobsUsed += f.usedBlobs
		res.BytesUsed += f.usedBytes
		res.BlobsUnused += f.unusedBlobs
		res.BytesUnused += f.unusedBytes
		switch {
		case !f.indexed:
			old, err := p.old(ctx, id)
			if err != nil {
				return err
			}
			f.action = packLeftoverYoung
			if old {
				f.action = packLeftoverOld
			}
		case f.usedBlobs == 0 && f.size < 0:
			f.action = packGone
		case f.usedBlobs == 0:
			old, err := p.unwritten(ctx, id)
			if err != nil {
				return err
			}
			f.action = packKeptYoung
			if old {
				f.action = packDelete
			}
		case f.unusedBlobs > 0:
			candidates = append(candidates, id)
			usedTotal += f.usedBytes
			unusedLeft += f.unusedBytes
		default:
			usedTotal += f.usedBytes
		}
	}
	// The packs with the most unused bytes first, as restic.
	sort.SliceStable(candidates, func(i, j int) bool {
		return p.packs[candidates[i]].unusedBytes > p.packs[candidates[j]].unusedBytes
	})
	limit := p.opts.MaxUnused.maxUnused(usedTotal)
	var repacked int64
	for _, id := range candidates {
		if unusedLeft <= limit {
			break
		}
		f := p.packs[id]
		if p.opts.MaxRepackSize > 0 && repacked+f.size > p.opts.MaxRepackSize {
			continue
		}
		old, err := p.unwritten(ctx, id)
		if err != nil {
			return err
		}
		if !old {
			f.action = packKeptYoung // its unused bytes stay
			continue
		}
		f.action = packRepack
		repacked += f.size
		unusedLeft -= f.unusedBytes
	}
	for _, id := range ids {
		f := p.packs[id]
		switch f.action {
		case packKeep, packKeptYoung:
			res.PacksLeft++
			res.BytesLeft += f.size
			res.UnusedLeft += f.unusedBytes
			if f.action == packKeptYoung {
				res.PacksKeptYoung++
				res.BytesKeptYoung += f.size
			}
		case packDelete:
			res.PacksDeleted++
			res.BytesDeleted += f.size
		case packRepack:
			res.PacksRepacked++
			res.BytesRepacked += f.size
			res.BlobsCopied += f.usedBlobs
			res.BytesCopied += f.usedBytes
		case packGone:
			res.PacksMissing++
		case packLeftoverOld:
			res.LeftoversDeleted++
			res.LeftoverBytesDeleted += f.size
		case packLeftoverYoung:
			res.LeftoversKept++
			res.LeftoverBytesKept += f.size
		}
	}
	res.BytesFreed = res.BytesDeleted + res.BytesRepacked + res.LeftoverBytesDeleted
	for _, xf := range p.indexFiles {
		if p.replaces(xf) {
			res.IndexFilesReplaced++
		}
	}
	return nil
}

// unwritten reports whether indexed pack id may be deleted or repacked: no
// backup can be about to save a snapshot that uses its blobs. Where locks
// are exact (a lock is alive exactly while its process holds it: the
// flock of a local folder), the exclusive lock prune holds proves it for
// every pack, whatever its age. Where they are not (leases that may be
// broken as stale while their holder still runs), only a pack older than
// the leftover age is.
func (p *pruneRun) unwritten(ctx context.Context, id ID) (bool, error) {
	if keeper, ok := p.r.lockKeeper(); ok {
		if _, exact := keeper.(processLocks); exact {
			return true, nil
		}
	}
	return p.old(ctx, id)
}

// old reports whether pack id's file is older than the leftover age: no
// writer can still be using it. A pack whose age the backend cannot tell,
// or that is gone since it was listed, is not old.
func (p *pruneRun) old(ctx context.Context, id ID) (bool, error) {
	timer, ok := Capability[ObjectTimer](p.r.be)
	if !ok {
		return false, nil
	}
	mt, err := timer.ModTime(ctx, Handle{Type: PackFile, Name: id.String()})
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("age of pack %s: %w", id.Short(), err)
	}
	return p.r.now().Sub(mt) > p.opts.LeftoverAge, nil
}

// replaces reports whether an index file lists a pack that prune removes.
func (p *pruneRun) replaces(xf indexFileInfo) bool {
	for _, pk := range xf.packs {
		if p.packs[pk].action.removed() {
			return true
		}
	}
	return false
}

// execute carries the plan out, in the order of docs/FORMAT.md (Prune):
// new packs and their index files, the replacement index files, the
// removal of the index files replaced, and last the packs.
func (p *pruneRun) execute(ctx context.Context) error {
	if p.res.PacksRepacked > 0 {
		if err := p.repack(ctx); err != nil {
			return err
		}
	}
	if err := p.rewriteIndex(ctx); err != nil {
		return err
	}
	var victims []ID
	for id, f := range p.packs {
		if f.action == packDelete || f.action == packRepack || f.action == packLeftoverOld {
			victims = append(victims, id)
		}
	}
	slices.SortFunc(victims, func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
	if len(victims) > 0 || p.res.IndexFilesReplaced > 0 {
		p.r.idx.reset() // it may list the packs removed
	}
	for i, id := range victims {
		p.progress("delete", int64(i), int64(len(victims)))
		if err := p.r.removeIfPresent(ctx, Handle{Type: PackFile, Name: id.String()}); err != nil {
			return fmt.Errorf("delete pack %s: %w", id.Short(), err)
		}
	}
	return nil
}

// repackSessionBlobs is how many blobs one repack session copies at most:
// a session's in-memory index holds every blob it stored, so a long repack
// is cut into sessions of this many, each writing its packs and index
// files before the next begins.
var repackSessionBlobs = 1 << 16

// repack copies the used blobs of the packs to repack into new packs
// through write sessions, which also write their index files.
func (p *pruneRun) repack(ctx context.Context) error {
	w, err := p.r.shadow()
	if err != nil {
		return err
	}
	defer w.closeShadow()
	copies, err := p.copies.Sorted()
	if err != nil {
		return fmt.Errorf("sort the blobs to copy: %w", err)
	}
	c := &repackCursor{p: p, copies: copies}
	for more := true; more; {
		written, err := w.WriteSession(ctx, WriteOptions{}, func(ctx context.Context, wr *Writer) error {
			var err error
			more, err = c.copy(ctx, wr, repackSessionBlobs)
			return err
		})
		if err != nil {
			return err
		}
		st := written.Stats()
		p.res.PacksWritten += st.Packs
		p.res.BytesWritten += st.Bytes
		w.idx.reset() // what the session stored is indexed in its files
	}
	return nil
}

// repackReadGap is the most unused bytes between two blobs to copy of one
// pack that a repack reads through rather than starting another read: a
// read costs a request on remote storage, a little more data costs less.
const repackReadGap = 256 << 10

// repackCursor walks the blobs to copy, by pack, across sessions. It
// reads a pack's blobs to copy in runs: blobs one after another, or
// apart by at most repackReadGap bytes, in one ranged read, so that the
// unused bytes of a pack are mostly not read at all.
type repackCursor struct {
	p       *pruneRun
	copies  *extsort.Iterator
	next    IndexedBlob // the blob after the run, read ahead
	hasNext bool
	run     []IndexedBlob // the blobs of the run read, by offset
	done    int           // how many of them are copied
	start   int64         // where data starts in the pack
	data    []byte        // the run's bytes
	packs   int64         // packs read so far
}

// copy copies at most n blobs through wr, each with its sealed bytes as
// they are, and reports whether blobs are left.
func (c *repackCursor) copy(ctx context.Context, wr *Writer, n int) (bool, error) {
	for i := 0; i < n; i++ {
		if c.done == len(c.run) {
			more, err := c.readRun(ctx)
			if !more || err != nil {
				return false, err
			}
		}
		b := c.run[c.done]
		from := int64(b.Offset) - c.start
		sealed := c.data[from : from+int64(b.Length)]
		if _, err := wr.SaveSealedBlob(ctx, b.PackedBlob, sealed); err != nil {
			return false, fmt.Errorf("repack pack %s: %w", b.Pack.Short(), err)
		}
		c.done++
	}
	return true, nil
}

// readRun reads the next run of blobs to copy, and reports whether there
// was one.
func (c *repackCursor) readRun(ctx context.Context) (bool, error) {
	p := c.p
	prev := ID{}
	if len(c.run) > 0 {
		prev = c.run[0].Pack
	}
	c.run, c.done = c.run[:0], 0
	var end int64
	for {
		if !c.hasNext {
			var err error
			if c.hasNext, err = c.advance(); err != nil {
				return false, err
			}
			if !c.hasNext {
				break
			}
		}
		b := c.next
		if len(c.run) > 0 && (b.Pack != c.run[0].Pack || int64(b.Offset) > end+repackReadGap) {
			break
		}
		c.run = append(c.run, b)
		c.hasNext = false
		end = max(end, int64(b.Offset)+int64(b.Length))
	}
	if len(c.run) == 0 {
		return false, nil
	}
	pack := c.run[0].Pack
	if size := p.packs[pack].size; end > size {
		return false, fmt.Errorf("repack pack %s: blobs end at %d, beyond the pack's %d bytes: %w", pack.Short(), end, size, ErrIntegrity)
	}
	if pack != prev || c.packs == 0 {
		c.packs++
		p.progress("repack", c.packs, int64(p.res.PacksRepacked))
	}
	c.start = int64(c.run[0].Offset)
	data, err := p.r.loadInto(ctx, Handle{Type: PackFile, Name: pack.String()}, c.start, int(end-c.start), c.data)
	if err != nil {
		return false, fmt.Errorf("read pack %s: %w", pack.Short(), err)
	}
	c.data = data
	return true, nil
}

// advance moves c.next to the next blob to copy of a pack being
// repacked, and reports whether there is one.
func (c *repackCursor) advance() (bool, error) {
	for c.copies.Next() {
		b := fromPackRecord(c.copies.Record())
		if c.p.packs[b.Pack].action == packRepack {
			c.next = b
			return true, nil
		}
	}
	return false, c.copies.Err()
}

// rewriteIndex writes, for the index files that list a pack prune
// removes, new index files with their entries of packs that stay, and
// then removes them.
func (p *pruneRun) rewriteIndex(ctx context.Context) error {
	var replaced []string
	for _, xf := range p.indexFiles {
		if p.replaces(xf) {
			replaced = append(replaced, xf.name)
		}
	}
	if len(replaced) == 0 {
		return nil
	}
	w := &indexWriter{r: p.r}
	err := p.r.eachIndexFile(ctx, replaced, func(name string, f indexFile) error {
		p.progress("rewrite-index", int64(w.written), 0)
		for _, b := range f.Blobs {
			if fig := p.packs[b.Pack]; fig.action.removed() {
				continue
			}
			if err := w.add(ctx, b); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = w.flush(ctx)
	}
	if err != nil {
		return err
	}
	p.res.BytesWritten += w.bytes
	for _, name := range replaced {
		if err := p.r.removeIfPresent(ctx, Handle{Type: IndexFile, Name: name}); err != nil {
			return fmt.Errorf("remove index %s: %w", name, err)
		}
	}
	return nil
}

// shadow returns a Repository on the same storage and keys with an empty
// index of its own: prune's walk indexes only trees in it, and its write
// session must store every blob it copies even when the caller's index
// lists it (in the pack being repacked).
func (r *Repository) shadow() (*Repository, error) {
	s, err := newRepository(r.be, r.cfg, r.key, r.keyName, r.encryption == EncryptionNone, r.now)
	if err != nil {
		return nil, fmt.Errorf("open repository: %w", err)
	}
	return s, nil
}

// closeShadow releases a shadow's coders, leaving the backend open.
func (r *Repository) closeShadow() {
	r.zdec.Close()
	if r.zenc != nil {
		r.zenc.Close()
	}
}
