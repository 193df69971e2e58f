package repo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
)

// The blobs of one file, or of one folder of trees, sit next to each other
// in a pack in the order they are read. Read one by one, each is a request
// to an object store; read as runs, a file's blobs in a pack cost one.
const (
	// runGap is the most bytes between two blobs read one after the other
	// that a run reads and throws away rather than start another read.
	runGap = 1 << 20
	// runMax bounds the bytes of one run (the memory it holds): a pack of
	// the default size (16 MiB) and the blob that crossed it.
	runMax = 20 << 20
)

// LoadBlobsInOrder reads the blobs ids and calls fn with each one's
// position in ids and plaintext, in the order of ids; the plaintext lives
// in buf and is valid only during the call. Blobs that follow each other
// in ids and in one pack (forwards, with gaps of at most 1 MiB) are read
// with one ranged read, so that a remote repository answers a file's
// blobs in a pack with one request. A blob whose run cannot be read or
// does not open is read alone, from another place when it has one
// (LoadBlobTo); but a failure of the storage itself after its retries
// (ErrStorageUnavailable), which every other read would meet again, ends
// the call at once. The first error, of a read or of fn, ends the call.
func (r *Repository) LoadBlobsInOrder(ctx context.Context, ids []ID, buf *BlobBuffer, fn func(i int, plain []byte) error) error {
	for i := 0; i < len(ids); {
		run, err := r.blobRun(ids[i:])
		if err != nil {
			return err
		}
		done, err := r.loadRun(ctx, run, buf, func(j int, plain []byte) error { return fn(i+j, plain) })
		if err != nil {
			return err
		}
		if err := r.loadEach(ctx, run[done:], buf, func(j int, plain []byte) error { return fn(i+done+j, plain) }); err != nil {
			return err
		}
		i += len(run)
	}
	return nil
}

// loadEach reads the blobs of run one at a time, each from wherever it
// can be read (LoadBlobTo): what is left of a run that one read could not
// give.
func (r *Repository) loadEach(ctx context.Context, run []IndexedBlob, buf *BlobBuffer, fn func(j int, plain []byte) error) error {
	for j, b := range run {
		plain, err := r.LoadBlobTo(ctx, b.ID, buf)
		if err != nil {
			return err
		}
		if err := fn(j, plain); err != nil {
			return err
		}
	}
	return nil
}

// StreamBlobsInOrder is LoadBlobsInOrder for blobs that lie in the order
// of ids in few packs (a restore's pack job): where the backend reads
// ranges as streams (repo.RangeOpener: object storage), each run of ids in
// one pack, forwards with gaps of at most 1 MiB and of any length, is one
// ranged read taken blob by blob as it comes, past the backend's read-ahead
// and never whole in memory. A blob asked for again right after itself (a
// chunk two files of a pack job share, or one file holds twice) is handed
// again without a read: the stream goes on. A blob the stream cannot give
// or that does not open is read alone with those after it in the run, from
// another place when it has one (LoadBlobTo). Without streams it is
// LoadBlobsInOrder.
func (r *Repository) StreamBlobsInOrder(ctx context.Context, ids []ID, buf *BlobBuffer, fn func(i int, plain []byte) error) error {
	ro, ok := Capability[RangeOpener](r.be)
	if !ok {
		return r.LoadBlobsInOrder(ctx, ids, buf, fn)
	}
	for i := 0; i < len(ids); {
		run, err := r.streamRun(ids[i:])
		if err != nil {
			return err
		}
		done, err := r.streamRunBlobs(ctx, ro, run, buf, func(j int, plain []byte) error { return fn(i+j, plain) })
		if errors.Is(err, errors.ErrUnsupported) {
			return r.LoadBlobsInOrder(ctx, ids[i:], buf, func(j int, plain []byte) error { return fn(i+j, plain) })
		}
		if err != nil {
			return err
		}
		if err := r.loadEach(ctx, run[done:], buf, func(j int, plain []byte) error { return fn(i+done+j, plain) }); err != nil {
			return err
		}
		i += len(run)
	}
	return nil
}

// streamRun returns the places of the first blobs of ids that one stream
// reads: data blobs of one pack, forwards, at most runGap apart, a blob
// repeated right after itself included.
func (r *Repository) streamRun(ids []ID) ([]IndexedBlob, error) {
	first, ok := r.idx.Lookup(ids[0])
	if !ok {
		return nil, fmt.Errorf("blob %s: %w", ids[0].Short(), ErrNotFound)
	}
	run := []IndexedBlob{first}
	end := int64(first.Offset) + int64(first.Length)
	for i, id := range ids[1:] {
		b, ok := r.idx.Lookup(id)
		if !ok || b.Pack != first.Pack || b.Type != first.Type {
			break
		}
		if id == ids[i] {
			run = append(run, b) // handed again from memory
			continue
		}
		at := int64(b.Offset)
		if at < end || at-end > runGap {
			break
		}
		run = append(run, b)
		end = at + int64(b.Length)
	}
	return run, nil
}

