package repo

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nightjar-backup/nightjar/repo/extsort"
)

// A structural check of a large index does not hold it: at 10 million
// blobs the index in memory (48 bytes a blob in the sorted form) is most
// of check's peak. Instead, as prune's BlobUsage does, check keeps only
// the trees in memory (the walk loads them through the index), puts every
// data blob's entry into an external sorter (by blob, then pack: 0600
// runs in the temporary folder), sorts the data blobs the trees name
// likewise during the walk, and joins the two sorted streams: each place
// is checked against the packs listed, as checkEntry checks it, a blob
// none of whose places is whole is broken (as settle decides), and a
// named blob with no entry is missing. What the join finds is only what
// is damaged (broken blobs, missing ones), so check's memory does not grow
// with the number of blobs in a sound repository. check --read-data keeps
// the index in memory: it matches every pack's blobs with it.

// checkStreamFrom is the size of index (in blobs, as the index files'
// sizes tell) from which a structural check streams it. Below, the index
// held (48 bytes a blob, 25 MB here) is no larger than what the streamed
// check holds at its peak (a sorter's 16 MiB of records and the merges'
// buffers), and it takes no temporary files; at 1 million blobs the
// streamed check took 30 MiB less for the same CPU time
// (docs/PERFORMANCE.md, "check at 10 million blobs").
const checkStreamFrom = 1 << 19

// checkStreamBudget is the bytes of records each of the streamed check's
// two sorters (the index entries, the data blobs named) holds before it
// spills a run: 16 MiB, about 50 runs of entries at 10 million blobs.
const checkStreamBudget = 16 << 20

// checkStream is the streamed index of a check.
type checkStream struct {
	mu      sync.Mutex // guards entries and packs while index files are read
	entries *extsort.Sorter
	packs   map[ID]struct{} // the packs the data blobs lie in
	sorted  *extsort.Iterator
	refs    *extsort.Sorter
	// blobs is the number of distinct data blobs the entries list.
	blobs int
	// missing holds the data blobs the trees name that no index lists.
	missing map[ID]struct{}
	// subtrees holds the subtrees that the index of trees does not
	// list: they may be data blobs, found by the join, which keeps the
	// places of each one whole in subtreePlaces.
	subtrees      map[ID]struct{}
	subtreePlaces map[ID][]IndexedBlob

	// The data places of the index files that appeared since the index
	// was read (few), by blob, in place order: read again during the walk
	// (late), or at the join's start (pending: taken, pendingTaken, only
	// if a blob is missing), with the files' names, those that could not
	// be read, and their trees. judged tells, of the pending blobs the
	// stream lists, whether it holds each whole.
	late          map[ID][]IndexedBlob
	pending       map[ID][]IndexedBlob
	pendingRead   bool
	pendingTaken  bool
	pendingNames  []string
	pendingFailed [][2]string // name, why
	pendingTrees  []IndexedBlob
	judged        map[ID]bool
}

// readIndexStreamed reads the index files names, reporting damaged ones:
// the tree blobs into the index, the other entries into a sorter.
func (c *checker) readIndexStreamed(ctx context.Context, names []string) error {
	s := &checkStream{
		entries:       extsort.New(extsort.Options{MemoryBudget: c.streamBudget, RecordSize: blobRecordSize, MaxOpen: sorterMaxOpen}),
		packs:         map[ID]struct{}{},
		missing:       map[ID]struct{}{},
		subtrees:      map[ID]struct{}{},
		subtreePlaces: map[ID][]IndexedBlob{},
		late:          map[ID][]IndexedBlob{},
		pending:       map[ID][]IndexedBlob{},
		judged:        map[ID]bool{},
	}
	c.stream = s
	var read atomic.Int64 // the places of trees the files list
	add := func(blobs []IndexedBlob) error {
		var trees []IndexedBlob
		rec := make([]byte, blobRecordSize)
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, b := range blobs {
			if b.Type == TreeBlob {
				trees = append(trees, b)
				continue
			}
			s.packs[b.Pack] = struct{}{}
			if err := s.entries.AddRecord(byBlobRecord(rec, b)); err != nil {
				return fmt.Errorf("sort the index: %w", err)
			}
		}
		read.Add(int64(len(trees)))
		c.r.idx.add(trees)
		return nil
	}
	held, err := c.placesHeld()
	if err != nil {
		return err
	}
	if _, err := c.readIndexFiles(ctx, names, false, add); err != nil {
		return err
	}
	after, err := c.placesHeld()
	if err != nil {
		return err
	}
	if int64(after-held) < read.Load() {
		// As readIndex: the places of trees the index merged.
		if err := c.findExtraPlaces(ctx, names); err != nil {
			return err
		}
	}
	// Sorted now, so that the records held go to a run before the walk
	// fills the sorter of the blobs named.
	sorted, err := s.entries.Sorted()
	if err != nil {
		return fmt.Errorf("sort the index: %w", err)
	}
	s.sorted = sorted
	c.report.Blobs = c.r.idx.Len()
	return nil
}

