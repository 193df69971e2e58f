package repo

import (
	"bufio"
	"bytes"
	"container/list"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"lukechampine.com/blake3"
)

// The local index cache keeps the merged, sorted index of a big repository
// in one file on the local disk, so that opening the repository reads the
// cache's fan-out and pack table instead of decoding every index file, and
// a lookup reads one block of it. It is a copy of what the repository's
// index files say, never a source of truth: a cache that does not match
// the index files listed, or whose header or any block does not open, is
// rebuilt from them; a block that no longer opens when it is read (the
// file changed under a running command) is never trusted, and the file is
// removed. Its layout (docs/FORMAT.md, "The local index
// cache"):
//
//	"nightjar index cache 1\n"
//	sealed block 0 | sealed block 1 | ...
//	sealed header | header length (uint64 LE)
//
// The header holds the repository ID, the index file IDs covered, the pack
// table (ID and end of the last blob), the number of entries and blocks,
// the first blob ID of each block (the fan-out) and the alternate places.
// A block holds up to indexCacheBlockEntries entries encoded as in an index
// file (ID, pack number into the table, type, compression, offset, sealed
// and raw length), sorted by ID across blocks. Every block is sealed on its
// own, bound to the header's random nonce and its number, so that a block
// cannot be moved, nor mixed in from another cache file.

const (
	indexCacheMagic = "nightjar index cache 1\n"
	// indexCacheFileName is the cache's name in the repository's folder
	// of the user's cache.
	indexCacheFileName = "index.cache"
	// indexCacheBlockEntries fills a block of about 4 KiB of plaintext.
	indexCacheBlockEntries = 4096 / indexEntrySize
	// indexCacheLRU is how many opened blocks a reader keeps.
	indexCacheLRU = 256
)

// IndexCacheMinBlobs is the size of index from which LoadIndex keeps a
// cache; below it, loading the index files is fast enough. Tests lower it.
var IndexCacheMinBlobs = 1_000_000

// indexCacheSealer seals the cache under a key derived from the
// repository's master key and used for nothing else.
func indexCacheSealer(r *Repository) (sealer, error) {
	if r.encryption == EncryptionNone {
		return plainSealer{}, nil
	}
	key := make([]byte, 32)
	blake3.DeriveKey(key, "nightjar 2026-12-02 local index cache", r.key.Encrypt)
	return newAEADSealer(key)
}

// indexCacheContent is what a cache file holds besides its blocks.
type indexCacheContent struct {
	repoID   string
	nonce    [32]byte // random, binds the blocks to this file
	covered  []ID     // index files, sorted
	packs    []ID
	packEnds []int64
	entries  int64
	fanout   []ID // first ID of each block
	alts     []cachedAlt
}

// cachedAlt is an alternate place of a blob (Index.alts).
type cachedAlt struct {
	id ID
	e  indexEntry
}

func appendCacheEntry(buf []byte, id ID, e indexEntry) []byte {
	return appendEntryPlace(append(buf, id[:]...), e)
}

// entryPlaceSize is the size of an entry after its ID.
const entryPlaceSize = indexEntrySize - 32

// appendEntryPlace appends the part of an entry after its ID.
func appendEntryPlace(buf []byte, e indexEntry) []byte {
	buf = binary.LittleEndian.AppendUint32(buf, e.pack)
	buf = append(buf, byte(e.typ), e.comp)
	buf = binary.LittleEndian.AppendUint32(buf, e.offset)
	buf = binary.LittleEndian.AppendUint32(buf, e.length)
	return binary.LittleEndian.AppendUint32(buf, e.rawLength)
}

// decodeCacheEntry reads one entry (indexEntrySize bytes); packs is the
// size of the pack table.
func decodeCacheEntry(p []byte, packs int) (ID, indexEntry, error) {
	var id ID
	copy(id[:], p[:32])
	e, err := decodeEntryPlace(p[32:], packs)
	return id, e, err
}

