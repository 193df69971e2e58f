package repo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// CheckOptions choose how much of the data check reads: at most one of
// ReadDataFraction and ReadDataSubset.
type CheckOptions struct {
	// ReadDataFraction is the share of packs read and verified in full, in
	// (0, 1]; 0 reads none (the structural check only).
	ReadDataFraction float64
	// ReadDataSubset reads slice N of M of the packs (restic's
	// --read-data-subset n/m); the zero value reads none.
	ReadDataSubset Subset
	// Progress, when set, keeps the check's running figures for whoever
	// shows them while it runs.
	Progress *CheckProgress
}

// Subset is slice N (1 to M) of the packs split into M slices by pack ID.
// A pack is always in the same slice, whatever other packs there are, so
// slices 1/M to M/M, read one after the other (1/30 each day), read every
// pack that existed all along.
type Subset struct {
	N, M int
}

// ErrBadSubset: a subset is not n/m with 1 <= n <= m.
var ErrBadSubset = errors.New("subset must be n/m with whole numbers 1 <= n <= m, such as 1/30")

// ParseSubset reads "n/m".
func ParseSubset(s string) (Subset, error) {
	num, den, ok := strings.Cut(s, "/")
	n, err1 := strconv.Atoi(num)
	m, err2 := strconv.Atoi(den)
	sub := Subset{N: n, M: m}
	if !ok || err1 != nil || err2 != nil || !sub.Valid() {
		return Subset{}, fmt.Errorf("subset %q: %w", s, ErrBadSubset)
	}
	return sub, nil
}

// Valid reports whether s is a slice: 1 <= N <= M.
func (s Subset) Valid() bool { return s.M >= 1 && s.N >= 1 && s.N <= s.M }

// String gives s as "n/m".
func (s Subset) String() string { return strconv.Itoa(s.N) + "/" + strconv.Itoa(s.M) }

// Contains reports whether pack id is in slice s: the pack ID's first 8
// bytes, as a big-endian number, modulo M is N-1. Pack IDs are hashes, so
// the slices are even.
func (s Subset) Contains(id ID) bool {
	return binary.BigEndian.Uint64(id[:8])%uint64(s.M) == uint64(s.N-1)
}

// Problem is one broken object and what it breaks.
type Problem struct {
	Object   string     `json:"object"` // e.g. "pack 1a2b3c4d", "data blob 5e6f7a8b", "snapshot 0a1b..."
	Error    string     `json:"error"`
	Affected []Affected `json:"affected,omitempty"` // the first MaxAffected
	Total    int        `json:"affected_total,omitempty"`
}

// Affected names a path of a snapshot that a problem breaks.
type Affected struct {
	Snapshot string `json:"snapshot"`
	Path     string `json:"path"`
}

// MaxAffected bounds the affected paths listed per problem; all are counted.
const MaxAffected = 20

// CheckReport is what check found.
type CheckReport struct {
	IndexFiles     int       `json:"index_files"`
	Packs          int       `json:"packs"`
	Blobs          int       `json:"blobs"`
	Snapshots      int       `json:"snapshots"`
	Trees          int       `json:"trees"`
	PacksRead      int       `json:"packs_read"`
	BytesRead      int64     `json:"bytes_read"`
	UnindexedPacks int       `json:"unindexed_packs"` // left by interrupted backups: adopted by the next backup or removed by prune
	DanglingPins   []string  `json:"dangling_pins"`   // pins of snapshots that no longer exist: a warning, not damage
	Forgetting     []string  `json:"forgetting"`      // snapshots an interrupted forget marked: the next forget removes them (a warning)
	Problems       []Problem `json:"problems"`

	// DanglingVerifications are verification records of snapshots that no
	// longer exist: a warning, not damage.
	DanglingVerifications []string `json:"dangling_verifications"`
	// VerifyFailed are the snapshots whose latest verification failed.
	VerifyFailed []string `json:"verify_failed"`
}

// OK reports whether the repository is sound.
func (c *CheckReport) OK() bool { return len(c.Problems) == 0 }

