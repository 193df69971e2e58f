package repo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nightjar-backup/nightjar/repo/extsort"
)

// The first open of a big repository, and the first after a prune or
// repair index (which make the cache stale), builds the local index cache
// without holding the index: each index file's entries go, as they are
// read, into an external sort (repo/extsort: runs of indexCacheSortBudget
// bytes spilled to 0600 files in $TMPDIR), and come back merged in ID
// order into the cache's sealed blocks; the command then opens the cache
// as any later open does. Its memory is the sorter's budget, the index
// files being read (indexReadAhead), the pack table and the fan-out
// (32 bytes per 81 blobs), not the index: loading the index files and
// writing the cache from memory took 523 MiB at 10 million blobs.

// buildRecordSize is the size of a record of the build's sort: the blob
// ID, the position of its index file in the listing (uint32 big-endian,
// so that a blob's places sort in the listing's order, the order in which
// a load ranks them), and the rest of the entry as in a cache block. The
// position also makes every record distinct: the sorter drops duplicate
// records, and the build checks that it handed back every one.
const buildRecordSize = 32 + 4 + entryPlaceSize

// indexCacheSortBudget is the bytes of records the build's sorter holds
// before it spills a run: 16 MiB, 310,689 records, 33 runs at 10 million
// blobs, merged in one pass (extsort.MaxOpen is 64). Tests lower it.
var indexCacheSortBudget = 16 << 20

// indexCacheBuildSorted, when set (by a test), runs when every entry is
// in the build's sorter, before the runs are merged.
var indexCacheBuildSorted func()

// buildCancelCheck is how many records the merge hands back between two
// looks at whether the build was canceled.
const buildCancelCheck = 1 << 12

// cacheBuild is a cache being built from a stream of index files.
type cacheBuild struct {
	c       *indexCacheContent
	packNum map[ID]uint32
	sorter  *extsort.Sorter
	files   uint32 // index files added
	records int64  // entries added to the sorter
	rec     []byte // scratch
}