// decodeEntryPlace reads the part of an entry after its ID
// (entryPlaceSize bytes).
func decodeEntryPlace(p []byte, packs int) (indexEntry, error) {
	e := indexEntry{pack: binary.LittleEndian.Uint32(p), typ: BlobType(p[4]), comp: p[5],
		offset: binary.LittleEndian.Uint32(p[6:]), length: binary.LittleEndian.Uint32(p[10:]), rawLength: binary.LittleEndian.Uint32(p[14:])}
	if int(e.pack) >= packs || !e.typ.valid() || e.comp > compressZstd {
		return e, fmt.Errorf("bad entry: %w", ErrIntegrity)
	}
	return e, nil
}

func encodeCacheHeader(c *indexCacheContent) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.repoID)))
	b = append(b, c.repoID...)
	b = append(b, c.nonce[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.covered)))
	for _, id := range c.covered {
		b = append(b, id[:]...)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.packs)))
	for i, id := range c.packs {
		b = append(b, id[:]...)
		b = binary.LittleEndian.AppendUint64(b, uint64(c.packEnds[i]))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(c.entries))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.fanout)))
	for _, id := range c.fanout {
		b = append(b, id[:]...)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(c.alts)))
	for _, a := range c.alts {
		b = appendCacheEntry(b, a.id, a.e)
	}
	return b
}

func decodeCacheHeader(p []byte) (*indexCacheContent, error) {
	bad := errors.New("truncated header")
	c := &indexCacheContent{}
	u32 := func() (int, bool) {
		if len(p) < 4 {
			return 0, false
		}
		n := int(binary.LittleEndian.Uint32(p))
		p = p[4:]
		return n, true
	}
	ids := func(n, stride int) ([]ID, bool) {
		if n > len(p)/stride {
			return nil, false
		}
		out := make([]ID, n)
		for i := range out {
			copy(out[i][:], p[:32])
			p = p[stride:]
		}
		return out, true
	}
	n, ok := u32()
	if !ok || n > len(p) {
		return nil, bad
	}
	c.repoID, p = string(p[:n]), p[n:]
	if len(p) < 32 {
		return nil, bad
	}
	copy(c.nonce[:], p)
	p = p[32:]
	if n, ok = u32(); !ok {
		return nil, bad
	}
	if c.covered, ok = ids(n, 32); !ok {
		return nil, bad
	}
	if n, ok = u32(); !ok || n > len(p)/40 {
		return nil, bad
	}
	c.packs, c.packEnds = make([]ID, n), make([]int64, n)
	for i := range c.packs {
		copy(c.packs[i][:], p[:32])
		c.packEnds[i] = int64(binary.LittleEndian.Uint64(p[32:]))
		p = p[40:]
	}
	if len(p) < 8 {
		return nil, bad
	}
	c.entries, p = int64(binary.LittleEndian.Uint64(p)), p[8:]
	if n, ok = u32(); !ok {
		return nil, bad
	}
	if c.fanout, ok = ids(n, 32); !ok {
		return nil, bad
	}
	if n, ok = u32(); !ok || n > len(p)/indexEntrySize {
		return nil, bad
	}
	for range n {
		id, e, err := decodeCacheEntry(p, len(c.packs))
		if err != nil {
			return nil, err
		}
		c.alts = append(c.alts, cachedAlt{id, e})
		p = p[indexEntrySize:]
	}
	if len(p) != 0 || c.entries < 0 || int64(len(c.fanout)) != (c.entries+indexCacheBlockEntries-1)/indexCacheBlockEntries {
		return nil, errors.New("inconsistent header")
	}
	return c, nil
}

// blockAD binds a block to its cache file and its place in it.
func blockAD(nonce [32]byte, block int) []byte {
	return binary.LittleEndian.AppendUint64(append([]byte("block\x00"), nonce[:]...), uint64(block))
}

var headerAD = []byte(indexCacheMagic + "header\x00")

// entriesCountedByWalk is the count of entries a cache is written with
// (indexCacheContent.entries) when the walk checks its own count: the
// streaming build (indexcachebuild.go) knows the number of distinct blobs
// only at the end, and checks that the sort handed back every entry read.
const entriesCountedByWalk = -1

