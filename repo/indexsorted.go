package repo

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
)

// LoadIndex puts the blobs of every index file into sorted arrays instead
// of a map: a map entry of an ID and its place cost about 120 bytes of
// heap, an array entry 48 (the whole ID, which dedup needs exactly, and a
// 16-byte place). Sorting them costs less than hashing, because index
// files are loaded into buckets by the first bits of the ID (which are
// uniform: IDs are keyed hashes), and each bucket is sorted on its own.
// What is added after the load (a write session's blobs, repairs) goes
// into the map, which stays small.

// sortedBlobs is the sorted part of an Index: blobs bucketed by the top
// bits of their ID, each bucket sorted by ID. Not safe for concurrent use:
// Index guards it.
type sortedBlobs struct {
	shift uint // an ID's bucket is its first 8 bytes (big-endian) >> shift
	ids   [][]ID
	ents  [][]sortedEntry
	live  int // entries not dropped
}

// sortedEntry is a blob's place in 16 bytes: the pack number, type and
// compression share one word.
type sortedEntry struct {
	packMeta  uint32 // pack<<4 | type<<2 | compression; droppedEntry when dropped
	offset    uint32
	length    uint32
	rawLength uint32
}

const (
	// droppedEntry marks an entry whose blob has no place left.
	droppedEntry = math.MaxUint32
	// maxSortedPack is the highest pack number a sortedEntry holds; a
	// place in a pack numbered higher goes to the map.
	maxSortedPack = 1<<28 - 2
	// sortedBucketTarget is the mean bucket size aimed at: big enough
	// that the slack of each bucket (for chance) is a few percent, small
	// enough to sort in the cache.
	sortedBucketTarget = 16 << 10
)

func packSorted(e indexEntry) (sortedEntry, bool) {
	if e.pack > maxSortedPack || e.typ > 3 || e.comp > 3 {
		return sortedEntry{}, false
	}
	return sortedEntry{packMeta: e.pack<<4 | uint32(e.typ)<<2 | uint32(e.comp), offset: e.offset, length: e.length, rawLength: e.rawLength}, true
}

func (s sortedEntry) unpack() indexEntry {
	return indexEntry{pack: s.packMeta >> 4, typ: BlobType(s.packMeta >> 2 & 3), comp: uint8(s.packMeta & 3),
		offset: s.offset, length: s.length, rawLength: s.rawLength}
}

func idPrefix(id ID) uint64 { return binary.BigEndian.Uint64(id[:8]) }

func compareIDs(a, b ID) int {
	if c := cmp.Compare(idPrefix(a), idPrefix(b)); c != 0 {
		return c
	}
	return bytes.Compare(a[8:], b[8:])
}

// newSortedBlobs makes buckets for about expected blobs.
func newSortedBlobs(expected int) *sortedBlobs {
	buckets := 1
	for buckets*sortedBucketTarget < expected {
		buckets *= 2
	}
	s := &sortedBlobs{shift: uint(64 - bits.TrailingZeros(uint(buckets))), ids: make([][]ID, buckets), ents: make([][]sortedEntry, buckets)}
	if buckets == 1 {
		s.shift = 64
	}
	// A bucket's size is binomial: three standard deviations above the
	// mean is passed by one bucket in 700 (and then append grows it).
	mean := float64(expected) / float64(buckets)
	capacity := int(mean + 3*math.Sqrt(mean) + 16)
	for i := range s.ids {
		s.ids[i] = make([]ID, 0, capacity)
		s.ents[i] = make([]sortedEntry, 0, capacity)
	}
	return s
}

func (s *sortedBlobs) bucket(id ID) int {
	if s.shift >= 64 {
		return 0
	}
	return int(idPrefix(id) >> s.shift)
}

// append adds an entry to its bucket, unsorted (sortAll sorts).
func (s *sortedBlobs) append(id ID, e sortedEntry) {
	b := s.bucket(id)
	s.ids[b] = append(s.ids[b], id)
	s.ents[b] = append(s.ents[b], e)
}

// sortAll sorts every bucket and keeps the first entry of each ID, calling
// dup with the entries of the same ID it drops.
func (s *sortedBlobs) sortAll(dup func(id ID, e sortedEntry)) {
	var wg sync.WaitGroup
	next := make(chan int)
	type dupEntry struct {
		id ID
		e  sortedEntry
	}
	found := make([][]dupEntry, runtime.GOMAXPROCS(0))
	for w := range found {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var order []int32
			var ids []ID
			var ents []sortedEntry
			for b := range next {
				order, ids, ents = sortBucket(s.ids[b], s.ents[b], order, ids, ents)
				n := 0
				bids, bents := s.ids[b], s.ents[b]
				for i := range bids {
					if n > 0 && bids[n-1] == bids[i] {
						found[w] = append(found[w], dupEntry{bids[i], bents[i]})
						continue
					}
					bids[n], bents[n] = bids[i], bents[i]
					n++
				}
				s.ids[b], s.ents[b] = bids[:n], bents[:n]
			}
		}()
	}
	for b := range s.ids {
		next <- b
	}
	close(next)
	wg.Wait()
	s.live = 0
	for b := range s.ids {
		s.live += len(s.ids[b])
	}
	for _, f := range found {
		for _, d := range f {
			dup(d.id, d.e)
		}
	}
}

