package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
)

// IndexDamage is an index file LoadIndex could not read.
type IndexDamage struct {
	Name string // the index file's name
	Err  error  // why it cannot be read
}

// IndexDamage returns the index files the last LoadIndex skipped as
// damaged, by name, and how many packs it indexed from their headers
// instead.
func (r *Repository) IndexDamage() ([]IndexDamage, int) {
	return r.indexDamage, r.indexedFromHeaders
}

// indexUnlistedPacks indexes, from their headers, the packs no index in
// memory lists (those a damaged index file described, and the work of
// interrupted sessions), and returns how many it indexed. A pack whose
// header cannot be read is left out: repair index names it.
func (r *Repository) indexUnlistedPacks(ctx context.Context) (int, error) {
	sizes, err := r.packSizes(ctx)
	if err != nil {
		return 0, err
	}
	var unlisted []ID
	for id := range sizes {
		if !r.idx.HasPack(id) {
			unlisted = append(unlisted, id)
		}
	}
	var mu sync.Mutex
	n := 0
	err = r.eachPackHeader(ctx, unlisted, sizes, func(id ID, blobs []PackedBlob, err error) error {
		if err != nil {
			return nil // unreadable: not indexed, as by AdoptPacks
		}
		r.idx.add(placed(id, blobs))
		mu.Lock()
		n++
		mu.Unlock()
		return nil
	})
	return n, err
}