// streamRunBlobs reads run with one stream and hands its blobs to fn in
// order, returning how many it handed; it stops at the first that the
// stream cannot give or that does not open, leaving the rest to be read
// alone. Only fn's error is returned, ErrUnsupported when the backend
// cannot stream after all (a wrapper over one that cannot), and a failure
// of the storage itself (storageDown).
func (r *Repository) streamRunBlobs(ctx context.Context, ro RangeOpener, run []IndexedBlob, buf *BlobBuffer, fn func(j int, plain []byte) error) (int, error) {
	if len(run) == 1 {
		return 0, nil // read alone, with its alternates
	}
	start := int64(run[0].Offset)
	length := int64(run[len(run)-1].Offset) + int64(run[len(run)-1].Length) - start
	rc, err := ro.OpenRange(ctx, Handle{Type: PackFile, Name: run[0].Pack.String()}, start, length)
	if errors.Is(err, errors.ErrUnsupported) {
		return 0, err
	}
	if err != nil {
		return 0, storageDown(err)
	}
	defer rc.Close()
	in := bufio.NewReaderSize(rc, 256<<10)
	pos := start
	var plain []byte
	for j, b := range run {
		if j > 0 && b.ID == run[j-1].ID {
			// The blob just handed, asked for again: buf still holds it.
			if err := fn(j, plain); err != nil {
				return j, err
			}
			continue
		}
		if _, err := in.Discard(int(int64(b.Offset) - pos)); err != nil {
			return j, storageDown(err)
		}
		buf.sealed = grow(buf.sealed, int(b.Length))[:b.Length]
		if _, err := io.ReadFull(in, buf.sealed); err != nil {
			return j, storageDown(err)
		}
		pos = int64(b.Offset) + int64(b.Length)
		plain, err = r.openBlob(b.PackedBlob, buf.sealed, &buf.plain)
		if err != nil {
			return j, nil
		}
		if err := fn(j, plain); err != nil {
			return j, err
		}
	}
	return len(run), nil
}

// storageDown returns err when it is a failure of the storage itself
// after its retries (ErrStorageUnavailable), which reading the blobs
// alone would only meet again, each read spending the retries anew; nil
// for any other failure of a run's read, whose blobs are then read alone.
func storageDown(err error) error {
	if errors.Is(err, ErrStorageUnavailable) {
		return err
	}
	return nil
}

// blobRun returns the places of the first blobs of ids that one ranged
// read covers: at least the first.
func (r *Repository) blobRun(ids []ID) ([]IndexedBlob, error) {
	first, ok := r.idx.Lookup(ids[0])
	if !ok {
		return nil, fmt.Errorf("blob %s: %w", ids[0].Short(), ErrNotFound)
	}
	run := []IndexedBlob{first}
	start, end := int64(first.Offset), int64(first.Offset)+int64(first.Length)
	for _, id := range ids[1:] {
		b, ok := r.idx.Lookup(id)
		if !ok || b.Pack != first.Pack || b.Type != first.Type {
			break
		}
		at, next := int64(b.Offset), int64(b.Offset)+int64(b.Length)
		if at < end || at-end > runGap || next-start > runMax {
			break
		}
		run = append(run, b)
		end = next
	}
	return run, nil
}

// loadRun reads the blobs of run with one read and hands them to fn in
// order, returning how many it handed; it stops at the first that does
// not open (and hands none when the read fails), leaving the rest to be
// read alone. Only fn's error is returned, and a failure of the storage
// itself (storageDown).
func (r *Repository) loadRun(ctx context.Context, run []IndexedBlob, buf *BlobBuffer, fn func(j int, plain []byte) error) (int, error) {
	if len(run) == 1 {
		return 0, nil // read alone, with its alternates
	}
	start := int64(run[0].Offset)
	length := int64(run[len(run)-1].Offset) + int64(run[len(run)-1].Length) - start
	load := r.loadInto
	if run[0].Type == TreeBlob {
		load = r.loadTreeInto // a pack of trees may have a local copy
	}
	data, err := load(ctx, Handle{Type: PackFile, Name: run[0].Pack.String()}, start, int(length), buf.sealed)
	if err != nil {
		return 0, storageDown(err)
	}
	buf.sealed = data
	for j, b := range run {
		at := int64(b.Offset) - start
		plain, err := r.openBlob(b.PackedBlob, data[at:at+int64(b.Length)], &buf.plain)
		if err != nil {
			return j, nil
		}
		if err := fn(j, plain); err != nil {
			return j, err
		}
	}
	return len(run), nil
}

// ReadPlanner is a backend that gains from knowing ahead which ranges of
// which packs will be read (an object store, where each read is a
// request): given the plan, it can fetch the ranges of a pack that lie
// together with one request and keep them only until every planned read
// of them was served. PlanReads replaces the plan it had; nil ends it.
// Reads outside the plan work as without one.
type ReadPlanner interface {
	PlanReads(plan []PackReads)
}

