package repo

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// testCacheSealer is the sealer of a cache of a repository with a random
// master key.
func testCacheSealer(t *testing.T) sealer {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	s, err := newAEADSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// saveCache writes the cache of index x, which covers the index files
// covered, to path.
func saveCache(t *testing.T, path string, s sealer, x *Index, covered []ID) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	if err := writeIndexCache(path, s, x.cacheContent("repo-id", covered), x.eachSorted); err != nil {
		t.Fatal(err)
	}
}

// cachedIndex is an index that answers from a cache file of files.
func cachedIndex(t *testing.T, files [][]IndexedBlob) *Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "repo-id", indexCacheFileName)
	s := testCacheSealer(t)
	saveCache(t, path, s, loadedIndex(files, 0), nil)
	c, err := openIndexCache(path, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	x := newIndex()
	x.attachCache(c)
	return x
}

// An index read from its cache answers every question as the index loaded
// from the files, for random indexes of 0 to several thousand blobs (the
// first and last block, a block of one entry, blobs stored twice).
func TestCachedIndexAnswersAsTheLoaded(t *testing.T) {
	for seed := range uint64(6) {
		rng := mrand.New(mrand.NewPCG(seed, 19))
		nFiles, perFile := 1+rng.IntN(4), rng.IntN(400)
		if seed == 0 {
			nFiles, perFile = 1, indexCacheBlockEntries+1 // a last block of one
		}
		packs := testPacks(rng, 1+rng.IntN(6))
		files := indexFiles(rng, nFiles, perFile, packs)
		ids := allIDs(files, rng, 50)
		want := loadedIndex(files, perFile*nFiles)
		got := cachedIndex(t, files)
		if got.sorted != nil || len(got.blobs) != 0 {
			t.Fatalf("seed %d: the cached index loaded entries into memory", seed)
		}
		if w, g := indexState(want, ids, packs), indexState(got, ids, packs); w != g {
			t.Fatalf("seed %d: cached index differs from the loaded one:\n%s", seed, firstDiff(w, g))
		}
		if got.cached.err != nil {
			t.Fatalf("seed %d: %v", seed, got.cached.err)
		}
	}
}

// What follows a load (a session's blobs, lost packs, a failed session)
// changes an index read from its cache as it changes the map.
func TestCachedIndexChangesAsTheMap(t *testing.T) {
	changesAsTheMap(t, func(files [][]IndexedBlob) *Index { return cachedIndex(t, files) })
}