// writeIndexCache writes the cache file at path from entries, which yields
// every blob's first place in ID order (c.entries of them, unless
// entriesCountedByWalk), and replaces any cache there. A walk that fails,
// or yields another count, writes nothing. The header is encoded after the
// walk, which may fill c.alts. It writes under a temporary name and
// renames, so that a reader, or a second builder, never sees a part of a
// file.
func writeIndexCache(path string, s sealer, c *indexCacheContent, entries func(yield func(ID, indexEntry) bool) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write index cache: %w", err)
	}
	removeOldCacheTemps(dir, time.Now().Add(-indexCacheTempAge))
	f, err := os.CreateTemp(dir, indexCacheFileName+".tmp-*") // 0600
	if err != nil {
		return fmt.Errorf("write index cache: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
			err = fmt.Errorf("write index cache: %w", err)
		}
	}()
	if _, err := rand.Read(c.nonce[:]); err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := w.WriteString(indexCacheMagic); err != nil {
		return err
	}
	want := c.entries
	c.fanout, c.entries = make([]ID, 0, max(want, 0)/indexCacheBlockEntries+1), 0
	var plain, sealed []byte
	flush := func() error {
		if len(plain) == 0 {
			return nil
		}
		sealed = s.seal(sealed[:0], plain, blockAD(c.nonce, len(c.fanout)-1))
		plain = plain[:0]
		_, err := w.Write(sealed)
		return err
	}
	var prev ID
	var writeErr error
	walkErr := entries(func(id ID, e indexEntry) bool {
		if c.entries > 0 && compareIDs(prev, id) >= 0 {
			writeErr = errors.New("entries not in order") // a bug, not damage
			return false
		}
		prev = id
		if len(plain) == 0 {
			c.fanout = append(c.fanout, id)
		}
		plain = appendCacheEntry(plain, id, e)
		c.entries++
		if len(plain) == indexCacheBlockEntries*indexEntrySize {
			if writeErr = flush(); writeErr != nil {
				return false
			}
		}
		return true
	})
	if writeErr != nil {
		return writeErr
	}
	if walkErr != nil {
		return walkErr
	}
	// A header that covers every index file over a part of their entries
	// would answer "not present" for the rest: a backup would store them
	// again, a restore would fail, until the cache were deleted.
	if want != entriesCountedByWalk && c.entries != want {
		return fmt.Errorf("%d entries walked, %d in the index", c.entries, want)
	}
	if err := flush(); err != nil {
		return err
	}
	header := s.seal(nil, encodeCacheHeader(c), headerAD)
	if _, err := w.Write(header); err != nil {
		return err
	}
	if _, err := w.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(header)))); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if indexCacheBeforeRename != nil {
		indexCacheBeforeRename()
	}
	return os.Rename(f.Name(), path)
}

// indexCacheTempAge is the age past which a temporary cache file is a
// killed builder's (a write takes seconds) and is removed: each is the
// size of a cache, about 500 MB at 10M blobs.
const indexCacheTempAge = time.Hour

// removeOldCacheTemps removes the temporary cache files in dir last
// written before cutoff; one that cannot be removed stays for the next.
func removeOldCacheTemps(dir string, cutoff time.Time) {
	temps, _ := filepath.Glob(filepath.Join(dir, indexCacheFileName+".tmp-*"))
	for _, p := range temps {
		if st, err := os.Stat(p); err == nil && st.ModTime().Before(cutoff) {
			_ = os.Remove(p)
		}
	}
}

// indexCacheBeforeRename, when set (by a test), runs between a cache's
// temporary file being written whole and its rename: where two builders
// overlap.
var indexCacheBeforeRename func()

// indexCacheReader looks blobs up in an open cache file.
type indexCacheReader struct {
	f         *os.File
	s         sealer
	c         *indexCacheContent
	blocksAt  int64 // offset of block 0
	blockSize int64 // sealed size of a full block

	mu    sync.Mutex
	lru   *list.List // of *cachedBlock, most recent first
	byNum map[int]*list.Element
	err   error // the first block that failed to open or check
}

type cachedBlock struct {
	num     int
	entries []byte
}

func (c *indexCacheReader) close() {
	if c != nil {
		_ = c.f.Close()
	}
}

func (c *indexCacheReader) blockCount() int { return len(c.c.fanout) }

// blockEntries is how many entries block n holds.
func (c *indexCacheReader) blockEntries(n int) int {
	if n < len(c.c.fanout)-1 {
		return indexCacheBlockEntries
	}
	return int(c.c.entries - int64(n)*indexCacheBlockEntries)
}