type checker struct {
	r        *Repository
	progress *CheckProgress // nil: none kept
	report   CheckReport
	mu       sync.Mutex
	broken   map[ID]string // blob ID -> why it cannot be read
	// badPlaces holds, by blob and place, why a place of a blob is not
	// whole; a blob is broken only once all its places are (settle).
	badPlaces map[ID]map[placeKey]badPlace
	// extraPlaces holds the places of a blob that the index files list
	// but the index does not keep: it keeps one place of a blob in each
	// pack, whichever file loaded first, so a second place in the same
	// pack is judged from here (findExtraPlaces).
	extraPlaces map[ID][]IndexedBlob
	problems    map[string]*Problem
	// The walks' memo, by tree: a tree found whole below is only in
	// wholeTrees, an ID without a value, which is most trees; only a tree
	// with broken references below keeps them, in treeRefs.
	wholeTrees map[ID]struct{}
	treeRefs   map[ID][]brokenRef
	blobRefs   int // the references to data blobs the walks checked

	treesBudget int // the bytes of tree IDs each of checkTrees' sorters holds
	// streamFrom is the size of index, in blobs as the index files'
	// sizes tell, from which a structural check streams the index instead
	// of holding it (check_streamindex.go).
	streamFrom   int
	streamBudget int          // the bytes of records each sorter of the streamed index holds
	stream       *checkStream // the streamed index; nil: held in memory

	indexFiles map[string]bool // the index files read
	reread     sync.Mutex      // held while the index is read again
	rereadDone bool            // the index was read again (rereadIndex)
}

func newChecker(r *Repository) *checker {
	return &checker{r: r, broken: map[ID]string{}, badPlaces: map[ID]map[placeKey]badPlace{}, extraPlaces: map[ID][]IndexedBlob{}, problems: map[string]*Problem{}, wholeTrees: map[ID]struct{}{}, treeRefs: map[ID][]brokenRef{}, treesBudget: checkTreesBudget, streamFrom: checkStreamFrom, streamBudget: checkStreamBudget, indexFiles: map[string]bool{}}
}

type brokenRef struct {
	path   string // relative to the tree
	object string
}

// Check verifies the repository: every index file, every index entry
// against the packs that exist, every snapshot's trees and the presence of
// every blob they refer to; and with opts.ReadDataFraction, the full
// content of that share of packs. It needs no index loaded beforehand and
// leaves the Repository's index filled (with the trees alone where the
// index was streamed: a structural check of a large one).
func (r *Repository) Check(ctx context.Context, opts CheckOptions) (*CheckReport, error) {
	if opts.ReadDataSubset != (Subset{}) && (!opts.ReadDataSubset.Valid() || opts.ReadDataFraction > 0) {
		return nil, fmt.Errorf("check: read data by subset %s: %w", opts.ReadDataSubset, ErrBadSubset)
	}
	return newChecker(r).check(ctx, opts)
}

// check is Check, by c.
func (c *checker) check(ctx context.Context, opts CheckOptions) (_ *CheckReport, err error) {
	c.progress = opts.Progress
	defer func() {
		if cerr := c.stream.close(); err == nil && cerr != nil {
			err = fmt.Errorf("check: %w", cerr)
		}
	}()
	c.progress.enter(CheckPhaseIndex)

	// A consistent view beside a running backup, which writes its packs,
	// then their index file, then its snapshot: the snapshots first, then
	// the index, then the packs. Every snapshot read then has its index
	// entries read, and every pack they name listed; what the backup adds
	// after a step is at most a pack no index read lists yet (counted as
	// unindexed) or an index file no snapshot read needs.
	snaps, err := c.loadSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	readData := opts.ReadDataFraction > 0 || opts.ReadDataSubset.Valid()
	if err := c.readIndex(ctx, !readData); err != nil {
		return nil, err
	}
	packSizes, err := c.listPacks(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.checkEntries(packSizes); err != nil {
		return nil, err
	}
	if selected := selectPacks(packSizes, c.r.idx, opts); len(selected) > 0 {
		c.progress.selected(packSizes, selected)
		c.progress.enter(CheckPhaseReadData)
		if err := c.readPacks(ctx, packSizes, selected); err != nil {
			return nil, err
		}
	}
	c.progress.enter(CheckPhaseSnapshots)
	damaged, err := c.checkTrees(ctx, snaps, packSizes)
	if err != nil {
		return nil, err
	}
	if damaged {
		// Only now are the paths that the damage breaks needed: the
		// snapshots are walked again, depth first, with a memo of the
		// trees in memory, which a sound repository never pays for.
		trees := c.report.Trees
		if err := c.checkSnapshots(ctx, snaps); err != nil {
			return nil, err
		}
		c.report.Trees = trees
	}
	if err := c.checkPins(ctx); err != nil {
		return nil, fmt.Errorf("check pins: %w", err)
	}
	if err := c.checkVerifications(ctx); err != nil {
		return nil, fmt.Errorf("check verifications: %w", err)
	}
	forgetting, err := c.r.ForgettingIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("check forget marks: %w", err)
	}
	c.report.Forgetting = forgetting
	for _, p := range c.problems {
		c.report.Problems = append(c.report.Problems, *p)
	}
	sort.Slice(c.report.Problems, func(i, j int) bool { return c.report.Problems[i].Object < c.report.Problems[j].Object })
	return &c.report, nil
}