// packSizes lists the pack files and their sizes.
func (r *Repository) packSizes(ctx context.Context) (map[ID]int64, error) {
	sizes := map[ID]int64{}
	err := r.be.List(ctx, PackFile, func(name string, size int64) error {
		if id, err := ParseID(name); err == nil {
			sizes[id] = size
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list packs: %w", err)
	}
	return sizes, nil
}

// eachPackHeader reads the headers of packs, four at a time, and calls fn
// (concurrently) with each: err is the reason a header cannot be read
// (damage, or the pack vanished). A failure to read for other reasons (the
// storage) ends the walk with that error.
func (r *Repository) eachPackHeader(ctx context.Context, packs []ID, sizes map[ID]int64, fn func(id ID, blobs []PackedBlob, err error) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, id := range packs {
		g.Go(func() error {
			blobs, err := r.ReadPackHeader(gctx, id, sizes[id])
			if err != nil && !errors.Is(err, ErrIntegrity) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrUnsupportedVersion) {
				return fmt.Errorf("read pack %s: %w", id.Short(), err)
			}
			return fn(id, blobs, err)
		})
	}
	return g.Wait()
}

// placed returns a pack's blobs as index entries.
func placed(pack ID, blobs []PackedBlob) []IndexedBlob {
	out := make([]IndexedBlob, len(blobs))
	for i, b := range blobs {
		out[i] = IndexedBlob{PackedBlob: b, Pack: pack}
	}
	return out
}

// RepairIndexOptions are the choices of RepairIndex.
type RepairIndexOptions struct {
	DryRun bool // only say what would change
}

// UnreadablePack is a pack whose blobs cannot be indexed, and why.
type UnreadablePack struct {
	Pack   ID     `json:"pack"`
	Size   int64  `json:"size"`
	Reason string `json:"reason"`
	// KeptBlobs are the blobs an old index file placed in the pack that
	// still read correctly there: their entries stay in the new index,
	// and repair packs salvages them.
	KeptBlobs int `json:"kept_blobs"`
}

// RepairIndexResult is what RepairIndex found and did.
type RepairIndexResult struct {
	PacksRead         int              `json:"packs_read"`          // packs whose header was read
	UnreadablePacks   []UnreadablePack `json:"unreadable_packs"`    // left out of the new index
	DamagedIndexFiles []string         `json:"damaged_index_files"` // old index files that could not be read
	Blobs             int              `json:"blobs"`               // blobs the new index lists
	BlobsAdded        int              `json:"blobs_added"`         // of them, no readable old index file listed
	BlobsDropped      int              `json:"blobs_dropped"`       // blobs the old index listed that no readable pack holds
	IndexFilesWritten int              `json:"index_files_written"`
	IndexFilesRemoved int              `json:"index_files_removed"`
	BytesWritten      int64            `json:"bytes_written"`
}

// RepairIndex rebuilds the index from the packs themselves: it reads the
// header of every pack, writes index files for the blobs of every
// readable pack, and only once they are all stored removes the index
// files there were before. A pack whose header cannot be read is named;
// the entries readable old index files hold for it are kept where they
// still locate an intact blob (repair packs then salvages them). The
// caller holds the exclusive lock (none for DryRun).
//
// Crash safety: until the last new index file is stored, the old ones are
// all there; after that, the new ones list every blob of every readable
// pack. A kill at any point thus leaves an index that covers every blob
// of a readable pack that it covered before (plus, while old files are
// left, entries for lost packs, which backups and reads skip), and a
// second run finishes the work.
func (r *Repository) RepairIndex(ctx context.Context, opts RepairIndexOptions) (*RepairIndexResult, error) {
	res := &RepairIndexResult{UnreadablePacks: []UnreadablePack{}, DamagedIndexFiles: []string{}}
	oldNames, err := r.ListIndexFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("list index files: %w", err)
	}
	sort.Strings(oldNames)
	old := map[ID]bool{}
	for _, name := range oldNames {
		f, err := r.readIndexBody(ctx, name)
		if errors.Is(err, ErrIntegrity) {
			res.DamagedIndexFiles = append(res.DamagedIndexFiles, name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read index %s: %w", name, err)
		}
		for _, b := range f.Blobs {
			old[b.ID] = true
		}
	}
	sizes, err := r.packSizes(ctx)
	if err != nil {
		return nil, err
	}
	packs := make([]ID, 0, len(sizes))
	for id := range sizes {
		packs = append(packs, id)
	}
	var mu sync.Mutex
	var blobs []IndexedBlob
	err = r.eachPackHeader(ctx, packs, sizes, func(id ID, pb []PackedBlob, err error) error {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.UnreadablePacks = append(res.UnreadablePacks, UnreadablePack{Pack: id, Size: sizes[id], Reason: err.Error()})
			return nil
		}
		res.PacksRead++
		blobs = append(blobs, placed(id, pb)...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(res.UnreadablePacks, func(i, j int) bool {
		return bytes.Compare(res.UnreadablePacks[i].Pack[:], res.UnreadablePacks[j].Pack[:]) < 0
	})
	kept, err := r.keepHeaderlessEntries(ctx, oldNames, res)
	if err != nil {
		return nil, err
	}
	blobs = append(blobs, kept...)
	files := indexLayers(blobs)
	now := map[ID]bool{}
	for _, b := range blobs {
		if !now[b.ID] {
			now[b.ID] = true
			if !old[b.ID] {
				res.BlobsAdded++
			}
		}
	}
	res.Blobs = len(now)
	for id := range old {
		if !now[id] {
			res.BlobsDropped++
		}
	}
	if opts.DryRun {
		return res, nil
	}
	written := map[string]bool{}
	for _, f := range files {
		data := sealObject(r.seal, "index", "", encodeIndexBody(f))
		name := fileID(data).String()
		if err := r.be.Save(ctx, Handle{Type: IndexFile, Name: name}, data); err != nil {
			return nil, fmt.Errorf("write index: %w", err)
		}
		written[name] = true
		res.IndexFilesWritten++
		res.BytesWritten += int64(len(data))
	}
	for _, name := range oldNames {
		// An old file with the very content of a new one has its name.
		if written[name] {
			continue
		}
		if err := r.removeIfPresent(ctx, Handle{Type: IndexFile, Name: name}); err != nil {
			return nil, fmt.Errorf("remove old index %s: %w", name, err)
		}
		res.IndexFilesRemoved++
	}
	r.idx.reset()
	r.idx.add(blobs)
	r.indexDamage, r.indexedFromHeaders = nil, 0
	return res, nil
}

// keepHeaderlessEntries returns the entries that readable old index files
// hold for the packs whose header cannot be read and that still locate an
// intact blob (each is read and authenticated), so that a damaged header
// or tail does not unindex blobs that read fine: such a pack is named
// "header damaged: run repair packs".
func (r *Repository) keepHeaderlessEntries(ctx context.Context, oldNames []string, res *RepairIndexResult) ([]IndexedBlob, error) {
	if len(res.UnreadablePacks) == 0 {
		return nil, nil
	}
	byPack := map[ID]int{}
	for i, u := range res.UnreadablePacks {
		byPack[u.Pack] = i
	}
	listed := map[ID][]IndexedBlob{}
	for _, name := range oldNames {
		f, err := r.readIndexBody(ctx, name)
		if errors.Is(err, ErrIntegrity) {
			continue // named among DamagedIndexFiles already
		}
		if err != nil {
			return nil, fmt.Errorf("read index %s: %w", name, err)
		}
		for _, b := range f.Blobs {
			if _, ok := byPack[b.Pack]; ok && !slices.ContainsFunc(listed[b.Pack], func(o IndexedBlob) bool { return o.ID == b.ID }) {
				listed[b.Pack] = append(listed[b.Pack], b)
			}
		}
	}
	var kept []IndexedBlob
	for pack, entries := range listed {
		data, err := r.be.Load(ctx, Handle{Type: PackFile, Name: pack.String()}, 0, -1)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read pack %s: %w", pack.Short(), err)
		}
		n := 0
		for _, b := range entries {
			end := int64(b.Offset) + int64(b.Length)
			if end > int64(len(data)) {
				continue
			}
			if _, err := r.openBlob(b.PackedBlob, bytes.Clone(data[b.Offset:end]), nil); err != nil {
				continue
			}
			kept = append(kept, b)
			n++
		}
		if n > 0 {
			u := &res.UnreadablePacks[byPack[pack]]
			u.KeptBlobs = n
			u.Reason = "header damaged: run repair packs (" + u.Reason + ")"
		}
	}
	return kept, nil
}

// indexLayers splits blobs into index file bodies of at most
// maxBlobsPerIndex blobs each, in which no blob ID appears twice: the
// first place of each blob goes into the first files, a second place (the
// same blob in another pack) into later ones.
func indexLayers(blobs []IndexedBlob) []indexFile {
	sort.Slice(blobs, func(i, j int) bool {
		if c := bytes.Compare(blobs[i].ID[:], blobs[j].ID[:]); c != 0 {
			return c < 0
		}
		return bytes.Compare(blobs[i].Pack[:], blobs[j].Pack[:]) < 0
	})
	var layers [][]IndexedBlob
	for i := 0; i < len(blobs); {
		j := i
		for j < len(blobs) && blobs[j].ID == blobs[i].ID {
			if len(layers) <= j-i {
				layers = append(layers, nil)
			}
			layers[j-i] = append(layers[j-i], blobs[j])
			j++
		}
		i = j
	}
	var files []indexFile
	for _, layer := range layers {
		for len(layer) > 0 {
			n := min(len(layer), maxBlobsPerIndex)
			files = append(files, sortedIndexFile(layer[:n:n]))
			layer = layer[n:]
		}
	}
	return files
}

// RepairPacksOptions are the choices of RepairPacks.
type RepairPacksOptions struct {
	// Packs are the packs to salvage; none: every pack is read whole and
	// the damaged ones are salvaged.
	Packs  []ID
	DryRun bool // only read and say what would change
}

// DamagedPack is a pack RepairPacks found damaged.
type DamagedPack struct {
	Pack          ID     `json:"pack"`
	Reason        string `json:"reason"`
	BlobsSalvaged int    `json:"blobs_salvaged"` // readable blobs stored again in new packs (or held elsewhere)
	BlobsLost     int    `json:"blobs_lost"`     // blobs that could not be read
}

// RepairPacksResult is what RepairPacks found and did.
type RepairPacksResult struct {
	PacksRead     int                `json:"packs_read"`
	DamagedPacks  []DamagedPack      `json:"damaged_packs"`
	BlobsSalvaged int                `json:"blobs_salvaged"`
	BlobsLost     int                `json:"blobs_lost"`
	PacksWritten  int                `json:"packs_written"`
	PacksRemoved  int                `json:"packs_removed"`
	Index         *RepairIndexResult `json:"index,omitempty"` // the index rebuilt after the damaged packs went
}

// RepairPacks reads packs whole and salvages the damaged ones (restic's
// repair packs): every blob of a damaged pack that still reads correctly
// is stored again in a new pack (read through the index where the pack's
// header or tail is damaged); all damaged packs are found first and leave
// the index together, so a blob two of them hold is saved from whichever
// copy reads; then the damaged packs are deleted and
// the index rebuilt from the packs (RepairIndex), so that no index entry
// points into them. The blobs that were lost are stored again by the
// next backup that meets their data. The caller holds the exclusive lock
// (none for DryRun); the index need not be loaded.
//
// Crash safety: the salvaged blobs are stored and indexed before a
// damaged pack is deleted, and a pack deleted before the index is rebuilt
// is a missing pack, which backups and reads skip and a second run of
// repair drops from the index.
func (r *Repository) RepairPacks(ctx context.Context, opts RepairPacksOptions) (*RepairPacksResult, error) {
	res := &RepairPacksResult{DamagedPacks: []DamagedPack{}}
	r.idx.reset()
	if err := r.LoadIndex(ctx); err != nil {
		return nil, err
	}
	sizes, err := r.packSizes(ctx)
	if err != nil {
		return nil, err
	}
	// Packs the index lists that are gone or cut short: a run killed
	// after it deleted damaged packs left them, and the index is rebuilt
	// even when no damaged pack is left to salvage.
	stale := r.idx.damagedPacks(sizes)
	candidates := slices.Clone(opts.Packs)
	if len(candidates) == 0 {
		for id := range sizes {
			candidates = append(candidates, id)
		}
	}
	slices.SortFunc(candidates, func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
	candidates = slices.Compact(candidates) // a pack named twice is salvaged once
	for _, id := range candidates {
		if _, ok := sizes[id]; !ok {
			return nil, fmt.Errorf("pack %s: %w", id, ErrNotFound)
		}
	}
	// First pass: find every damaged pack, so that they leave the index
	// together; a blob two of them hold is then stored from whichever
	// copy reads, not skipped because the other copy still looked indexed.
	var damaged []ID
	readable := map[ID]bool{} // blobs some damaged pack still holds intact
	unreadable := map[ID][]ID{}
	headerless := map[ID][]IndexedBlob{} // index places of packs whose header is unreadable
	for _, id := range candidates {
		sv, err := r.salvagePack(ctx, id, headerless)
		if err != nil {
			return nil, err
		}
		res.PacksRead++
		if sv.reason == nil {
			continue
		}
		damaged = append(damaged, id)
		for _, g := range sv.good {
			readable[g.b.ID] = true
		}
		for _, b := range sv.bad {
			unreadable[id] = append(unreadable[id], b)
		}
		res.DamagedPacks = append(res.DamagedPacks, DamagedPack{Pack: id, Reason: sv.reason.Error(), BlobsSalvaged: len(sv.good)})
	}
	gone := map[ID]bool{}
	for _, id := range damaged {
		gone[id] = true
	}
	if _, err := r.idx.dropPacks(gone); err != nil {
		return nil, err
	}
	// A blob unreadable in a damaged pack is lost unless another damaged
	// pack holds it intact or it has a place in a pack left alone.
	lost := map[ID]bool{}
	for i := range res.DamagedPacks {
		dp := &res.DamagedPacks[i]
		for _, b := range unreadable[dp.Pack] {
			if !readable[b] && !r.idx.Has(b) {
				dp.BlobsLost++
				lost[b] = true
			}
		}
		res.BlobsSalvaged += dp.BlobsSalvaged
	}
	res.BlobsLost = len(lost)
	if opts.DryRun {
		return res, nil
	}
	salvage := func(ctx context.Context, w *Writer) error {
		for _, id := range damaged {
			sv, err := r.salvagePack(ctx, id, headerless)
			if err != nil {
				return err
			}
			for _, g := range sv.good {
				if _, err := w.SaveBlob(ctx, g.b.Type, g.b.ID, g.plain); err != nil {
					return fmt.Errorf("salvage pack %s: %w", id.Short(), err)
				}
			}
		}
		return nil
	}
	written, err := r.WriteSession(ctx, WriteOptions{}, salvage)
	if err != nil {
		return nil, err
	}
	res.PacksWritten = written.Stats().Packs
	if len(damaged) == 0 && len(stale) == 0 {
		return res, nil
	}
	for _, id := range damaged {
		if err := r.removeIfPresent(ctx, Handle{Type: PackFile, Name: id.String()}); err != nil {
			return nil, fmt.Errorf("remove damaged pack %s: %w", id.Short(), err)
		}
		res.PacksRemoved++
	}
	res.Index, err = r.RepairIndex(ctx, RepairIndexOptions{})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// packSalvage is what a pack still holds: the blobs that read correctly,
// with their plaintexts, the IDs of those that do not, and why the pack
// is damaged (nil: it is whole).
type packSalvage struct {
	good   []salvagedBlob
	bad    []ID
	reason error
}

// salvagedBlob is a blob read intact out of a damaged pack.
type salvagedBlob struct {
	b     PackedBlob
	plain []byte
}

// salvagePack reads pack id whole and sorts its blobs into readable and
// not. A pack whose header or trailer cannot be read is read through the
// index instead: each blob indexed in it is taken at its offset and
// authenticated, so that damage there costs only the blobs it touches.
// Those places are remembered in headerless, for a second call after the
// pack has left the index.
func (r *Repository) salvagePack(ctx context.Context, id ID, headerless map[ID][]IndexedBlob) (packSalvage, error) {
	var sv packSalvage
	data, err := r.be.Load(ctx, Handle{Type: PackFile, Name: id.String()}, 0, -1)
	if err != nil {
		return sv, fmt.Errorf("read pack %s: %w", id.Short(), err)
	}
	handed := 0
	// SplitPack decrypts in place, but only after it read the header: a
	// pack it rejects at once is still as stored, for the index's places.
	err = r.SplitPack(id, data, func(b PackedBlob, plain []byte, err error) {
		handed++
		if err != nil {
			sv.bad = append(sv.bad, b.ID)
			if sv.reason == nil {
				sv.reason = err
			}
			return
		}
		sv.good = append(sv.good, salvagedBlob{b, bytes.Clone(plain)})
	})
	if err == nil || handed > 0 {
		if err != nil {
			sv.reason = err
		}
		return sv, nil
	}
	sv.reason = err
	places, ok := headerless[id]
	if !ok {
		if places, err = r.idx.placesIn(id); err != nil {
			return sv, err
		}
		headerless[id] = places
	}
	for _, b := range places {
		end := int64(b.Offset) + int64(b.Length)
		if end > int64(len(data)) {
			sv.bad = append(sv.bad, b.ID)
			continue
		}
		plain, err := r.openBlob(b.PackedBlob, bytes.Clone(data[b.Offset:end]), nil)
		if err != nil {
			sv.bad = append(sv.bad, b.ID)
			continue
		}
		sv.good = append(sv.good, salvagedBlob{b.PackedBlob, bytes.Clone(plain)})
	}
	return sv, nil
}