// A changed byte in the magic, the sealed header or its length, in any
// block, a cut file, or another key makes the cache fail to open, as a
// damaged cache: never trusted.
func TestIndexCacheDamageDetected(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(3, 19))
	packs := testPacks(rng, 5)
	files := indexFiles(rng, 2, 300, packs)
	path := filepath.Join(t.TempDir(), indexCacheFileName)
	s := testCacheSealer(t)
	saveCache(t, path, s, loadedIndex(files, 0), nil)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := openIndexCache(path, s)
	if err != nil {
		t.Fatalf("open the undamaged cache: %v", err)
	}
	blockSize := int(c.blockSize)
	blocks := c.blockCount()
	c.close()
	if blocks < 4 {
		t.Fatalf("%d blocks, want at least 4", blocks)
	}
	headerAt := len(good) - 8 - int(binary.LittleEndian.Uint64(good[len(good)-8:]))
	for _, at := range []int{0, len(indexCacheMagic) - 1, headerAt, len(good) - 100, len(good) - 9, len(good) - 8, len(good) - 1} {
		bad := append([]byte(nil), good...)
		bad[at] ^= 0x40
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := openIndexCache(path, s); err == nil {
			c.close()
			t.Errorf("a cache with byte %d of %d changed opened", at, len(good))
		}
	}
	if err := os.WriteFile(path, good[:len(good)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := openIndexCache(path, s); err == nil {
		c.close()
		t.Error("a cut cache opened")
	}
	// Under another key (another repository's cache) nothing opens.
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := openIndexCache(path, testCacheSealer(t)); !errors.Is(err, ErrIntegrity) {
		c.close()
		t.Errorf("a cache opened under another key: %v", err)
	}

	for _, block := range []int{0, blocks / 2, blocks - 1} {
		bad := append([]byte(nil), good...)
		bad[len(indexCacheMagic)+block*blockSize+40] ^= 0x40
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := openIndexCache(path, s); !errors.Is(err, ErrIntegrity) {
			if err == nil {
				c.close()
			}
			t.Errorf("a cache with block %d changed: open %v, want an integrity error", block, err)
		}
	}
}

// A block changed after the cache was opened is not trusted: its blobs
// are not found, and the reader remembers why.
func TestIndexCacheBlockChangedAfterOpen(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(4, 19))
	files := indexFiles(rng, 1, 200, testPacks(rng, 3))
	x := cachedIndex(t, files)
	id := files[0][0].ID // in block 0
	f, err := os.OpenFile(x.cached.f.Name(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, int64(len(indexCacheMagic)+30)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if x.Has(id) {
		t.Fatal("a blob of a changed block was found")
	}
	if !errors.Is(x.cached.err, ErrIntegrity) {
		t.Fatalf("reader error %v, want an integrity error", x.cached.err)
	}
}

// Two builders writing the same cache at once (A held between writing its
// temporary file and renaming it while B finishes) leave one cache that
// opens with every entry, no temporary file, and the file 0600 in a folder
// 0700.
func TestIndexCacheTwoBuilders(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(5, 19))
	files := indexFiles(rng, 3, 400, testPacks(rng, 6))
	root := t.TempDir()
	path := indexCachePath(root, "repo-id")
	s := testCacheSealer(t)
	x := loadedIndex(files, 0)
	aHeld, releaseA := make(chan struct{}), make(chan struct{})
	var renames atomic.Int32
	indexCacheBeforeRename = func() {
		if renames.Add(1) == 1 {
			close(aHeld)
			<-releaseA
		}
	}
	t.Cleanup(func() { indexCacheBeforeRename = nil })
	build := func() error {
		x.mu.RLock()
		defer x.mu.RUnlock()
		return writeIndexCache(path, s, x.cacheContent("repo-id", nil), x.eachSorted)
	}
	errA := make(chan error, 1)
	go func() { errA <- build() }()
	<-aHeld
	if err := build(); err != nil {
		close(releaseA)
		t.Fatalf("builder B: %v", err)
	}
	close(releaseA)
	if err := <-errA; err != nil {
		t.Fatalf("builder A: %v", err)
	}
	if renames.Load() != 2 {
		t.Fatalf("%d builders reached the rename, want 2", renames.Load())
	}
	c, err := openIndexCache(path, s)
	if err != nil {
		t.Fatalf("open after two builders: %v", err)
	}
	defer c.close()
	got := newIndex()
	got.attachCache(c)
	if got.Len() != x.Len() {
		t.Fatalf("cache holds %d entries, want %d", got.Len(), x.Len())
	}
	for _, f := range files {
		for _, b := range f {
			if !got.Has(b.ID) {
				t.Fatalf("blob %s not in the cache", b.ID.Short())
			}
		}
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != indexCacheFileName {
		t.Fatalf("folder holds %v, want only %s", entries, indexCacheFileName)
	}
	for p, want := range map[string]fs.FileMode{path: 0o600, filepath.Dir(path): 0o700 | fs.ModeDir} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != want {
			t.Errorf("%s has mode %v, want %v", p, st.Mode(), want)
		}
	}
}

// damageBlockZero changes a byte of block 0 of x's open cache file.
func damageBlockZero(t *testing.T, x *Index) {
	t.Helper()
	f, err := os.OpenFile(x.cached.f.Name(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{0xff}, int64(len(indexCacheMagic)+30)); err != nil {
		t.Fatal(err)
	}
}

// A walk of the whole index fails when a block of the cache changed after
// it was opened, rather than act on a part: dropPacks left blobs placed in
// a lost pack (a backup then skipped storing them), Each and EachPlace
// answered a part of the index.
func TestIndexCacheWalkFailsOnDamagedBlock(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(6, 19))
	packs := testPacks(rng, 3)
	files := indexFiles(rng, 1, 1000, packs)
	x := cachedIndex(t, files)
	damageBlockZero(t, x)
	if err := x.Each(func(IndexedBlob) {}); !errors.Is(err, ErrIntegrity) {
		t.Errorf("Each: %v, want an integrity error", err)
	}
	if err := x.EachPlace(func(IndexedBlob) {}); !errors.Is(err, ErrIntegrity) {
		t.Errorf("EachPlace: %v, want an integrity error", err)
	}
	if _, err := x.placesIn(packs[0]); !errors.Is(err, ErrIntegrity) {
		t.Errorf("placesIn: %v, want an integrity error", err)
	}
	n, err := x.dropPacks(map[ID]bool{packs[0]: true})
	if !errors.Is(err, ErrIntegrity) {
		t.Fatalf("dropPacks: %d dropped, error %v, want an integrity error", n, err)
	}
	if !x.HasPack(packs[0]) {
		t.Error("a failed dropPacks forgot the pack: a retry would not drop its blobs")
	}
}

// A cache written from an index whose own cache has a damaged block is not
// written at all (it was sealed over a part of the entries, and opened
// with none), and leaves no temporary file.
func TestIndexCacheNotWrittenFromDamagedWalk(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(7, 19))
	files := indexFiles(rng, 2, 800, testPacks(rng, 4))
	x := cachedIndex(t, files)
	damageBlockZero(t, x)
	dir := t.TempDir()
	path := filepath.Join(dir, indexCacheFileName)
	x.mu.RLock()
	err := writeIndexCache(path, testCacheSealer(t), x.cacheContent("repo-id", nil), x.eachSorted)
	x.mu.RUnlock()
	if !errors.Is(err, ErrIntegrity) {
		t.Fatalf("write from a damaged walk: %v, want an integrity error", err)
	}
	assertEmptyDir(t, dir)
}

