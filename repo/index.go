package repo

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"
)

// IndexedBlob is a blob and the pack that holds it.
type IndexedBlob struct {
	PackedBlob
	Pack ID
}

// An index file is "nightjar index 1\n" and a sealed body (associated data:
// the header line and a zero byte; the name is the BLAKE3-256 of the whole
// file). The body, all integers uint32 LE:
//
//	count of packs, then each pack ID (32 bytes)
//	count of superseded index IDs, then each ID (32 bytes)
//	count of blobs, then each blob sorted by ID, strictly ascending:
//	  ID (32) | pack number (4, into the pack list) | type (1) |
//	  compression (1) | offset (4) | sealed length (4) | raw length (4)
//
// Superseded IDs name index files whose content this one contains, so that
// a later prune can replace index files without a moment in which a blob is
// unindexed. Sorted blobs let prune merge index files as sorted streams.

const indexEntrySize = 32 + 4 + 1 + 1 + 4 + 4 + 4

type indexFile struct {
	Packs      []ID
	Supersedes []ID
	Blobs      []IndexedBlob // sorted by ID
}

func encodeIndexBody(f indexFile) []byte {
	packNum := make(map[ID]uint32, len(f.Packs))
	for i, p := range f.Packs {
		packNum[p] = uint32(i)
	}
	buf := make([]byte, 0, 12+32*(len(f.Packs)+len(f.Supersedes))+indexEntrySize*len(f.Blobs))
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(f.Packs)))
	for _, p := range f.Packs {
		buf = append(buf, p[:]...)
	}
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(f.Supersedes)))
	for _, s := range f.Supersedes {
		buf = append(buf, s[:]...)
	}
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(f.Blobs)))
	for _, b := range f.Blobs {
		buf = append(buf, b.ID[:]...)
		buf = binary.LittleEndian.AppendUint32(buf, packNum[b.Pack])
		buf = append(buf, byte(b.Type), b.Compression)
		buf = binary.LittleEndian.AppendUint32(buf, b.Offset)
		buf = binary.LittleEndian.AppendUint32(buf, b.Length)
		buf = binary.LittleEndian.AppendUint32(buf, b.RawLength)
	}
	return buf
}

func decodeIndexBody(p []byte) (indexFile, error) {
	var f indexFile
	bad := func(what string) (indexFile, error) {
		return indexFile{}, fmt.Errorf("index: %s: %w", what, ErrIntegrity)
	}
	readIDs := func() ([]ID, bool) {
		if len(p) < 4 {
			return nil, false
		}
		n := int(binary.LittleEndian.Uint32(p))
		p = p[4:]
		if n > len(p)/32 {
			return nil, false
		}
		ids := make([]ID, n)
		for i := range ids {
			copy(ids[i][:], p[:32])
			p = p[32:]
		}
		return ids, true
	}
	var ok bool
	if f.Packs, ok = readIDs(); !ok {
		return bad("truncated pack list")
	}
	if f.Supersedes, ok = readIDs(); !ok {
		return bad("truncated superseded list")
	}
	if len(p) < 4 {
		return bad("truncated blob count")
	}
	n := int(binary.LittleEndian.Uint32(p))
	p = p[4:]
	if len(p) != n*indexEntrySize {
		return bad(fmt.Sprintf("%d blobs in %d bytes", n, len(p)))
	}
	f.Blobs = make([]IndexedBlob, n)
	for i := range f.Blobs {
		b := &f.Blobs[i]
		copy(b.ID[:], p[:32])
		pack := binary.LittleEndian.Uint32(p[32:])
		if int(pack) >= len(f.Packs) {
			return bad(fmt.Sprintf("blob %d names pack %d of %d", i, pack, len(f.Packs)))
		}
		b.Pack = f.Packs[pack]
		b.Type = BlobType(p[36])
		b.Compression = p[37]
		b.Offset = binary.LittleEndian.Uint32(p[38:])
		b.Length = binary.LittleEndian.Uint32(p[42:])
		b.RawLength = binary.LittleEndian.Uint32(p[46:])
		if !b.Type.valid() || b.Compression > compressZstd {
			return bad(fmt.Sprintf("blob %d has bad type or compression", i))
		}
		if i > 0 && bytes.Compare(f.Blobs[i-1].ID[:], b.ID[:]) >= 0 {
			return bad("blobs not sorted")
		}
		p = p[indexEntrySize:]
	}
	return f, nil
}

