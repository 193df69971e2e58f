package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// ObjectTimer is implemented by backends that know when an object was
// stored (a local folder: the file's modification time). Prune deletes a
// pack that no index lists only when it is older than
// PruneOptions.LeftoverAge; on a backend without ObjectTimer such packs
// are kept, and counted.
type ObjectTimer interface {
	// ModTime returns when the object h was stored, or an error wrapping
	// ErrNotFound.
	ModTime(ctx context.Context, h Handle) (time.Time, error)
}

// packFigures is what prune knows of one pack. Prune keeps one per pack,
// in a map keyed by pack: a pack holds thousands of blobs (16 MiB of
// chunks of about 1 MiB, or of small files), so packs are far fewer than
// blobs and this map is the one structure that grows with the repository.
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
	// copies are the used blobs in packs that may be repacked (sorted by
	// pack, then offset, once planned).
	copies []IndexedBlob
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
// removes, and deletes packs no index lists that are older than
// opts.LeftoverAge. Every step can be repeated, and a prune that fails or
// dies at any point is completed by the next one. It does not use the
// in-memory index (LoadIndex): the index files are streamed. Once it has
// changed anything, the Repository's in-memory index is emptied; call
// LoadIndex again before reading blobs.
func (r *Repository) Prune(ctx context.Context, opts PruneOptions) (*PruneResult, error) {
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
		defer lock.Unlock()
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
		preview, err := r.PreviewForget(ctx, ForgetOptions{
			Plan:     func([]*Snapshot, map[string]bool) ([]string, error) { return nil, nil },
			GroupKey: func(*Snapshot) string { return "" },
		})
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		p.res.ForgetsCompleted = preview.Completed
		pending, err := r.ForgettingIDs(ctx)
		if err != nil {
			return nil, fmt.Errorf("prune: %w", err)
		}
		for _, id := range pending {
			if !slices.Contains(preview.KeptPinned, id) {
				completing[id] = true
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
	if err := p.listPacks(ctx); err != nil {
		return err
	}
	reader, err := p.r.shadow()
	if err != nil {
		return err
	}
	defer reader.closeShadow()
	records, err := p.readIndex(ctx, reader)
	if err != nil {
		return err
	}
	p.progress("walk", 0, int64(len(snaps)))
	u := &usage{opts: UsageOptions{TempDir: p.opts.TempDir}}
	defer u.close()
	used := u.sorter()
	if _, err := reader.walkUsed(ctx, snaps, u, used); err != nil {
		var te *SnapshotTreeError
		if errors.As(err, &te) {
			return fmt.Errorf("snapshot %s: %w: %w", strings.Join(te.Snapshots, ", "), ErrInvalidManifest, err)
		}
		return err
	}
	usedIDs, err := used.Sorted()
	if err != nil {
		return fmt.Errorf("sort the used blobs: %w", err)
	}
	if err := p.join(ctx, usedIDs, records); err != nil {
		return err
	}
	p.progress("plan", 0, 0)
	if err := p.plan(ctx); err != nil {
		return err
	}
	if p.opts.DryRun {
		return nil
	}
	return p.execute(ctx)
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
		p.packs[id] = &packFigures{size: size}
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

// readIndex streams the index files: it records which packs each lists,
// indexes the tree blobs in reader (for the walk) and returns every entry
// sorted by blob, then pack.
func (p *pruneRun) readIndex(ctx context.Context, reader *Repository) ([]IndexedBlob, error) {
	names, err := p.r.sortedIndexFileNames(ctx)
	if err != nil {
		return nil, err
	}
	p.res.IndexFiles = len(names)
	var records []IndexedBlob
	var trees []IndexedBlob
	err = p.r.eachIndexFile(ctx, names, func(name string, f indexFile) error {
		p.progress("index", int64(len(p.indexFiles)), int64(len(names)))
		p.indexFiles = append(p.indexFiles, indexFileInfo{name: name, packs: f.Packs})
		for _, pk := range f.Packs {
			p.pack(pk).indexed = true
		}
		trees = trees[:0]
		for _, b := range f.Blobs {
			if b.Type == TreeBlob {
				trees = append(trees, b)
			}
			records = append(records, b)
		}
		reader.idx.add(trees)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(records, func(i, j int) bool { return lessBlobPack(records[i], records[j]) })
	return records, nil
}

// lessBlobPack orders index entries by blob, then pack.
func lessBlobPack(a, b IndexedBlob) bool {
	if c := bytes.Compare(a.ID[:], b.ID[:]); c != 0 {
		return c < 0
	}
	return bytes.Compare(a.Pack[:], b.Pack[:]) < 0
}

// join walks the sorted used IDs beside the index entries (sorted by blob,
// then pack) and counts each entry used or unused in its pack. Of a used
// blob indexed in several packs, one copy counts as used: the first in a
// pack that exists; the other copies are unused bytes of their packs.
func (p *pruneRun) join(ctx context.Context, used interface {
	Next() bool
	ID() [32]byte
	Err() error
}, records []IndexedBlob) error {
	haveUsed := used.Next()
	for i := 0; i < len(records); {
		if i%cancelCheck == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		id := records[i].ID
		j := i + 1
		for j < len(records) && records[j].ID == id {
			j++
		}
		for haveUsed && before(used.ID(), id) {
			return fmt.Errorf("blob %s: %w", ID(used.ID()), ErrBlobMissing)
		}
		isUsed := haveUsed && used.ID() == [32]byte(id)
		if isUsed {
			haveUsed = used.Next()
		}
		kept := false
		for _, b := range records[i:j] {
			f := p.pack(b.Pack)
			if isUsed && !kept && f.size >= 0 {
				kept = true
				f.usedBlobs++
				f.usedBytes += int64(b.Length)
				p.copies = append(p.copies, b)
				continue
			}
			f.unusedBlobs++
			f.unusedBytes += int64(b.Length)
		}
		if isUsed && !kept {
			return fmt.Errorf("blob %s is used but its pack %s is missing: run nightjar check", id.Short(), records[i].Pack.Short())
		}
		i = j
	}
	if err := used.Err(); err != nil {
		return fmt.Errorf("read the sorted used blobs: %w", err)
	}
	if haveUsed {
		return fmt.Errorf("blob %s: %w", ID(used.ID()), ErrBlobMissing)
	}
	return nil
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
	timer, hasTimer := Capability[ObjectTimer](p.r.be)
	now := p.r.now()
	for _, id := range ids {
		f := p.packs[id]
		res.BlobsUsed += f.usedBlobs
		res.BytesUsed += f.usedBytes
		res.BlobsUnused += f.unusedBlobs
		res.BytesUnused += f.unusedBytes
		switch {
		case !f.indexed:
			f.action = packLeftoverYoung
			if hasTimer {
				mt, err := timer.ModTime(ctx, Handle{Type: PackFile, Name: id.String()})
				if errors.Is(err, ErrNotFound) {
					continue
				}
				if err != nil {
					return fmt.Errorf("age of pack %s: %w", id.Short(), err)
				}
				if now.Sub(mt) > p.opts.LeftoverAge {
					f.action = packLeftoverOld
				}
			}
		case f.usedBlobs == 0 && f.size < 0:
			f.action = packGone
		case f.usedBlobs == 0:
			f.action = packDelete
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
		f.action = packRepack
		repacked += f.size
		unusedLeft -= f.unusedBytes
	}
	for _, id := range ids {
		f := p.packs[id]
		switch f.action {
		case packKeep:
			res.PacksLeft++
			res.BytesLeft += f.size
			res.UnusedLeft += f.unusedBytes
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
	// Keep only the copies to make, in pack order.
	p.copies = slices.DeleteFunc(p.copies, func(b IndexedBlob) bool { return p.packs[b.Pack].action != packRepack })
	sort.Slice(p.copies, func(i, j int) bool {
		a, b := p.copies[i], p.copies[j]
		if c := bytes.Compare(a.Pack[:], b.Pack[:]); c != 0 {
			return c < 0
		}
		return a.Offset < b.Offset
	})
	return nil
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
	p.r.idx.reset()
	for i, id := range victims {
		p.progress("delete", int64(i), int64(len(victims)))
		if err := p.r.removeIfPresent(ctx, Handle{Type: PackFile, Name: id.String()}); err != nil {
			return fmt.Errorf("delete pack %s: %w", id.Short(), err)
		}
	}
	return nil
}

// repack copies the used blobs of the packs to repack into new packs
// through a write session, which also writes their index files.
func (p *pruneRun) repack(ctx context.Context) error {
	w, err := p.r.shadow()
	if err != nil {
		return err
	}
	defer w.closeShadow()
	var done int64
	written, err := w.WriteSession(ctx, WriteOptions{}, func(ctx context.Context, wr *Writer) error {
		var data []byte
		var cur ID
		var plain []byte
		for i, b := range p.copies {
			if i == 0 || b.Pack != cur {
				cur = b.Pack
				done++
				p.progress("repack", done, int64(p.res.PacksRepacked))
				f := p.packs[cur]
				var err error
				data, err = p.r.be.Load(ctx, Handle{Type: PackFile, Name: cur.String()}, 0, f.size)
				if err != nil {
					return fmt.Errorf("read pack %s: %w", cur.Short(), err)
				}
			}
			end := int64(b.Offset) + int64(b.Length)
			if end > int64(len(data)) {
				return fmt.Errorf("blob %s lies beyond the end of pack %s: %w", b.ID.Short(), cur.Short(), ErrIntegrity)
			}
			sealed := slices.Clone(data[b.Offset:end]) // openBlob decrypts in place
			out, err := p.r.openBlob(b.PackedBlob, sealed, &plain)
			if err != nil {
				return fmt.Errorf("repack pack %s: %w", cur.Short(), err)
			}
			if _, err := wr.SaveBlob(ctx, b.Type, b.ID, out); err != nil {
				return fmt.Errorf("repack: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	st := written.Stats()
	p.res.PacksWritten += st.Packs
	p.res.BytesWritten += st.Bytes
	return nil
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
