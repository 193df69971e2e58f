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
// files there were before. A pack whose header cannot be read is left
// out and named. The caller holds the exclusive lock (none for DryRun).
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
// is stored again in a new pack; then the damaged packs are deleted and
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
	var damaged []ID
	salvage := func(ctx context.Context, w *Writer) error {
		for _, id := range candidates {
			data, err := r.be.Load(ctx, Handle{Type: PackFile, Name: id.String()}, 0, -1)
			if err != nil {
				return fmt.Errorf("read pack %s: %w", id.Short(), err)
			}
			res.PacksRead++
			type good struct {
				b     PackedBlob
				plain []byte
			}
			var readable []good
			var firstBad error
			lost := 0
			err = r.SplitPack(id, data, func(b PackedBlob, plain []byte, err error) {
				if err != nil {
					lost++
					if firstBad == nil {
						firstBad = err
					}
					return
				}
				readable = append(readable, good{b, bytes.Clone(plain)})
			})
			if err == nil && lost == 0 {
				continue
			}
			reason := err
			if reason == nil {
				reason = firstBad
			}
			if err != nil && len(readable) == 0 && lost == 0 {
				// The header cannot be read: the index says what the
				// pack held, and all of it is lost.
				r.idx.Each(func(b IndexedBlob) {
					if b.Pack == id {
						lost++
					}
				})
			}
			damaged = append(damaged, id)
			dp := DamagedPack{Pack: id, Reason: reason.Error(), BlobsSalvaged: len(readable), BlobsLost: lost}
			res.DamagedPacks = append(res.DamagedPacks, dp)
			res.BlobsSalvaged += dp.BlobsSalvaged
			res.BlobsLost += dp.BlobsLost
			if opts.DryRun {
				continue
			}
			r.idx.dropPacks(map[ID]bool{id: true})
			for _, g := range readable {
				if _, err := w.SaveBlob(ctx, g.b.Type, g.b.ID, g.plain); err != nil {
					return fmt.Errorf("salvage pack %s: %w", id.Short(), err)
				}
			}
		}
		return nil
	}
	if opts.DryRun {
		if err := salvage(ctx, nil); err != nil {
			return nil, err
		}
		return res, nil
	}
	written, err := r.WriteSession(ctx, WriteOptions{}, salvage)
	if err != nil {
		return nil, err
	}
	res.PacksWritten = written.Stats().Packs
	if len(damaged) == 0 {
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