// Index is the in-memory index: where each blob is stored, and the set of
// blobs being written by this process. Safe for concurrent use.
type Index struct {
	mu      sync.RWMutex
	packs   []ID
	packNum map[ID]uint32
	// sorted holds what LoadIndex loaded (indexsorted.go), blobs what
	// was added since; a blob is in one of them at most.
	sorted  *sortedBlobs
	blobs   map[ID]indexEntry
	pending map[ID]struct{}
	// cached is the local index cache LoadIndex opened (indexcache.go),
	// in place of sorted; over holds the blobs of it whose first place
	// changed since, or that have none left (dropped). A blob in over is
	// never also in blobs.
	cached *indexCacheReader
	over   map[ID]cacheOverride
	// alts holds the other places of blobs stored in more than one pack
	// (a backup that stored again what a lost pack held, an adopted pack):
	// a read that fails in the first place tries them. Usually empty.
	alts map[ID][]indexEntry
	// packEnds holds, by pack number, the end of the last blob indexed in
	// the pack: a listed pack shorter than that was cut (damagedPacks).
	packEnds []int64
}

// indexEntry is a blob's place, unpacked (24 bytes).
type indexEntry struct {
	pack      uint32
	offset    uint32
	length    uint32
	rawLength uint32
	typ       BlobType
	comp      uint8
}

func newIndex() *Index {
	return &Index{packNum: map[ID]uint32{}, blobs: map[ID]indexEntry{}, pending: map[ID]struct{}{}}
}

func (x *Index) packNumber(pack ID) uint32 {
	n, ok := x.packNum[pack]
	if !ok {
		n = uint32(len(x.packs))
		x.packs = append(x.packs, pack)
		x.packEnds = append(x.packEnds, 0)
		x.packNum[pack] = n
	}
	return n
}

func (x *Index) entry(b IndexedBlob) indexEntry {
	e := indexEntry{
		pack: x.packNumber(b.Pack), offset: b.Offset, length: b.Length,
		rawLength: b.RawLength, typ: b.Type, comp: b.Compression,
	}
	x.packEnds[e.pack] = max(x.packEnds[e.pack], int64(e.offset)+int64(e.length))
	return e
}

// cacheOverride is a new first place of a blob in the index cache, or
// none (dropped).
type cacheOverride struct {
	e       indexEntry
	dropped bool
}

// find returns id's first place; x.mu is held.
func (x *Index) find(id ID) (indexEntry, bool) {
	if e, ok := x.blobs[id]; ok {
		return e, true
	}
	if x.cached != nil {
		if o, ok := x.over[id]; ok {
			return o.e, !o.dropped
		}
		return x.cached.lookup(id)
	}
	return x.sorted.lookup(id)
}

// set makes e id's first place; x.mu is held.
func (x *Index) set(id ID, e indexEntry) {
	if x.cached != nil {
		if _, ok := x.over[id]; ok {
			x.over[id] = cacheOverride{e: e}
			return
		}
		if _, ok := x.cached.lookup(id); ok {
			x.over[id] = cacheOverride{e: e}
			return
		}
	}
	if b, i, ok := x.sorted.find(id); ok {
		if packed, ok := packSorted(e); ok {
			if x.sorted.ents[b][i].packMeta == droppedEntry {
				x.sorted.live++
			}
			x.sorted.ents[b][i] = packed
			return
		}
		x.removeSorted(b, i)
	}
	x.blobs[id] = e
}

// remove forgets id's first place; x.mu is held.
func (x *Index) remove(id ID) {
	if _, ok := x.blobs[id]; ok {
		delete(x.blobs, id)
		return
	}
	if b, i, ok := x.sorted.find(id); ok {
		x.removeSorted(b, i)
	}
	if x.cached != nil {
		if _, ok := x.find(id); ok {
			x.over[id] = cacheOverride{dropped: true}
		}
	}
}

