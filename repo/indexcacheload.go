package repo

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"runtime"
)

// UseIndexCache makes LoadIndex keep a local cache of a big index in the
// folder of this repository under root (root/ID/index.cache), and tell
// warn when the cache cannot be used or written (the index is then read
// from the repository, as without the cache). Call it before LoadIndex.
func (r *Repository) UseIndexCache(root string, warn func(format string, args ...any)) {
	if warn == nil {
		warn = func(string, ...any) {}
	}
	r.indexCacheRoot, r.indexCacheWarn = root, warn
}

// loadIndexWithCache is LoadIndex into an empty index with the local index
// cache: from the cache and the index files it does not cover; or, when
// there is no cache to use and the index files hold about
// IndexCacheMinBlobs blobs or more (expected, told by their sizes), from a
// cache built from them without loading them (indexcachebuild.go); or,
// when none can be built (a damaged index file, a local failure: told),
// from the index files into memory.
func (r *Repository) loadIndexWithCache(ctx context.Context, names []string, expected int) error {
	if used, err := r.loadIndexCached(ctx, names); used || err != nil {
		return err
	}
	if expected >= IndexCacheMinBlobs {
		built, err := r.buildIndexCache(ctx, names)
		if err != nil {
			return err
		}
		if built {
			// Opened as at any later open. Not used only when another
			// process replaced it since with a cache of another listing
			// (told): then the index is read into memory.
			if used, err := r.loadIndexCached(ctx, names); used || err != nil {
				return err
			}
		}
	}
	if err := r.loadIndexFiles(ctx, names, expected); err != nil {
		return err
	}
	switch {
	case len(r.indexDamage) > 0 && expected >= IndexCacheMinBlobs:
		r.indexCacheWarn("index cache not written: %d index files are damaged (run nightjar check)", len(r.indexDamage))
	case len(r.indexDamage) == 0 && r.idx.Len() < IndexCacheMinBlobs:
		r.dropIndexCache()
	}
	return nil
}

// indexCacheFoldShare and indexCacheFoldFiles decide when the index files
// read besides the cache are folded into a new cache: when their blobs
// pass this share of the cache's, or their number this count (each costs
// a read, a hash and a decryption at every open).
const (
	indexCacheFoldShare = 16
	indexCacheFoldFiles = 32
)

// loadIndexCached loads the index from the local cache and the listed
// index files it does not cover, and reports whether it did. A cache that
// is missing, stale (it covers an index file no longer listed) or damaged
// is not used: the caller loads every file and writes a new one.
func (r *Repository) loadIndexCached(ctx context.Context, names []string) (bool, error) {
	path := indexCachePath(r.indexCacheRoot, r.ID())
	s, err := indexCacheSealer(r)
	if err != nil {
		return false, nil
	}
	c, err := openIndexCache(path, s)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		r.indexCacheWarn("index cache %s is not usable (%v): reading the index files and writing it again", path, err)
		return false, nil
	}
	if c.c.repoID != r.ID() {
		c.close()
		r.indexCacheWarn("index cache %s belongs to repository %s: reading the index files and writing it again", path, c.c.repoID)
		return false, nil
	}
	listed := make(map[ID]bool, len(names))
	for _, name := range names {
		if id, err := ParseID(name); err == nil {
			listed[id] = true
		}
	}
	covered := make(map[ID]bool, len(c.c.covered))
	for _, id := range c.c.covered {
		if !listed[id] {
			// An index file was removed (prune, repair index): the
			// cache may hold places that are gone.
			c.close()
			r.indexCacheWarn("index cache %s is stale (index file %s is gone): reading the index files and writing it again", path, id.Short())
			return false, nil
		}
		covered[id] = true
	}
	var overlay []string
	for _, name := range names {
		if id, err := ParseID(name); err != nil || !covered[id] {
			overlay = append(overlay, name)
		}
	}
	r.idx.attachCache(c)
	if err := r.loadIndexFiles(ctx, overlay, 0); err != nil {
		return true, err
	}
	r.idx.mu.RLock()
	extra := len(r.idx.blobs)
	r.idx.mu.RUnlock()
	if int64(extra) > c.c.entries/indexCacheFoldShare || len(overlay) > indexCacheFoldFiles {
		r.saveIndexCache(names)
	}
	return true, nil
}

// saveIndexCache writes the local index cache from the index, which holds
// the index files named and nothing else (a cache and the files read
// beside it, folded into one); it writes none, and tells why, when an
// index file is damaged or not named by an ID.
func (r *Repository) saveIndexCache(names []string) {
	s, err := indexCacheSealer(r)
	if err != nil {
		r.indexCacheWarn("index cache not written: %v", err)
		return
	}
	if n := len(r.indexDamage); n > 0 {
		r.indexCacheWarn("index cache not written: %d index files are damaged (run nightjar check)", n)
		return
	}
	ids := make([]ID, 0, len(names))
	for _, name := range names {
		id, err := ParseID(name)
		if err != nil {
			// Not an index file LoadIndex read: a cache covering it
			// could not tell when it is gone.
			r.indexCacheWarn("index cache not written: index file name %q is not an ID", name)
			return
		}
		ids = append(ids, id)
	}
	// The load's last garbage is collected first, so that what the write
	// allocates (the fan-out and header, about 70 bytes per 81 blobs) reuses
	// it instead of adding to the peak (the collector, left alone, would
	// let the heap grow to twice the index before collecting).
	runtime.GC()
	x := r.idx
	x.mu.RLock()
	defer x.mu.RUnlock()
	path := indexCachePath(r.indexCacheRoot, r.ID())
	if err := writeIndexCache(path, s, x.cacheContent(r.ID(), ids), x.eachSorted); err != nil {
		r.indexCacheWarn("index cache %s not written (%v): the next open reads every index file again", path, err)
	}
}

// dropIndexCache removes a cache left from when the index was big (a prune
// shrank it below IndexCacheMinBlobs): stale, it would only take space.
func (r *Repository) dropIndexCache() {
	path := indexCachePath(r.indexCacheRoot, r.ID())
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.indexCacheWarn("stale index cache %s not removed: %v", path, err)
	}
}