// sortBucket sorts ids and ents together by ID, through a permutation
// sorted by the IDs' first 8 bytes, and returns its scratch for reuse.
func sortBucket(ids []ID, ents []sortedEntry, order []int32, tmpIDs []ID, tmpEnts []sortedEntry) ([]int32, []ID, []sortedEntry) {
	order = order[:0]
	for i := range ids {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := compareIDs(ids[a], ids[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b) // the first loaded stays first
	})
	tmpIDs = append(tmpIDs[:0], ids...)
	tmpEnts = append(tmpEnts[:0], ents...)
	for i, o := range order {
		ids[i], ents[i] = tmpIDs[o], tmpEnts[o]
	}
	return order, tmpIDs, tmpEnts
}

// find returns the bucket and position of id's entry, dropped or not.
func (s *sortedBlobs) find(id ID) (int, int, bool) {
	if s == nil {
		return 0, 0, false
	}
	b := s.bucket(id)
	ids := s.ids[b]
	i := sort.Search(len(ids), func(i int) bool { return compareIDs(ids[i], id) >= 0 })
	if i < len(ids) && ids[i] == id {
		return b, i, true
	}
	return 0, 0, false
}

// lookup returns id's place, unless it has none.
func (s *sortedBlobs) lookup(id ID) (indexEntry, bool) {
	b, i, ok := s.find(id)
	if !ok || s.ents[b][i].packMeta == droppedEntry {
		return indexEntry{}, false
	}
	return s.ents[b][i].unpack(), true
}

// each calls fn for every entry not dropped, in ID order.
func (s *sortedBlobs) each(fn func(id ID, e indexEntry)) {
	if s == nil {
		return
	}
	for b, ids := range s.ids {
		for i, e := range s.ents[b] {
			if e.packMeta != droppedEntry {
				fn(ids[i], e.unpack())
			}
		}
	}
}

// indexLoad fills the sorted part of an empty Index from index files
// (LoadIndex); the Index is not to be used until finish returns.
type indexLoad struct {
	x      *Index
	sorted *sortedBlobs
	spill  []IndexedBlob // places a sortedEntry cannot hold
	added  atomic.Int64  // blobs added
}

// startLoad returns a load of about expected blobs (the index files'
// sizes tell), or nil when x is not empty: then LoadIndex adds to it.
func (x *Index) startLoad(expected int) *indexLoad {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.sorted != nil || x.cached != nil || len(x.blobs) > 0 {
		return nil
	}
	return &indexLoad{x: x, sorted: newSortedBlobs(expected)}
}

// loadCollectEvery is how many blobs a load adds between two garbage
// collections it asks for (an index file of a backup). Reading an index
// file leaves about 3 times its size in garbage (the file, its opened
// body, its decoded blobs), and the collector, left alone, lets garbage
// grow to the size of what is kept: the peak memory of the load doubled.
const loadCollectEvery = 1 << 16

// addFile adds one index file's blobs; safe for concurrent use.
func (l *indexLoad) addFile(blobs []IndexedBlob) {
	x := l.x
	x.mu.Lock()
	for _, b := range blobs {
		if e, ok := packSorted(x.entry(b)); ok {
			l.sorted.append(b.ID, e)
		} else {
			l.spill = append(l.spill, b)
		}
	}
	x.mu.Unlock()
	n := int64(len(blobs))
	if after := l.added.Add(n); after/loadCollectEvery != (after-n)/loadCollectEvery {
		runtime.GC()
	}
}

// finish sorts what was added and makes it the index's; the places of a
// blob after the first become alternates, as Index.add would make them.
func (l *indexLoad) finish() {
	x := l.x
	x.mu.Lock()
	defer x.mu.Unlock()
	var dups []IndexedBlob
	l.sorted.sortAll(func(id ID, e sortedEntry) {
		dups = append(dups, x.expand(id, e.unpack()))
	})
	x.sorted = l.sorted
	for _, b := range append(dups, l.spill...) {
		x.addPlace(b.ID, x.entry(b))
	}
}