// listPacks returns the size of every pack, by ID.
func (c *checker) listPacks(ctx context.Context) (map[ID]int64, error) {
	packSizes := map[ID]int64{}
	if err := c.r.be.List(ctx, PackFile, func(name string, size int64) error {
		id, err := ParseID(name)
		if err != nil {
			c.problem("pack "+name, "file name is not a pack ID")
			return nil
		}
		packSizes[id] = size
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list packs: %w", err)
	}
	c.report.Packs = len(packSizes)
	return packSizes, nil
}

func (c *checker) problem(object, msg string) *Problem {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.problems[object]
	if !ok {
		p = &Problem{Object: object, Error: msg}
		c.problems[object] = p
	}
	return p
}

func (c *checker) markBroken(id ID, typ BlobType, why string) {
	c.mu.Lock()
	if _, ok := c.broken[id]; !ok {
		c.broken[id] = typ.String() + " blob " + id.String()
	}
	c.mu.Unlock()
	c.problem(typ.String()+" blob "+id.String(), why)
}

// readIndex reads every index file into the index, reporting damaged
// ones; with mayStream, an index of at least c.streamFrom blobs is
// streamed instead (readIndexStreamed).
func (c *checker) readIndex(ctx context.Context, mayStream bool) error {
	names, expected, err := c.r.listIndexFiles(ctx)
	if err != nil {
		return fmt.Errorf("list index: %w", err)
	}
	c.report.IndexFiles = len(names)
	if mayStream && expected >= c.streamFrom {
		return c.readIndexStreamed(ctx, names)
	}
	held, err := c.placesHeld()
	if err != nil {
		return err
	}
	var read atomic.Int64 // the places the files list
	// Into an empty index the files go as LoadIndex loads them, into the
	// compact sorted form.
	add := func(blobs []IndexedBlob) error { read.Add(int64(len(blobs))); c.r.idx.add(blobs); return nil }
	load := c.r.idx.startLoad(expected)
	if load != nil {
		add = func(blobs []IndexedBlob) error { read.Add(int64(len(blobs))); load.addFile(blobs); return nil }
	}
	_, err = c.readIndexFiles(ctx, names, false, add)
	if load != nil {
		load.finish()
	}
	if err != nil {
		return err
	}
	after, err := c.placesHeld()
	if err != nil {
		return err
	}
	if int64(after-held) < read.Load() {
		// Places were merged: the same place listed twice (a healed or
		// repaired index), or a second place of a blob in a pack the
		// index keeps one of, which must be judged too.
		if err := c.findExtraPlaces(ctx, names); err != nil {
			return err
		}
	}
	c.report.Blobs = c.r.idx.Len()
	return nil
}

// placesHeld is the number of places the index holds.
func (c *checker) placesHeld() (int, error) {
	n := 0
	err := c.r.idx.EachPlace(func(IndexedBlob) { n++ })
	return n, err
}

// findExtraPlaces reads the index files names again and notes each place
// they list that the index does not keep (noteExtraPlace; where the index
// is streamed, of the trees alone: the join sees every data place), so that which
// place of a blob in a pack is judged does not depend on the order the
// files loaded in. Files that cannot be read were reported already.
func (c *checker) findExtraPlaces(ctx context.Context, names []string) error {
	for _, name := range names {
		blobs, _, err := c.r.ReadIndexFile(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		for _, b := range blobs {
			if c.stream == nil || b.Type == TreeBlob {
				c.noteExtraPlace(b)
			}
		}
	}
	return nil
}

// noteExtraPlace keeps place b in extraPlaces when the index does not
// hold it.
func (c *checker) noteExtraPlace(b IndexedBlob) {
	same := func(p IndexedBlob) bool { return p.Pack == b.Pack && p.PackedBlob == b.PackedBlob }
	if first, ok := c.r.idx.Lookup(b.ID); ok && same(first) || slices.ContainsFunc(c.r.idx.alternates(b.ID), same) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.ContainsFunc(c.extraPlaces[b.ID], same) {
		c.extraPlaces[b.ID] = append(c.extraPlaces[b.ID], b)
	}
}

// readIndexFiles reads the index files names into the index, reporting
// damaged ones, and with keep returns the blobs they list (a copy of the
// index as big as the index itself: only for the few files a reread
// finds).
func (c *checker) readIndexFiles(ctx context.Context, names []string, keep bool, add func([]IndexedBlob) error) ([]IndexedBlob, error) {
	var read []IndexedBlob
	g, gctx := errgroup.WithContext(ctx)
	// Each file read is decoded whole beside the index (65,536 blobs of a
	// backup's file, 5 MB): at most one a core, as LoadIndex reads them.
	g.SetLimit(min(4, runtime.GOMAXPROCS(0)))
	for _, name := range names {
		c.mu.Lock()
		c.indexFiles[name] = true
		c.mu.Unlock()
		g.Go(func() error {
			blobs, _, err := c.r.ReadIndexFile(gctx, name)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				c.problem("index "+name, err.Error())
				return nil
			}
			if err := add(blobs); err != nil {
				return err
			}
			if keep {
				c.mu.Lock()
				read = append(read, blobs...)
				c.mu.Unlock()
			}
			return nil
		})
	}
	return read, g.Wait()
}

// freshIndexFiles lists the index files and returns those the check has
// not read yet.
func (c *checker) freshIndexFiles(ctx context.Context) ([]string, error) {
	names, err := c.r.ListIndexFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("list index: %w", err)
	}
	var fresh []string
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range names {
		if !c.indexFiles[name] {
			fresh = append(fresh, name)
		}
	}
	return fresh, nil
}