// readBlocks reads blocks [first, first+n) into raw and opens them in
// place; it returns raw and each block's entries (which alias raw).
func (c *indexCacheReader) readBlocks(first, n int, raw []byte, blocks [][]byte) ([]byte, [][]byte, error) {
	size := int64(0)
	for b := first; b < first+n; b++ {
		size += int64(c.blockEntries(b)*indexEntrySize + c.s.overhead())
	}
	raw = slices.Grow(raw[:0], int(size))[:size]
	if _, err := c.f.ReadAt(raw, c.blocksAt+int64(first)*c.blockSize); err != nil {
		return raw, blocks, fmt.Errorf("read block %d: %w", first, err)
	}
	rest := raw
	for b := first; b < first+n; b++ {
		l := c.blockEntries(b)*indexEntrySize + c.s.overhead()
		plain, err := c.s.openInPlace(rest[:l], blockAD(c.c.nonce, b))
		if err != nil {
			return raw, blocks, fmt.Errorf("block %d: %w", b, err)
		}
		blocks = append(blocks, plain)
		rest = rest[l:]
	}
	return raw, blocks, nil
}

// each calls fn with every entry, in ID order, opening and checking each
// block as block does.
func (c *indexCacheReader) each(fn func(ID, indexEntry)) error {
	const batch = 256
	var raw []byte
	var blocks [][]byte
	for first := 0; first < c.blockCount(); first += batch {
		n := min(batch, c.blockCount()-first)
		var err error
		raw, blocks, err = c.readBlocks(first, n, raw, blocks[:0])
		if err != nil {
			return err
		}
		if err := c.checkBlocks(first, blocks); err != nil {
			return err
		}
		for _, plain := range blocks {
			for ; len(plain) > 0; plain = plain[indexEntrySize:] {
				id, e, err := decodeCacheEntry(plain, len(c.c.packs))
				if err != nil {
					return err
				}
				if fn != nil {
					fn(id, e)
				}
			}
		}
	}
	return nil
}

// block returns block n's entries, opened, from the LRU or the file.
func (c *indexCacheReader) block(n int) ([]byte, error) {
	c.mu.Lock()
	if el, ok := c.byNum[n]; ok {
		c.lru.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*cachedBlock).entries, nil
	}
	c.mu.Unlock()
	_, blocks, err := c.readBlocks(n, 1, nil, nil)
	if err == nil {
		err = c.checkBlocks(n, blocks)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		return nil, c.damaged(fmt.Sprintf("index cache block %d", n), err)
	}
	if _, ok := c.byNum[n]; !ok {
		c.byNum[n] = c.lru.PushFront(&cachedBlock{n, blocks[0]})
		if c.lru.Len() > indexCacheLRU {
			old := c.lru.Remove(c.lru.Back()).(*cachedBlock)
			delete(c.byNum, old.num)
		}
	}
	return blocks[0], nil
}

// damaged records err, a part of the open cache (what) that failed to
// open, and removes the cache file the first time, so that the next open
// rebuilds it instead of failing the same way; c.mu is held. It returns
// the first such error, naming the file and what a user can do.
func (c *indexCacheReader) damaged(what string, err error) error {
	if c.err != nil {
		return c.err
	}
	path := c.f.Name()
	if rmErr := os.Remove(path); rmErr != nil {
		c.err = fmt.Errorf("%s damaged: delete %s or use --no-cache: %w", what, path, err)
	} else {
		c.err = fmt.Errorf("%s damaged (%s removed: the next open rebuilds it): %w", what, path, err)
	}
	return c.err
}

// lookup returns id's first place in the cache. A block that does not
// open answers "not here" (it is never trusted) and is remembered in err.
func (c *indexCacheReader) lookup(id ID) (indexEntry, bool) {
	if c == nil || len(c.c.fanout) == 0 {
		return indexEntry{}, false
	}
	n := sort.Search(len(c.c.fanout), func(i int) bool { return compareIDs(c.c.fanout[i], id) > 0 }) - 1
	if n < 0 {
		return indexEntry{}, false
	}
	entries, err := c.block(n)
	if err != nil {
		return indexEntry{}, false
	}
	count := len(entries) / indexEntrySize
	i := sort.Search(count, func(i int) bool {
		return bytes.Compare(entries[i*indexEntrySize:i*indexEntrySize+32], id[:]) >= 0
	})
	if i == count || !bytes.Equal(entries[i*indexEntrySize:i*indexEntrySize+32], id[:]) {
		return indexEntry{}, false
	}
	_, e, err := decodeCacheEntry(entries[i*indexEntrySize:], len(c.c.packs))
	return e, err == nil
}