func (x *Index) removeSorted(b, i int) {
	if x.sorted.ents[b][i].packMeta != droppedEntry {
		x.sorted.ents[b][i].packMeta = droppedEntry
		x.sorted.live--
	}
}

// eachFirst calls fn with every blob's first place; x.mu is held. It
// fails when a block of the index cache fails to open: a caller must not
// act on a part of the index as if it were the whole.
func (x *Index) eachFirst(fn func(id ID, e indexEntry)) error {
	x.sorted.each(fn)
	if err := x.eachCached(fn); err != nil {
		return err
	}
	for id, e := range x.blobs {
		fn(id, e)
	}
	return nil
}

// add records blobs as stored; a blob already known keeps its first place.
func (x *Index) add(blobs []IndexedBlob) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, b := range blobs {
		delete(x.pending, b.ID)
		x.addPlace(b.ID, x.entry(b))
	}
}

// addPlace records e as a place of id: the first, or another; x.mu is held.
func (x *Index) addPlace(id ID, e indexEntry) {
	first, ok := x.find(id)
	if !ok {
		x.set(id, e)
		return
	}
	if first.pack == e.pack || slices.ContainsFunc(x.alts[id], func(a indexEntry) bool { return a.pack == e.pack }) {
		return
	}
	if x.alts == nil {
		x.alts = map[ID][]indexEntry{}
	}
	x.alts[id] = append(x.alts[id], e)
}

// alternates returns the other places of blob id than Lookup's.
func (x *Index) alternates(id ID) []IndexedBlob {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []IndexedBlob
	for _, e := range x.alts[id] {
		out = append(out, x.expand(id, e))
	}
	return out
}

// dropPlace removes blob id's places in packs gone, promoting a place in
// another pack where there is one; x.mu is held. It reports whether the
// blob has no place left.
func (x *Index) dropPlace(id ID, gone map[ID]bool) bool {
	e, ok := x.find(id)
	if !ok {
		return false
	}
	alts := x.alts[id]
	kept := alts[:0]
	for _, a := range alts {
		if !gone[x.packs[a.pack]] {
			kept = append(kept, a)
		}
	}
	if gone[x.packs[e.pack]] {
		if len(kept) == 0 {
			x.remove(id)
			delete(x.alts, id)
			return true
		}
		x.set(id, kept[0])
		kept = kept[1:]
	}
	if len(kept) == 0 {
		delete(x.alts, id)
	} else {
		x.alts[id] = kept
	}
	return false
}

// dropPacks removes every place in packs gone, and the packs, and returns
// how many blobs are left with no place: a later write stores them again.
// When the index cannot be walked whole it changes nothing and fails: a
// blob left placed in a lost pack would never be stored again.
func (x *Index) dropPacks(gone map[ID]bool) (int, error) {
	if len(gone) == 0 {
		return 0, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var affected []ID
	err := x.eachFirst(func(id ID, e indexEntry) {
		if gone[x.packs[e.pack]] || len(x.alts[id]) > 0 {
			affected = append(affected, id)
		}
	})
	if err != nil {
		return 0, err
	}
	dropped := 0
	for _, id := range affected {
		if x.dropPlace(id, gone) {
			dropped++
		}
	}
	for p := range gone {
		delete(x.packNum, p)
	}
	return dropped, nil
}

// damagedPacks returns the indexed packs that are not in sizes (a listing
// of the pack files) or shorter than the blobs the index places in them.
func (x *Index) damagedPacks(sizes map[ID]int64) map[ID]bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	gone := map[ID]bool{}
	for p, n := range x.packNum {
		if size, ok := sizes[p]; !ok || !placeWhole(x.packEnds[n], size) {
			gone[p] = true
		}
	}
	return gone
}

// forget removes blobs that lie in packs, and the packs themselves, so
// that a failed write session leaves no blob indexed that no index file
// lists. A blob indexed in another pack keeps that place.
func (x *Index) forget(blobs []IndexedBlob, packs map[ID]bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, b := range blobs {
		x.dropPlace(b.ID, packs)
	}
	for p := range packs {
		delete(x.packNum, p)
	}
}