// rereadIndex reads, once per check, the index files that appeared since
// the index was read, with their packs: the last chance for a blob that a
// snapshot needs before it is reported missing. Snapshots are read before
// the index, so a backup running beside check cannot cause that; storage
// that lists new files late could.
func (c *checker) rereadIndex(ctx context.Context) error {
	c.reread.Lock()
	defer c.reread.Unlock()
	if c.rereadDone {
		return nil
	}
	c.rereadDone = true
	if c.stream != nil {
		return c.rereadStreamed(ctx)
	}
	fresh, err := c.freshIndexFiles(ctx)
	if err != nil {
		return err
	}
	if len(fresh) == 0 {
		return nil
	}
	blobs, err := c.readIndexFiles(ctx, fresh, true, func(blobs []IndexedBlob) error { c.r.idx.add(blobs); return nil })
	if err != nil {
		return err
	}
	packSizes := map[ID]int64{}
	if err := c.r.be.List(ctx, PackFile, func(name string, size int64) error {
		if id, err := ParseID(name); err == nil {
			packSizes[id] = size
		}
		return nil
	}); err != nil {
		return fmt.Errorf("list packs: %w", err)
	}
	c.mu.Lock()
	c.report.IndexFiles += len(fresh)
	c.report.Blobs = c.blobCount()
	c.mu.Unlock()
	for _, b := range blobs {
		c.noteExtraPlace(b)
		c.checkEntry(b, packSizes)
	}
	c.settle()
	return nil
}

// checkEntries checks every place of every indexed blob against the packs
// that exist, marks the blobs none of whose places is whole as broken,
// and counts the packs no index names.
func (c *checker) checkEntries(packSizes map[ID]int64) error {
	if err := c.r.idx.EachPlace(func(b IndexedBlob) { c.checkEntry(b, packSizes) }); err != nil {
		return err
	}
	for _, places := range c.extraPlaces {
		for _, b := range places {
			c.checkEntry(b, packSizes)
		}
	}
	for id := range packSizes {
		if !c.indexesPack(id) {
			c.report.UnindexedPacks++
		}
	}
	c.settle()
	return nil
}

// checkEntry notes a place of a blob whose pack is missing or too short.
func (c *checker) checkEntry(b IndexedBlob, packSizes map[ID]int64) {
	if bp, bad := placeState(b, packSizes); bad {
		c.placeBad(b, bp.why, bp.packWhy)
	}
}

// placeState says why blob b's place is not whole, if it is not: its
// pack is missing or too short.
func placeState(b IndexedBlob, packSizes map[ID]int64) (badPlace, bool) {
	size, ok := packSizes[b.Pack]
	switch {
	case !ok:
		return badPlace{typ: b.Type, why: "pack " + b.Pack.String() + " that holds it is missing", packWhy: "index lists this missing pack: run nightjar repair index"}, true
	case !placeWhole(int64(b.Offset)+int64(b.Length), size):
		return badPlace{typ: b.Type, why: fmt.Sprintf("index places it beyond the end of pack %s", b.Pack.Short()), packWhy: "pack is cut short: run nightjar repair packs"}, true
	}
	return badPlace{}, false
}

// badPlace is why one place of a blob is not whole: as a problem of the
// blob (when no place is), and as one of the pack (when another is).
type badPlace struct {
	typ     BlobType
	why     string
	packWhy string
}

// placeBad notes that blob b's place in its pack is not whole.
func (c *checker) placeBad(b IndexedBlob, why, packWhy string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	places := c.badPlaces[b.ID]
	if places == nil {
		places = map[placeKey]badPlace{}
		c.badPlaces[b.ID] = places
	}
	if _, ok := places[keyOf(b)]; !ok {
		places[keyOf(b)] = badPlace{typ: b.Type, why: why, packWhy: packWhy}
	}
}

// placeKey is one place of a blob: a pack may list a blob twice.
type placeKey struct {
	pack           ID
	offset, length uint32
}

func keyOf(b IndexedBlob) placeKey {
	return placeKey{pack: b.Pack, offset: b.Offset, length: b.Length}
}