// openIndexCache opens the cache file at path and checks it whole: the
// magic, the header's seal and content, the fan-out's order, the file's
// size against the header's count of entries, and every block's seal and
// entries. Any failure is an error: the caller rebuilds the cache. Reading
// every block costs the open about 0.5 GB of reads and decryption at 10
// million blobs, but a damaged block found only when a lookup meets it
// would answer "not found" for the blobs it holds, and commands that judge
// a repository's losses by lookups (repair snapshots, stats, a restore's
// verification) would then report, or act on, a loss the repository does
// not have.
func openIndexCache(path string, s sealer) (*indexCacheReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c, err := readIndexCacheHeader(f, s)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := c.check(); err != nil {
		_ = f.Close()
		return nil, err
	}
	return c, nil
}

// check checks the fan-out's order and every block, a range of blocks on
// each core (the open's main cost): each block's entries valid and sorted,
// starting with its fan-out ID and ending below the next block's, so that
// with the fan-out sorted the blocks are in order too.
func (c *indexCacheReader) check() error {
	for b := 1; b < len(c.c.fanout); b++ {
		if compareIDs(c.c.fanout[b-1], c.c.fanout[b]) >= 0 {
			return fmt.Errorf("fan-out not sorted: %w", ErrIntegrity)
		}
	}
	const batch = 256
	workers := runtime.GOMAXPROCS(0)
	var g errgroup.Group
	for w := range workers {
		g.Go(func() error {
			var raw []byte
			var blocks [][]byte
			for first := w * batch; first < c.blockCount(); first += workers * batch {
				var err error
				raw, blocks, err = c.readBlocks(first, min(batch, c.blockCount()-first), raw, blocks[:0])
				if err != nil {
					return err
				}
				if err := c.checkBlocks(first, blocks); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// checkBlocks checks the opened blocks from first on: their entries valid
// and sorted, each block starting with its fan-out ID and ending below the
// next block's (the fan-out being sorted, the blocks are then in order
// too, whichever are read).
func (c *indexCacheReader) checkBlocks(first int, blocks [][]byte) error {
	for i, plain := range blocks {
		b := first + i
		var prev ID
		for j := 0; len(plain) > 0; j++ {
			id, _, err := decodeCacheEntry(plain, len(c.c.packs))
			if err != nil {
				return fmt.Errorf("block %d: %w", b, err)
			}
			if j == 0 && id != c.c.fanout[b] {
				return fmt.Errorf("fan-out does not match block %d: %w", b, ErrIntegrity)
			}
			if j > 0 && compareIDs(prev, id) >= 0 {
				return fmt.Errorf("block %d not sorted: %w", b, ErrIntegrity)
			}
			prev = id
			plain = plain[indexEntrySize:]
		}
		if b+1 < len(c.c.fanout) && compareIDs(prev, c.c.fanout[b+1]) >= 0 {
			return fmt.Errorf("block %d overlaps the next: %w", b, ErrIntegrity)
		}
	}
	return nil
}

func readIndexCacheHeader(f *os.File, s sealer) (*indexCacheReader, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < int64(len(indexCacheMagic))+8 {
		return nil, fmt.Errorf("too short: %w", ErrIntegrity)
	}
	head := make([]byte, len(indexCacheMagic))
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("read magic: %w", err)
	}
	if string(head) != indexCacheMagic {
		return nil, fmt.Errorf("not an index cache: %w", ErrIntegrity)
	}
	var trailer [8]byte
	if _, err := f.ReadAt(trailer[:], size-8); err != nil {
		return nil, fmt.Errorf("read header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(trailer[:])
	blocksEnd := size - 8 - int64(n)
	if n > uint64(size) || blocksEnd < int64(len(indexCacheMagic)) {
		return nil, fmt.Errorf("header of %d bytes in a file of %d: %w", n, size, ErrIntegrity)
	}
	sealed := make([]byte, n)
	if _, err := f.ReadAt(sealed, blocksEnd); err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	plain, err := s.openInPlace(sealed, headerAD)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	c, err := decodeCacheHeader(plain)
	if err != nil {
		return nil, fmt.Errorf("header: %v: %w", err, ErrIntegrity)
	}
	r := &indexCacheReader{f: f, s: s, c: c, blocksAt: int64(len(indexCacheMagic)),
		blockSize: int64(indexCacheBlockEntries*indexEntrySize + s.overhead()),
		lru:       list.New(), byNum: map[int]*list.Element{}}
	want := r.blocksAt
	for b := range r.blockCount() {
		want += int64(r.blockEntries(b)*indexEntrySize + s.overhead())
	}
	if blocksEnd != want {
		return nil, fmt.Errorf("blocks end at %d, not %d: %w", blocksEnd, want, ErrIntegrity)
	}
	return r, nil
}

// indexCachePath is where the cache of repository id lives under root.
func indexCachePath(root, id string) string {
	return filepath.Join(root, id, indexCacheFileName)
}

// eachCached calls fn with the first place of every blob in the index
// cache, in ID order; x.mu is held. A block that fails to open or check
// ends the walk early, is remembered in x.cached.err (the file removed),
// and is returned.
func (x *Index) eachCached(fn func(id ID, e indexEntry)) error {
	if x.cached == nil {
		return nil
	}
	err := x.cached.each(func(id ID, e indexEntry) {
		if o, ok := x.over[id]; ok {
			if o.dropped {
				return
			}
			e = o.e
		}
		fn(id, e)
	})
	if err != nil {
		x.cached.mu.Lock()
		defer x.cached.mu.Unlock()
		return x.cached.damaged("index cache", err)
	}
	return nil
}

// cacheErr is why a part of the index cache failed to open since it was
// opened, or nil: a blob "not found" may be in that part.
func (x *Index) cacheErr() error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.cached == nil {
		return nil
	}
	x.cached.mu.Lock()
	defer x.cached.mu.Unlock()
	return x.cached.err
}

// eachSorted yields every blob's first place in ID order: the sorted
// arrays or the cache merged with the map; x.mu is held. It fails when a
// block of the cache fails to open.
func (x *Index) eachSorted(yield func(ID, indexEntry) bool) error {
	extra := make([]ID, 0, len(x.blobs))
	for id := range x.blobs {
		extra = append(extra, id)
	}
	slices.SortFunc(extra, compareIDs)
	stopped := false
	emit := func(id ID, e indexEntry) {
		if stopped {
			return
		}
		for len(extra) > 0 && compareIDs(extra[0], id) < 0 {
			if !yield(extra[0], x.blobs[extra[0]]) {
				stopped = true
				return
			}
			extra = extra[1:]
		}
		if !yield(id, e) {
			stopped = true
		}
	}
	x.sorted.each(emit)
	if err := x.eachCached(emit); err != nil {
		return err
	}
	for _, id := range extra {
		if stopped || !yield(id, x.blobs[id]) {
			return nil
		}
	}
	return nil
}

// cacheContent returns what a cache of x holds besides its entries, for
// a repository and the index files loaded; x.mu is held.
func (x *Index) cacheContent(repoID string, covered []ID) *indexCacheContent {
	c := &indexCacheContent{repoID: repoID, covered: slices.Clone(covered),
		packs: slices.Clone(x.packs), packEnds: slices.Clone(x.packEnds)}
	slices.SortFunc(c.covered, compareIDs)
	c.entries = int64(x.lenLocked())
	for id, alts := range x.alts {
		for _, e := range alts {
			c.alts = append(c.alts, cachedAlt{id, e})
		}
	}
	return c
}

// attachCache makes an empty x answer from the cache file c: its pack
// table and alternates go into memory, its entries stay on disk.
func (x *Index) attachCache(c *indexCacheReader) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.cached, x.over = c, map[ID]cacheOverride{}
	x.packs = slices.Clone(c.c.packs)
	x.packEnds = slices.Clone(c.c.packEnds)
	for i, p := range x.packs {
		x.packNum[p] = uint32(i)
	}
	for _, a := range c.c.alts {
		if x.alts == nil {
			x.alts = map[ID][]indexEntry{}
		}
		x.alts[a.id] = append(x.alts[a.id], a.e)
	}
}