// buildIndexCache writes the local index cache of the named index files,
// every one listed, without loading the index, and reports whether it did.
// Its error is a failure to read an index file that is not damage, with
// which LoadIndex fails. A damaged index file builds nothing (the loaded
// index names it and indexes its packs from their headers), nor does a
// local failure, which is told.
func (r *Repository) buildIndexCache(ctx context.Context, names []string) (bool, error) {
	path := indexCachePath(r.indexCacheRoot, r.ID())
	s, err := indexCacheSealer(r)
	if err != nil {
		r.indexCacheWarn("index cache not written: %v", err)
		return false, nil
	}
	covered := make([]ID, 0, len(names))
	for _, name := range names {
		id, err := ParseID(name)
		if err != nil {
			// Not an index file LoadIndex reads: a cache covering it
			// could not tell when it is gone.
			r.indexCacheWarn("index cache not written: index file name %q is not an ID", name)
			return false, nil
		}
		covered = append(covered, id)
	}
	// A folder the cache cannot be written to fails here, before the
	// index files are read and sorted for nothing (at every open).
	if err := cacheFolderWritable(filepath.Dir(path)); err != nil {
		r.indexCacheWarn("index cache %s not written (%v): the index is read into memory", path, err)
		return false, nil
	}
	b := newCacheBuild(r.ID(), covered)
	defer func() {
		if err := b.close(); err != nil {
			// extsort's Close joins one error per file it could not
			// remove: one line for the warning.
			r.indexCacheWarn("index cache build: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}()
	var sortErr error
	err = r.eachIndexFile(ctx, names, func(_ string, f indexFile) error {
		sortErr = b.addFile(f)
		return sortErr
	})
	switch {
	case sortErr != nil:
		r.indexCacheWarn("index cache %s not written (%v): the index is read into memory", path, sortErr)
		return false, nil
	case err != nil && ctx.Err() == nil && errors.Is(err, ErrIntegrity):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("load index: %w", err)
	}
	if err := b.write(ctx, path, s); err != nil {
		if ctx.Err() != nil {
			return false, fmt.Errorf("load index: %w", err)
		}
		r.indexCacheWarn("index cache %s not written (%v): the index is read into memory", path, err)
		return false, nil
	}
	return true, nil
}

// cacheFolderWritable makes the cache's folder (0700) and fails unless a
// temporary file can be made in it.
func cacheFolderWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, indexCacheFileName+".tmp-*")
	if err != nil {
		return err
	}
	_ = f.Close()
	return os.Remove(f.Name())
}

// newCacheBuild starts the build of a cache of repository repoID that
// covers the index files covered, which are then added in the listing's
// order (addFile).
func newCacheBuild(repoID string, covered []ID) *cacheBuild {
	covered = slices.Clone(covered)
	slices.SortFunc(covered, compareIDs)
	return &cacheBuild{
		c:       &indexCacheContent{repoID: repoID, covered: covered, entries: entriesCountedByWalk},
		packNum: map[ID]uint32{},
		sorter:  extsort.New(extsort.Options{RecordSize: buildRecordSize, MemoryBudget: indexCacheSortBudget}),
	}
}

// write writes the cache file at path from what was added; a canceled
// ctx stops it, writing nothing.
func (b *cacheBuild) write(ctx context.Context, path string, s sealer) error {
	if indexCacheBuildSorted != nil {
		indexCacheBuildSorted()
	}
	return writeIndexCache(path, s, b.c, func(yield func(ID, indexEntry) bool) error {
		return b.entries(ctx, yield)
	})
}

// close removes the sorter's files.
func (b *cacheBuild) close() error { return b.sorter.Close() }

// packNumber numbers pack in the cache's pack table, in the order packs
// are first met, as Index.packNumber does.
func (b *cacheBuild) packNumber(pack ID) uint32 {
	n, ok := b.packNum[pack]
	if !ok {
		n = uint32(len(b.c.packs))
		b.c.packs = append(b.c.packs, pack)
		b.c.packEnds = append(b.c.packEnds, 0)
		b.packNum[pack] = n
	}
	return n
}

// addFile adds the entries of the next index file of the listing to the
// sort, and each one's end to its pack's (as Index.entry does).
func (b *cacheBuild) addFile(f indexFile) error {
	position := b.files
	b.files++
	for _, blob := range f.Blobs {
		e := indexEntry{pack: b.packNumber(blob.Pack), offset: blob.Offset, length: blob.Length,
			rawLength: blob.RawLength, typ: blob.Type, comp: blob.Compression}
		b.c.packEnds[e.pack] = max(b.c.packEnds[e.pack], int64(e.offset)+int64(e.length))
		b.rec = append(b.rec[:0], blob.ID[:]...)
		b.rec = binary.BigEndian.AppendUint32(b.rec, position)
		b.rec = appendEntryPlace(b.rec, e)
		if err := b.sorter.AddRecord(b.rec); err != nil {
			return err
		}
		b.records++
	}
	return nil
}

// entries yields every blob's first place in ID order from the sort, as
// writeIndexCache walks them: of a blob's places, in the listing's order,
// the first is its place, and each later one in a pack none before it is
// in becomes an alternate (b.c.alts), as a load makes them (indexLoad's
// finish, then Index.addPlace). It fails unless the sort handed back as
// many records as were added: a cache of a part of the entries would
// answer "not present" for the rest.
func (b *cacheBuild) entries(ctx context.Context, yield func(ID, indexEntry) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	it, err := b.sorter.Sorted()
	if err != nil {
		return err
	}
	var (
		id, prev ID
		first    indexEntry
		others   []indexEntry // the alternates of prev
		read     int64
		started  bool
	)
	emit := func() bool {
		for _, e := range others {
			b.c.alts = append(b.c.alts, cachedAlt{prev, e})
		}
		return yield(prev, first)
	}
	for it.Next() {
		rec := it.Record()
		read++
		if read%buildCancelCheck == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		copy(id[:], rec)
		e, err := decodeEntryPlace(rec[36:], len(b.c.packs))
		if err != nil {
			return fmt.Errorf("sorted record %d: %w", read, err) // a bug: the build wrote it
		}
		if started && id == prev {
			if e.pack != first.pack && !slices.ContainsFunc(others, func(a indexEntry) bool { return a.pack == e.pack }) {
				others = append(others, e)
			}
			continue
		}
		if started && !emit() {
			return nil
		}
		prev, first, others, started = id, e, others[:0], true
	}
	if err := it.Err(); err != nil {
		return err
	}
	if read != b.records {
		return fmt.Errorf("%d entries came back from the sort of %d", read, b.records)
	}
	if started {
		emit()
	}
	return nil
}