// refSorter returns the sorter of the data blobs the trees name, made by
// u (which removes its files).
func (s *checkStream) refSorter(u *usage, budget int) *extsort.Sorter {
	s.refs = extsort.New(extsort.Options{Dir: u.opts.TempDir, MemoryBudget: budget, MaxOpen: sorterMaxOpen})
	u.sorters = append(u.sorters, s.refs)
	return s.refs
}

// close removes the files of the index entries' sorter; nil s is none.
func (s *checkStream) close() error {
	if s == nil {
		return nil
	}
	return s.entries.Close()
}

// indexesPack reports whether an index entry lies in pack.
func (c *checker) indexesPack(pack ID) bool {
	if c.stream != nil {
		if _, ok := c.stream.packs[pack]; ok {
			return true
		}
	}
	return c.r.idx.HasPack(pack)
}

// blobCount is the number of distinct blobs indexed.
func (c *checker) blobCount() int {
	n := c.r.idx.Len()
	if c.stream != nil {
		n += c.stream.blobs
	}
	return n
}

// joinStreamed walks the sorted index entries and the sorted data blobs
// named (refs) side by side: it checks every place (settleStreamed) and
// notes the named blobs that no entry lists as missing. Those get, as
// blobState gives them, the last chance of the index files that appeared
// since the index was read (rereadIndex). The data places of such files
// are joined too: those read during the walk (late) as the index read
// first, and those read at the join's start (pending) only for what the
// stream says of their blobs, taken only if a blob is missing, as the
// held index takes them. It reports whether a named blob is broken or
// missing.
func (c *checker) joinStreamed(ctx context.Context, refs *extsort.Sorter, packSizes map[ID]int64) (damaged bool, err error) {
	s := c.stream
	if err := c.readPending(ctx); err != nil {
		return false, err
	}
	named, err := refs.Sorted()
	if err != nil {
		return false, fmt.Errorf("sort the blobs the trees name: %w", err)
	}
	haveRef := named.Next()
	// unlisted handles the named blobs before id (all that are left:
	// nil), which no entry lists.
	unlisted := func(id *ID) {
		for haveRef && (id == nil || before(named.ID(), *id)) {
			ref := ID(named.ID())
			if !c.r.idx.Has(ref) {
				s.missing[ref] = struct{}{}
			} else if c.isBroken(ref) {
				damaged = true
			}
			haveRef = named.Next()
		}
	}
	// judge settles blob id: its streamed places, sorted, beside the
	// places the files read again list.
	judge := func(id ID, streamed []IndexedBlob) {
		unlisted(&id)
		late := s.late[id]
		_, pending := s.pending[id]
		whole, listed := false, true
		switch {
		case len(streamed) > 0:
			whole = c.settleStreamed(streamed, packSizes)
			if whole {
				c.badBeside(late, packSizes)
			}
			if pending {
				s.judged[id] = whole
			}
		case len(late) > 0:
			whole = c.settleStreamed(late, packSizes)
		default:
			listed = false // by the pending files alone
		}
		if _, ok := s.subtrees[id]; ok && whole {
			s.subtreePlaces[id] = append(slices.Clone(streamed), late...)
		}
		if haveRef && named.ID() == id {
			if !listed {
				s.missing[id] = struct{}{}
			} else if !whole {
				damaged = true
			}
			haveRef = named.Next()
		}
	}
	extra := s.extraIDs()
	// judgeExtra judges the blobs before id (all that are left: nil)
	// that only the files read again list.
	judgeExtra := func(id *ID) {
		for len(extra) > 0 && (id == nil || before(extra[0], *id)) {
			judge(extra[0], nil)
			extra = extra[1:]
		}
	}
	var group []IndexedBlob // the places of one blob, in place order
	settle := func() {
		if len(group) == 0 {
			return
		}
		id := group[0].ID
		judgeExtra(&id)
		if len(extra) > 0 && extra[0] == id {
			extra = extra[1:]
		}
		judge(id, group)
		group = group[:0]
	}
	for n := 1; s.sorted.Next(); n++ {
		if n%cancelCheck == 0 && ctx.Err() != nil {
			return false, ctx.Err()
		}
		b := fromBlobRecord(s.sorted.Record())
		if len(group) > 0 && group[0].ID != b.ID {
			settle()
		}
		group = append(group, b)
	}
	if err := s.sorted.Err(); err != nil {
		return false, fmt.Errorf("read the sorted index: %w", err)
	}
	settle()
	judgeExtra(nil)
	unlisted(nil)
	if err := named.Err(); err != nil {
		return false, fmt.Errorf("read the sorted blobs the trees name: %w", err)
	}
	c.report.Blobs = c.blobCount()
	if len(s.missing) == 0 {
		return damaged, nil
	}
	// The last chance for the blobs missing, as blobState gives it.
	if err := c.rereadIndex(ctx); err != nil {
		return false, err
	}
	for id := range s.missing {
		_, listed := s.pending[id]
		if c.r.idx.Has(id) || listed && s.pendingTaken {
			delete(s.missing, id)
			if c.isBroken(id) {
				damaged = true
			}
		}
	}
	return damaged || len(s.missing) > 0, nil
}