// PackReads are the reads planned of one pack, in no set order; a range
// read twice is in Reads twice.
type PackReads struct {
	Pack  Handle
	Reads []ReadRange
}

// ReadRange is one read of length bytes at offset.
type ReadRange struct{ Offset, Length int64 }

// ReadPlan collects the reads a restore's LoadBlobsInOrder calls will
// make, for a backend that is a ReadPlanner, and the packs its pack jobs
// will read.
type ReadPlan struct {
	r       *Repository
	planner ReadPlanner
	packs   map[ID][]fileRead
	// files holds how many reads each file of Add makes, one more where
	// the index lacks a blob of it: a file all of whose reads are of
	// byPack's packs is read by the pack jobs (ByPack), not planned.
	files []int32
	// byPack holds the packs that pack jobs read (AddByPack).
	byPack map[ID]bool
}

// fileRead is a read of length bytes at offset of a pack for the file
// files[file]; packs' offsets and runs fit 32 bits (PackedBlob), so that a
// read takes 12 bytes while the restore's walk plans a snapshot's files.
type fileRead struct {
	offset, length uint32
	file           int32
}

// NewReadPlan returns an empty plan, or nil when the backend is no
// ReadPlanner (a local folder gains nothing from one: the caller need not
// spend a walk on it).
func (r *Repository) NewReadPlan() *ReadPlan {
	planner, ok := Capability[ReadPlanner](r.be)
	if !ok {
		return nil
	}
	return &ReadPlan{r: r, planner: planner, packs: map[ID][]fileRead{}, byPack: map[ID]bool{}}
}

// Add records the reads that LoadBlobsInOrder(ids) will make for one
// file: one per run of blobs, as it cuts them. Blobs the index lacks are
// left out (the read reports them); so are trees, which may be read from
// a local copy.
func (p *ReadPlan) Add(ids []ID) {
	file := int32(len(p.files))
	reads := int32(0)
	for i := 0; i < len(ids); {
		reads++
		run, err := p.r.blobRun(ids[i:])
		if err != nil {
			i++
			continue
		}
		first, last := run[0], run[len(run)-1]
		if first.Type == DataBlob {
			p.packs[first.Pack] = append(p.packs[first.Pack], fileRead{offset: first.Offset, length: last.Offset + last.Length - first.Offset, file: file})
		}
		i += len(run)
	}
	p.files = append(p.files, reads)
}

// AddByPack records the packs that a restore's pack jobs read the blobs
// ids of (a big file's chunks), unless the index lacks one of them (the
// file is then read in parts, through the read-ahead). A pack job
// streams its pack past the read-ahead and needs no plan; but a file of
// Add whose blobs all lie in such packs (small files saved beside a big
// one) would cost its pack a request of its own, a span beside the pack
// job's stream. Start leaves those files out of the plan, and the
// restore reads them with the pack jobs (ByPack).
func (p *ReadPlan) AddByPack(ids []ID) {
	packs := make([]ID, len(ids))
	for i, id := range ids {
		b, ok := p.r.idx.Lookup(id)
		if !ok {
			return
		}
		packs[i] = b.Pack
	}
	for _, pack := range packs {
		p.byPack[pack] = true
	}
}

// ByPack tells whether every blob of ids lies in a pack that pack jobs
// read (AddByPack): a file of Add for which it holds is not planned, and
// is to be read by those pack jobs.
func (p *ReadPlan) ByPack(ids []ID) bool {
	if len(ids) == 0 {
		return false
	}
	for _, id := range ids {
		b, ok := p.r.idx.Lookup(id)
		if !ok || !p.byPack[b.Pack] {
			return false
		}
	}
	return true
}

// Start hands the plan to the backend; the function it returns ends the
// plan, letting go of what the backend still holds for it.
func (p *ReadPlan) Start() (end func()) {
	// The files whose every read is of a pack that pack jobs read are
	// left out (ByPack).
	inByPack := make([]int32, len(p.files))
	for id := range p.byPack {
		for _, rd := range p.packs[id] {
			inByPack[rd.file]++
		}
	}
	plan := make([]PackReads, 0, len(p.packs))
	for id, reads := range p.packs {
		var kept []ReadRange
		for _, rd := range reads {
			if inByPack[rd.file] != p.files[rd.file] {
				kept = append(kept, ReadRange{Offset: int64(rd.offset), Length: int64(rd.length)})
			}
		}
		if len(kept) > 0 {
			plan = append(plan, PackReads{Pack: Handle{Type: PackFile, Name: id.String()}, Reads: kept})
		}
	}
	p.packs, p.files = nil, nil
	p.planner.PlanReads(plan)
	return func() { p.planner.PlanReads(nil) }
}