// Lookup returns where blob id is stored.
func (x *Index) Lookup(id ID) (IndexedBlob, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	e, ok := x.find(id)
	if !ok {
		return IndexedBlob{}, false
	}
	return x.expand(id, e), true
}

func (x *Index) expand(id ID, e indexEntry) IndexedBlob {
	return IndexedBlob{
		PackedBlob: PackedBlob{ID: id, Type: e.typ, Compression: e.comp, Offset: e.offset, Length: e.length, RawLength: e.rawLength},
		Pack:       x.packs[e.pack],
	}
}

// Has reports whether blob id is stored.
func (x *Index) Has(id ID) bool {
	x.mu.RLock()
	_, ok := x.find(id)
	x.mu.RUnlock()
	return ok
}

// reserve marks id as being written and reports true, unless it is already
// stored or being written.
func (x *Index) reserve(id ID) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.find(id); ok {
		return false
	}
	if _, ok := x.pending[id]; ok {
		return false
	}
	x.pending[id] = struct{}{}
	return true
}

func (x *Index) unreserve(id ID) {
	x.mu.Lock()
	delete(x.pending, id)
	x.mu.Unlock()
}

// HasPack reports whether any indexed blob lies in pack.
func (x *Index) HasPack(pack ID) bool {
	x.mu.RLock()
	_, ok := x.packNum[pack]
	x.mu.RUnlock()
	return ok
}

// Len returns the number of indexed blobs.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.lenLocked()
}

// lenLocked is Len with x.mu held.
func (x *Index) lenLocked() int {
	n := len(x.blobs)
	if x.sorted != nil {
		n += x.sorted.live
	}
	if x.cached != nil {
		n += int(x.cached.c.entries)
		for _, o := range x.over {
			if o.dropped {
				n--
			}
		}
	}
	return n
}

// Each calls fn for every indexed blob, in no set order; it fails when the
// index cannot be walked whole.
func (x *Index) Each(fn func(IndexedBlob)) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.eachFirst(func(id ID, e indexEntry) { fn(x.expand(id, e)) })
}

// EachPlace calls fn for every place of every indexed blob (a blob in
// several packs once per pack), in no set order; it fails when the index
// cannot be walked whole.
func (x *Index) EachPlace(fn func(IndexedBlob)) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if err := x.eachFirst(func(id ID, e indexEntry) { fn(x.expand(id, e)) }); err != nil {
		return err
	}
	for id, alts := range x.alts {
		for _, e := range alts {
			fn(x.expand(id, e))
		}
	}
	return nil
}

// sortedIndexFile builds the body of an index file for blobs.
func sortedIndexFile(blobs []IndexedBlob) indexFile {
	sort.Slice(blobs, func(i, j int) bool { return bytes.Compare(blobs[i].ID[:], blobs[j].ID[:]) < 0 })
	var f indexFile
	seen := map[ID]bool{}
	out := blobs[:0]
	for i, b := range blobs {
		if i > 0 && b.ID == blobs[i-1].ID {
			continue
		}
		out = append(out, b)
		if !seen[b.Pack] {
			seen[b.Pack] = true
			f.Packs = append(f.Packs, b.Pack)
		}
	}
	f.Blobs = out
	return f
}

// reset empties the index, for a prune that removed packs it may list.
func (x *Index) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.packs, x.packNum, x.blobs, x.alts, x.packEnds = nil, map[ID]uint32{}, map[ID]indexEntry{}, nil, nil
	x.sorted = nil
	x.cached.close()
	x.cached, x.over = nil, nil
}

// placesIn returns every place the index knows in pack, alternates
// included: what a pack whose header cannot be read held.
func (x *Index) placesIn(pack ID) ([]IndexedBlob, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n, ok := x.packNum[pack]
	if !ok {
		return nil, nil
	}
	var out []IndexedBlob
	err := x.eachFirst(func(id ID, e indexEntry) {
		if e.pack == n {
			out = append(out, x.expand(id, e))
		}
	})
	if err != nil {
		return nil, err
	}
	for id, alts := range x.alts {
		for _, e := range alts {
			if e.pack == n {
				out = append(out, x.expand(id, e))
			}
		}
	}
	return out, nil
}
