package repo

import "testing"

// LowerIndexCacheMinBlobs makes LoadIndex keep a cache of an index of n
// blobs or more until the test ends.
func LowerIndexCacheMinBlobs(t *testing.T, n int) {
	old := IndexCacheMinBlobs
	IndexCacheMinBlobs = n
	t.Cleanup(func() { IndexCacheMinBlobs = old })
}

// IndexFromCache reports whether the index answers from a cache file, and
// how many index files that file covers.
func (r *Repository) IndexFromCache() (bool, int) {
	r.idx.mu.RLock()
	defer r.idx.mu.RUnlock()
	if r.idx.cached == nil {
		return false, 0
	}
	return true, len(r.idx.cached.c.covered)
}

// IndexCachePath is where UseIndexCache(root) keeps r's index cache.
func (r *Repository) IndexCachePath(root string) string { return indexCachePath(root, r.ID()) }

// IndexCacheBuildRecordSize is the size of a record of the build's sort.
const IndexCacheBuildRecordSize = buildRecordSize

// LowerIndexCacheSortBudget makes the cache build's sorter spill a run
// every n records until the test ends.
func LowerIndexCacheSortBudget(t *testing.T, n int) {
	old := indexCacheSortBudget
	indexCacheSortBudget = n * buildRecordSize
	t.Cleanup(func() { indexCacheSortBudget = old })
}

// OnIndexCacheBuildSorted makes fn run when every entry of a cache build
// is in its sorter, before the merge, until the test ends.
func OnIndexCacheBuildSorted(t *testing.T, fn func()) {
	indexCacheBuildSorted = fn
	t.Cleanup(func() { indexCacheBuildSorted = nil })
}