// readPending reads, unless the index was read again already, the index
// files that appeared since it was read, into s.pending: the join tells
// which of their data blobs it lists, so that they are judged as the
// held index judges them if the files are taken (rereadStreamed).
func (c *checker) readPending(ctx context.Context) error {
	c.reread.Lock()
	defer c.reread.Unlock()
	if c.rereadDone {
		return nil
	}
	s := c.stream
	fresh, err := c.freshIndexFiles(ctx)
	if err != nil {
		return err
	}
	s.pendingRead = true
	for _, name := range fresh {
		blobs, _, err := c.r.ReadIndexFile(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.pendingFailed = append(s.pendingFailed, [2]string{name, err.Error()})
		}
		s.pendingNames = append(s.pendingNames, name)
		for _, b := range blobs {
			if b.Type == TreeBlob {
				s.pendingTrees = append(s.pendingTrees, b)
			} else {
				s.pending[b.ID] = addPlace(s.pending[b.ID], b)
			}
		}
	}
	return nil
}

// rereadStreamed is rereadIndex where the index is streamed: the trees
// of the files that appeared go into the index, checked as there; their
// data places are joined with the stream. Read before the join (late),
// they join it; read at its start (pending), each blob the stream lists
// whole gets its bad places named as problems of their packs, and a blob
// it does not list is judged by them alone. c.reread is held.
func (c *checker) rereadStreamed(ctx context.Context) error {
	s := c.stream
	var trees []IndexedBlob
	if s.pendingRead {
		s.pendingTaken = true
		for _, f := range s.pendingFailed {
			c.problem("index "+f[0], f[1])
		}
		c.mu.Lock()
		for _, name := range s.pendingNames {
			c.indexFiles[name] = true
		}
		c.mu.Unlock()
		c.report.IndexFiles += len(s.pendingNames)
		trees = s.pendingTrees
	} else {
		fresh, err := c.freshIndexFiles(ctx)
		if err != nil {
			return err
		}
		if len(fresh) == 0 {
			return nil
		}
		blobs, err := c.readIndexFiles(ctx, fresh, true, func([]IndexedBlob) error { return nil })
		if err != nil {
			return err
		}
		c.report.IndexFiles += len(fresh)
		for _, b := range blobs {
			if b.Type == TreeBlob {
				trees = append(trees, b)
			} else {
				s.late[b.ID] = addPlace(s.late[b.ID], b)
			}
		}
	}
	c.r.idx.add(trees)
	packSizes := map[ID]int64{}
	if err := c.r.be.List(ctx, PackFile, func(name string, size int64) error {
		if id, err := ParseID(name); err == nil {
			packSizes[id] = size
		}
		return nil
	}); err != nil {
		return fmt.Errorf("list packs: %w", err)
	}
	for _, b := range trees {
		c.noteExtraPlace(b)
		c.checkEntry(b, packSizes)
	}
	c.settle()
	if s.pendingTaken {
		ids := make([]ID, 0, len(s.pending))
		for id := range s.pending {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
		for _, id := range ids {
			whole, judged := s.judged[id]
			switch {
			case !judged:
				c.settleStreamed(s.pending[id], packSizes)
			case whole:
				c.badBeside(s.pending[id], packSizes)
			}
		}
	}
	c.mu.Lock()
	c.report.Blobs = c.blobCount()
	c.mu.Unlock()
	return nil
}

// addPlace adds place b to places, kept in place order without repeats.
func addPlace(places []IndexedBlob, b IndexedBlob) []IndexedBlob {
	i, found := slices.BinarySearchFunc(places, b, func(p, b IndexedBlob) int {
		switch k, o := keyOf(p), keyOf(b); {
		case k == o:
			return 0
		case k.less(o):
			return -1
		}
		return 1
	})
	if found {
		return places
	}
	return slices.Insert(places, i, b)
}

// badBeside names as a problem of its pack each bad place of a blob
// that is whole elsewhere.
func (c *checker) badBeside(places []IndexedBlob, packSizes map[ID]int64) {
	for _, b := range places {
		if bp, bad := placeState(b, packSizes); bad {
			c.problem("pack "+b.Pack.String(), bp.packWhy)
		}
	}
}

// extraIDs returns the blobs of the places read again (late, pending),
// in order.
func (s *checkStream) extraIDs() []ID {
	ids := make([]ID, 0, len(s.late)+len(s.pending))
	for id := range s.late {
		ids = append(ids, id)
	}
	for id := range s.pending {
		if _, ok := s.late[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// settleStreamed checks the places of one data blob (sorted by pack)
// against the packs listed and, as settle does, marks the blob broken
// when none is whole, or names each pack with a bad place when another
// place, in the same pack or another, is whole. It reports whether the blob is whole somewhere.
func (c *checker) settleStreamed(places []IndexedBlob, packSizes map[ID]int64) bool {
	id := places[0].ID
	if !c.r.idx.Has(id) {
		c.stream.blobs++
	}
	var bad []badPlace // in place order
	var keys []placeKey
	whole := false
	for _, b := range places {
		bp, isBad := placeState(b, packSizes)
		if !isBad {
			whole = true
			continue
		}
		bad = append(bad, bp)
		keys = append(keys, keyOf(b))
	}
	switch {
	case len(bad) == 0:
		return true
	case !whole:
		// As settle names it: the first bad place in place order.
		why := bad[0].why
		if packs := distinctPacks(keys); packs > 1 {
			why += fmt.Sprintf(" (and %d other copies are not whole either)", packs-1)
		}
		c.markBroken(id, bad[0].typ, why)
		return false
	}
	for i, bp := range bad {
		c.problem("pack "+keys[i].pack.String(), bp.packWhy)
	}
	return true
}

// streamedSubtree reports whether subtree id, which the index of trees
// does not list even after the index files are read again, is left to
// the join: it may be a data blob, which the held index would load and
// report as a tree that does not decode.
func (c *checker) streamedSubtree(ctx context.Context, id ID) (bool, error) {
	if c.r.idx.Has(id) || c.isBroken(id) {
		return false, nil
	}
	if err := c.rereadIndex(ctx); err != nil {
		return false, err
	}
	if c.r.idx.Has(id) || c.isBroken(id) {
		return false, nil
	}
	c.stream.mu.Lock()
	defer c.stream.mu.Unlock()
	c.stream.subtrees[id] = struct{}{}
	return true, nil
}

// subtreeIDs returns the subtrees left to the join, in order.
func (s *checkStream) subtreeIDs() []ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]ID, 0, len(s.subtrees))
	for id := range s.subtrees {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
	return ids
}

// isBroken reports whether blob id was marked broken.
func (c *checker) isBroken(id ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.broken[id]
	return ok
}

// dataBlobState is blobState for a data blob that a file names: where the
// index is streamed, the join has told which are broken or missing.
func (c *checker) dataBlobState(ctx context.Context, id ID) (string, bool, error) {
	if c.stream == nil {
		return c.blobState(ctx, id)
	}
	c.mu.Lock()
	obj, broken := c.broken[id]
	c.mu.Unlock()
	if broken {
		return obj, true, nil
	}
	if _, ok := c.stream.missing[id]; ok {
		return "blob " + id.String(), true, nil
	}
	return "", false, nil
}