// A walk that ends early without an error (fewer entries than the index
// holds) writes no cache either.
func TestIndexCacheNotWrittenShort(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(8, 19))
	x := loadedIndex(indexFiles(rng, 1, 300, testPacks(rng, 2)), 0)
	dir := t.TempDir()
	path := filepath.Join(dir, indexCacheFileName)
	x.mu.RLock()
	c := x.cacheContent("repo-id", nil)
	short := func(yield func(ID, indexEntry) bool) error {
		n := 0
		return x.eachSorted(func(id ID, e indexEntry) bool {
			n++
			return n < 100 && yield(id, e)
		})
	}
	err := writeIndexCache(path, testCacheSealer(t), c, short)
	x.mu.RUnlock()
	if err == nil {
		t.Fatal("a cache of 99 of 300 entries was written")
	}
	assertEmptyDir(t, dir)
}

// assertEmptyDir fails unless dir holds nothing.
func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("%s holds %v, want nothing", dir, entries)
	}
}

// A temporary cache file older than an hour (a killed builder's) is
// removed when a cache is written; a younger one (a live builder's) stays.
func TestIndexCacheOldTempsRemoved(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(9, 19))
	x := loadedIndex(indexFiles(rng, 1, 100, testPacks(rng, 2)), 0)
	dir := t.TempDir()
	path := filepath.Join(dir, indexCacheFileName)
	old, young := path+".tmp-killed", path+".tmp-live"
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("part of a cache"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-indexCacheTempAge - time.Minute)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	saveCache(t, path, testCacheSealer(t), x, nil)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("a temporary file older than an hour stayed: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a young temporary file was removed: %v", err)
	}
}

// streamedIndex is an index that answers from a cache file built from
// files by the streaming build (newCacheBuild), in their order.
func streamedIndex(t *testing.T, files [][]IndexedBlob) *Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "repo-id", indexCacheFileName)
	s := testCacheSealer(t)
	b := newCacheBuild("repo-id", nil)
	for _, f := range files {
		if err := b.addFile(indexFile{Blobs: f}); err != nil {
			t.Fatal(err)
		}
	}
	err := b.write(context.Background(), path, s)
	if cerr := b.close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	c, err := openIndexCache(path, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	x := newIndex()
	x.attachCache(c)
	return x
}

// A cache built by streaming the index files through the external sort
// answers every question as the index loaded from them, for random indexes
// (blobs listed again in another file, in the same pack or another; a last
// block of one entry), with a sort that spills a run every 50 entries, and
// leaves no run file behind.
func TestStreamedCacheAnswersAsTheLoaded(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	LowerIndexCacheSortBudget(t, 50)
	for seed := range uint64(6) {
		rng := mrand.New(mrand.NewPCG(seed, 23))
		nFiles, perFile := 2+rng.IntN(4), 1+rng.IntN(400)
		if seed == 0 {
			nFiles, perFile = 1, indexCacheBlockEntries+1
		}
		packs := testPacks(rng, 1+rng.IntN(6))
		files := indexFiles(rng, nFiles, perFile, packs)
		// A blob listed in two index files in two packs: its place is the
		// first file's, the other an alternate.
		if nFiles > 1 {
			twice := files[0][0]
			twice.Pack, twice.Offset = randomID(rng), 7
			files[nFiles-1] = sortedIndexFile(append(files[nFiles-1], twice)).Blobs
			packs = append(packs, twice.Pack)
		}
		ids := allIDs(files, rng, 50)
		want := loadedIndex(files, 0)
		got := streamedIndex(t, files)
		if nFiles > 1 && len(got.alternates(files[0][0].ID)) == 0 {
			t.Fatalf("seed %d: the blob listed in two packs has no alternate", seed)
		}
		if w, g := indexState(want, ids, packs), indexState(got, ids, packs); w != g {
			t.Fatalf("seed %d: streamed cache differs from the loaded index:\n%s", seed, firstDiff(w, g))
		}
		if got.cached.err != nil {
			t.Fatalf("seed %d: %v", seed, got.cached.err)
		}
		assertEmptyDir(t, tmp)
	}
}

// What follows a load changes an index read from a streamed cache as it
// changes the map.
func TestStreamedCacheChangesAsTheMap(t *testing.T) {
	LowerIndexCacheSortBudget(t, 64)
	changesAsTheMap(t, func(files [][]IndexedBlob) *Index { return streamedIndex(t, files) })
}