// less orders places by pack, then offset and length, as the streamed
// index sorts them.
func (k placeKey) less(o placeKey) bool {
	if k.pack != o.pack {
		return string(k.pack[:]) < string(o.pack[:])
	}
	if k.offset != o.offset {
		return k.offset < o.offset
	}
	return k.length < o.length
}

// settle marks as broken each blob none of whose places is whole; a bad
// place beside a whole one breaks no snapshot and is a problem of its
// pack (a stale index entry, or a damaged spare copy).
func (c *checker) settle() {
	c.mu.Lock()
	var ids []ID
	for id := range c.badPlaces {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.mu.Lock()
		places := c.badPlaces[id]
		bad := make(map[placeKey]badPlace, len(places))
		for k, bp := range places {
			bad[k] = bp
		}
		all := slices.Clone(c.extraPlaces[id])
		c.mu.Unlock()
		if b, ok := c.r.idx.Lookup(id); ok {
			all = append(all, b)
		}
		all = append(all, c.r.idx.alternates(id)...)
		whole := false
		for _, b := range all {
			if _, ok := bad[keyOf(b)]; !ok {
				whole = true
			}
		}
		// In place order, so that the report does not depend on the
		// order the index loaded in.
		keys := make([]placeKey, 0, len(bad))
		for k := range bad {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
		if !whole {
			// Name the first bad place.
			first := bad[keys[0]]
			why := first.why
			if packs := distinctPacks(keys); packs > 1 {
				why += fmt.Sprintf(" (and %d other copies are not whole either)", packs-1)
			}
			c.markBroken(id, first.typ, why)
			continue
		}
		for _, k := range keys {
			c.problem("pack "+k.pack.String(), bad[k].packWhy)
		}
	}
}

// distinctPacks is the number of packs of keys, sorted by pack.
func distinctPacks(keys []placeKey) int {
	n := 0
	for i, k := range keys {
		if i == 0 || k.pack != keys[i-1].pack {
			n++
		}
	}
	return n
}

// selectPacks returns the indexed packs opts say to read whole: a random
// share, or a subset.
func selectPacks(packSizes map[ID]int64, idx *Index, opts CheckOptions) map[ID]bool {
	read := func(id ID) bool {
		if opts.ReadDataSubset.Valid() {
			return opts.ReadDataSubset.Contains(id)
		}
		f := opts.ReadDataFraction
		return f >= 1 || f > 0 && rand.Float64() < f
	}
	selected := map[ID]bool{}
	for id := range packSizes {
		if idx.HasPack(id) && read(id) {
			selected[id] = true
		}
	}
	return selected
}

// readPacks reads the selected packs whole and verifies every blob.
//
// Each reading slot streams its pack through a few buffers it reuses:
// with one ranged read (streamIndexedPack) when the backend is a
// RangeOpener, which needs the index places of the pack up front,
// gathered for a batch of packs at a time (gatherPlaces); else, and for
// packs of trees (holdsTrees), a window at a time (streamPack). A pack's
// blobs are matched with the index by looking each one up; the number of
// index places in each pack, counted up front, tells whether the index
// places a blob in a pack that does not hold it as indexed. Only for such
// a pack, and for one that cannot be read at all, are the index places
// marked (damagedPlaces), in one pass for all of them.
func (c *checker) readPacks(ctx context.Context, packSizes map[ID]int64, selected map[ID]bool) error {
	ids := make([]ID, 0, len(selected))
	for id := range selected {
		ids = append(ids, id)
	}
	// Read in name order: sequential on disk for most file systems.
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	places := make(map[ID]int, len(selected))
	err := c.r.idx.EachPlace(func(b IndexedBlob) {
		if selected[b.Pack] {
			places[b.Pack]++
		}
	})
	if err != nil {
		return err
	}

	var mu sync.Mutex
	unread := map[ID]error{}            // packs that could not be read, or whose header could not
	mismatched := map[ID][]PackedBlob{} // packs that do not hold every index place in them as indexed: their headers
	g, gctx := errgroup.WithContext(ctx)
	// One pack more in flight than there are cores, so that a read from
	// the backend overlaps the checking of the others.
	limit := runtime.GOMAXPROCS(0) + 1
	g.SetLimit(limit)
	// The reading slots' buffers go round instead of being allocated per
	// pack.
	scratch := make(chan *packScratch, limit)
	for range limit {
		scratch <- &packScratch{}
	}
	ro, ranged := Capability[RangeOpener](c.r.be)
	var placesIn map[ID][]PackedBlob // of the packs of the batch being started
	batchEnd, batch := 0, 0
	if ranged {
		total := 0
		for _, n := range places {
			total += n
		}
		batch = max(checkPlacesBatch, (total+checkPlacesPasses-1)/checkPlacesPasses)
	}
	for i, id := range ids {
		if ranged && i == batchEnd {
			if gctx.Err() != nil {
				break
			}
			placesIn = c.gatherPlaces(ids[i:], places, batch)
			batchEnd = i + len(placesIn)
		}
		packPlaces := placesIn[id]
		g.Go(func() error {
			defer c.progress.read(packSizes[id]) // a broken pack is done too
			s := <-scratch
			defer func() { scratch <- s }()
			matched, handed := 0, 0
			handle := func(b PackedBlob, err error) {
				handed++
				if err != nil {
					c.placeBad(IndexedBlob{PackedBlob: b, Pack: id}, err.Error(), "holds a damaged copy of a blob another pack holds whole: run nightjar repair packs")
				}
				if c.indexedAs(b, id) {
					matched++
				}
			}
			var blobs []PackedBlob
			var err error
			switch {
			case ranged && holdsTrees(packPlaces):
				blobs, err = c.r.streamPack(gctx, id, packSizes[id], checkReadWindow, s, handle)
			case ranged:
				blobs, err = c.r.streamIndexedPack(gctx, ro, id, packSizes[id], packPlaces, s, handle)
			default:
				blobs, err = c.r.streamPack(gctx, id, packSizes[id], checkTailRead, s, handle)
			}
			if err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil && isPackRead(err) {
				mu.Lock()
				unread[id] = err
				mu.Unlock()
				return nil
			}
			c.mu.Lock()
			c.report.PacksRead++
			c.report.BytesRead += packSizes[id]
			c.mu.Unlock()
			if err != nil && handed == 0 {
				mu.Lock()
				unread[id] = err // the header cannot be read
				mu.Unlock()
				return nil
			}
			if err != nil {
				// The blobs were checked one by one: only the broken ones
				// are marked.
				c.problem("pack "+id.String(), err.Error())
			}
			if matched != places[id] {
				mu.Lock()
				mismatched[id] = blobs
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if len(unread) > 0 || len(mismatched) > 0 {
		if err := c.damagedPlaces(unread, mismatched); err != nil {
			return err
		}
	}
	c.settle()
	return nil
}

// indexedAs reports whether the index places blob b in pack exactly as
// the pack's header does.
func (c *checker) indexedAs(b PackedBlob, pack ID) bool {
	first, ok := c.r.idx.Lookup(b.ID)
	if !ok {
		return false
	}
	if first.Pack == pack {
		return first.PackedBlob == b
	}
	for _, alt := range c.r.idx.alternates(b.ID) {
		if alt.Pack == pack {
			return alt.PackedBlob == b
		}
	}
	return false
}

// damagedPlaces, in one pass over the index, marks as bad the places in
// the packs that could not be read (unread, with why) and the places
// that the headers of the packs in mismatched do not hold as indexed.
func (c *checker) damagedPlaces(unread map[ID]error, mismatched map[ID][]PackedBlob) error {
	inPack := make(map[ID]map[ID]PackedBlob, len(mismatched))
	for id, blobs := range mismatched {
		m := make(map[ID]PackedBlob, len(blobs))
		for _, b := range blobs {
			m[b.ID] = b
		}
		inPack[id] = m
	}
	for id, err := range unread {
		c.problem("pack "+id.String(), err.Error())
	}
	return c.r.idx.EachPlace(func(b IndexedBlob) {
		if _, ok := unread[b.Pack]; ok {
			c.placeBad(b, "pack "+b.Pack.String()+" cannot be read", "")
			return
		}
		if m, ok := inPack[b.Pack]; ok {
			if got, ok := m[b.ID]; !ok || got != b.PackedBlob {
				c.placeBad(b, "index entry does not match pack "+b.Pack.Short(), "index entry does not match the pack: run nightjar repair index")
			}
		}
	})
}

// loadSnapshots reads every snapshot record; one that cannot be read is
// a problem.
func (c *checker) loadSnapshots(ctx context.Context) ([]*Snapshot, error) {
	ids, err := c.r.ListSnapshotIDs(ctx)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	c.report.Snapshots = len(ids)
	var snaps []*Snapshot
	for _, id := range ids {
		s, err := c.r.LoadSnapshot(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			c.problem("snapshot "+id, err.Error())
			continue
		}
		snaps = append(snaps, s)
	}
	return snaps, nil
}

// checkTreesBudget is the bytes of tree IDs each of checkTrees' sorters
// holds before it spills a run to disk; at most four hold IDs at once
// (the level being walked and the trees walked above it, read; the next
// level and the union of both, filled): 4 MiB, whatever the repository.
const checkTreesBudget = 1 << 20

// checkTrees checks every distinct tree of snaps once, level by level as
// BlobUsage walks them (repo/used.go), so that the trees already checked
// are kept sorted on disk instead of in a memo that grows with the
// repository: each tree loads and decodes, its entries are in order with
// safe names, each folder has a subtree and every blob it names is
// indexed and whole. Each problem is recorded as the depth-first walk
// records it; whether any tree breaks a snapshot is returned, so that the
// snapshots are walked again (checkSnapshots) to name the paths only
// then.
//
// Where the index is streamed, the data blobs the trees name are sorted
// instead and joined with the index entries (joinStreamed), which also
// checks the data blobs' places against packSizes.
func (c *checker) checkTrees(ctx context.Context, snaps []*Snapshot, packSizes map[ID]int64) (damaged bool, err error) {
	var broken atomic.Bool
	var trees atomic.Int64
	visit := func(ctx context.Context, id ID) (treeUse, error) {
		var tu treeUse
		if c.stream != nil {
			if data, err := c.streamedSubtree(ctx, id); err != nil || data {
				return tu, err
			}
		}
		_, bad, err := c.blobState(ctx, id)
		if bad {
			broken.Store(true)
		}
		if err != nil || bad {
			return tu, err
		}
		trees.Add(1)
		obj := "tree blob " + id.String()
		var prev *string // the name of the tree's last entry so far
		err = c.r.Walk(ctx, id, WalkOptions{}, WalkVisitor{
			Node: func(e *WalkEntry) error {
				n := e.Node
				outOfOrder := prev != nil && *prev >= n.Name
				prev = &n.Name
				if e.Unsafe || outOfOrder {
					c.problem(obj, fmt.Sprintf("entry %q has an unsafe name or is out of order", n.Name))
					broken.Store(true)
					return SkipTree
				}
				switch n.Type {
				case NodeDir:
					if n.Subtree == nil {
						c.problem(obj, fmt.Sprintf("directory %q has no subtree", n.Name))
						broken.Store(true)
					} else {
						tu.subtrees = append(tu.subtrees, *n.Subtree)
					}
				case NodeFile:
					if c.stream != nil {
						tu.blobs = append(tu.blobs, n.Content...)
						break
					}
					for _, blob := range n.Content {
						_, bad, err := c.blobState(ctx, blob)
						if err != nil {
							return err
						}
						if bad {
							broken.Store(true)
						}
					}
				}
				return SkipTree
			},
			TreeError: func(_ *WalkEntry, id ID, err error) error {
				c.markBroken(id, TreeBlob, err.Error())
				broken.Store(true)
				return nil
			},
		})
		return tu, err
	}
	u := &usage{opts: UsageOptions{MemoryBudget: c.treesBudget}}
	defer func() {
		if cerr := u.close(); err == nil && cerr != nil {
			err = fmt.Errorf("check trees: %w", cerr)
		}
	}()
	// One tree at a time, as the depth-first walk loads them: a level of
	// wide folders decoded side by side took 20 to 40 MiB more at 1
	// million files in folders of ten.
	refs := u.sorter()
	if c.stream != nil {
		refs = c.stream.refSorter(u, c.streamBudget)
	}
	if _, err := c.r.walkLevels(ctx, snaps, u, refs, 1, visit); err != nil {
		return false, err
	}
	if c.stream != nil {
		bad, err := c.joinStreamed(ctx, refs, packSizes)
		if err != nil {
			return false, err
		}
		if bad {
			broken.Store(true)
		}
		// The data blobs named as subtrees, which the join found: each
		// is checked as a tree, as the held index would check it.
		for _, id := range c.stream.subtreeIDs() {
			places, whole := c.stream.subtreePlaces[id]
			if !whole {
				// Broken or missing: the second walk names it.
				broken.Store(true)
				continue
			}
			c.r.idx.add(places)
			c.stream.blobs-- // counted by the index now
			if _, err := visit(ctx, id); err != nil {
				return false, err
			}
		}
	}
	c.report.Trees = int(trees.Load())
	return broken.Load(), nil
}

// checkSnapshots walks the trees of every snapshot read.
func (c *checker) checkSnapshots(ctx context.Context, snaps []*Snapshot) error {
	for _, s := range snaps {
		refs, err := c.walkSnapshot(ctx, s.Tree)
		if err != nil {
			return err
		}
		for _, ref := range refs {
			c.affect(ref.object, "", s.ID, "/"+ref.path)
		}
	}
	return nil
}

// blobState reports the problem object for a blob that is missing or
// broken.
func (c *checker) blobState(ctx context.Context, id ID) (string, bool, error) {
	c.mu.Lock()
	obj, broken := c.broken[id]
	c.mu.Unlock()
	if broken {
		return obj, true, nil
	}
	if !c.r.idx.Has(id) {
		if err := c.rereadIndex(ctx); err != nil {
			return "", false, err
		}
		c.mu.Lock()
		obj, broken := c.broken[id]
		c.mu.Unlock()
		if broken {
			return obj, true, nil
		}
		if !c.r.idx.Has(id) {
			return "blob " + id.String(), true, nil
		}
	}
	return "", false, nil
}

func (c *checker) affect(object, msg, snapshot, p string) {
	if msg == "" {
		msg = "missing from the index"
		if c.report.UnindexedPacks > 0 {
			msg += fmt.Sprintf(" (%d packs are not indexed: if index files were lost, the next backup re-indexes those packs; check again after it)", c.report.UnindexedPacks)
		}
	}
	pr := c.problem(object, msg)
	c.mu.Lock()
	pr.Total++
	if len(pr.Affected) < MaxAffected {
		pr.Affected = append(pr.Affected, Affected{Snapshot: snapshot, Path: p})
	}
	c.mu.Unlock()
}

// treeFrame collects the broken references below one tree that a walk
// is in, relative to the tree's folder.
type treeFrame struct {
	id   ID
	dir  string // the folder's path in the snapshot
	refs []brokenRef
	prev *string // the name of the tree's last entry so far
}

// walkSnapshot returns the broken references below tree root, relative to
// it. Each tree's references are memoized, so that trees shared by many
// snapshots are read once: the walk skips a tree it knows and takes its
// references from the memo.
func (c *checker) walkSnapshot(ctx context.Context, root ID) ([]brokenRef, error) {
	stack := []*treeFrame{{dir: "/"}} // the bottom frame takes the root's references
	// add puts refs found at folder dir (relative to it) into the
	// innermost frame.
	add := func(dir string, refs []brokenRef) {
		top := stack[len(stack)-1]
		rel := relativePath(top.dir, dir)
		for _, ref := range refs {
			top.refs = append(top.refs, brokenRef{path: path.Join(rel, ref.path), object: ref.object})
		}
	}
	// done memoizes tree id's references and hands them to its parent.
	done := func(dir string, id ID, refs []brokenRef) {
		if len(refs) == 0 {
			c.wholeTrees[id] = struct{}{}
			return
		}
		c.treeRefs[id] = refs
		add(dir, refs)
	}
	err := c.r.Walk(ctx, root, WalkOptions{}, WalkVisitor{
		Enter: func(dir *WalkEntry, id ID) error {
			if _, ok := c.wholeTrees[id]; ok {
				return SkipTree
			}
			if refs, ok := c.treeRefs[id]; ok {
				add(dir.Path, refs)
				return SkipTree
			}
			obj, bad, err := c.blobState(ctx, id)
			if err != nil {
				return err
			}
			if bad {
				done(dir.Path, id, []brokenRef{{path: "", object: obj}})
				return SkipTree
			}
			c.report.Trees++
			stack = append(stack, &treeFrame{id: id, dir: dir.Path})
			return nil
		},
		TreeError: func(dir *WalkEntry, id ID, err error) error {
			c.markBroken(id, TreeBlob, err.Error())
			stack = stack[:len(stack)-1]
			done(dir.Path, id, []brokenRef{{path: "", object: "tree blob " + id.String()}})
			return nil
		},
		Node: func(e *WalkEntry) error {
			top := stack[len(stack)-1]
			n := e.Node
			outOfOrder := top.prev != nil && *top.prev >= n.Name
			top.prev = &n.Name
			if e.Unsafe || outOfOrder {
				obj := "tree blob " + top.id.String()
				c.problem(obj, fmt.Sprintf("entry %q has an unsafe name or is out of order", n.Name))
				top.refs = append(top.refs, brokenRef{path: "", object: obj})
				return SkipTree
			}
			switch n.Type {
			case NodeDir:
				if n.Subtree == nil {
					obj := "tree blob " + top.id.String()
					c.problem(obj, fmt.Sprintf("directory %q has no subtree", n.Name))
					top.refs = append(top.refs, brokenRef{path: n.Name, object: obj})
				}
			case NodeFile:
				c.blobRefs += len(n.Content)
				var seen map[string]bool // made for a file's first broken blob: most have none
				for _, blob := range n.Content {
					obj, bad, err := c.dataBlobState(ctx, blob)
					if err != nil {
						return err
					}
					if bad && !seen[obj] {
						if seen == nil {
							seen = map[string]bool{}
						}
						seen[obj] = true
						top.refs = append(top.refs, brokenRef{path: n.Name, object: obj})
					}
				}
			}
			return nil
		},
		Leave: func(dir *WalkEntry, id ID) error {
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			done(dir.Path, id, top.refs)
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return stack[0].refs, nil
}

// relativePath returns p, a path at or below folder dir, relative to dir.
func relativePath(dir, p string) string {
	if dir == p {
		return ""
	}
	if dir == "/" {
		return p[1:]
	}
	return p[len(dir)+1:]
}
