package repo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// ErrSessionClosed is returned by a Writer used after its session ended.
var ErrSessionClosed = errors.New("write session has ended")

// WriteOptions are the choices made when a write session is opened.
type WriteOptions struct {
	// AdoptPacks indexes, before fn runs, the packs that no index file
	// lists: the work of a session that was interrupted after writing
	// them. Their blobs are then reused instead of stored again, and the
	// session's flush writes an index for them. Packs whose header cannot
	// be read are left alone (check reports them).
	//
	// The same listing heals: indexed packs that are missing, or shorter
	// than the blobs the index places in them, are taken out of the
	// in-memory index, so that the session stores their blobs again when
	// it meets them (WriteStats.LostPacks). It costs no request more than
	// adopting, and one pass over the in-memory index.
	AdoptPacks bool
}

// WriteStats counts what one write session added to the repository.
type WriteStats struct {
	Blobs        int   // blobs stored
	DataBlobs    int   // of them, data blobs
	TreeBlobs    int   // and tree blobs
	RawBytes     int64 // plaintext bytes of the blobs stored, before compression
	Packs        int   // packs written
	Bytes        int64 // bytes of packs and index files written
	AdoptedPacks int   // packs of interrupted sessions taken into the index (WriteOptions.AdoptPacks)
	LostPacks    int   // indexed packs found missing or cut short (WriteOptions.AdoptPacks)
	LostBlobs    int   // blobs only those packs held: stored again if the session meets them
}

// Written is the proof of a write session that ended with everything it
// stored durable and indexed. Only WriteSession makes one; a snapshot is
// saved through it, so that no snapshot can name blobs that are not
// durable yet.
type Written struct {
	r     *Repository
	stats WriteStats
}

// Stats returns what the session added.
func (w *Written) Stats() WriteStats { return w.stats }

// Writer stores blobs and trees inside a write session. It is safe for
// concurrent use until the session's function returns; after that every
// call that would store something fails with ErrSessionClosed (a blob the
// repository has already is still reported as not stored, without error).
type Writer struct {
	r *Repository

	// ctx is the session's context: pack and index writes in the
	// background run under it, not under the context of the SaveBlob call
	// that filled the pack, which its caller may end as soon as the call
	// returns. cancel stops it with the first failed pack write, so that
	// the session's function stops early.
	ctx    context.Context
	cancel context.CancelCauseFunc

	closing   chan struct{} // closed when the session starts to end
	closeOnce sync.Once
	held      []*packer // both packers, taken when the session ends

	// One packer for data packs and one for tree packs, each in a channel
	// of one: a call holds the packer only to append a blob that it has
	// compressed and sealed beforehand (see SaveBlob).
	dataPacker chan *packer
	treePacker chan *packer

	// Full packs are written in the background, at most cap(packWrites)
	// at a time; packWG counts them and packErr keeps the first failure.
	packWrites chan struct{}
	packWG     sync.WaitGroup
	packErrMu  sync.Mutex
	packErr    error

	// unindexed holds stored blobs that no index file lists yet; flushIndex
	// writes them out. indexMu also orders index writes and guards stats.
	indexMu        sync.Mutex
	unindexed      []IndexedBlob
	unindexedPacks map[ID]bool
	stats          WriteStats
}

// maxPackWrites is how many packs a session stores concurrently.
const maxPackWrites = 2

// WriteSession runs fn with a Writer and then ends the session, on every
// return path of fn:
//
//   - fn returned nil (and the context is not done): every partly filled
//     pack is written, then index files for every blob stored; the session
//     returns a Written once all of it is durable.
//   - fn failed, panicked, or the flush failed: the packs not yet written
//     are thrown away, the pack writes under way are waited for, and the
//     session's blobs that no index file lists are forgotten (their packs,
//     if written, are left for a later session's AdoptPacks). A panic goes
//     on once that is done.
//
// Either way no pack write goes on after WriteSession returns, and no
// temporary file of a pack is left behind. The context fn gets is
// cancelled when a pack write fails; the session then returns that error.
// Sessions of one Repository run one after another.
func (r *Repository) WriteSession(ctx context.Context, opts WriteOptions, fn func(ctx context.Context, w *Writer) error) (*Written, error) {
	r.sessionMu.Lock()
	defer r.sessionMu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := r.newWriter(ctx, cancel)
	done := false
	defer func() {
		if !done { // an error or a panic
			w.abort()
		}
	}()
	if opts.AdoptPacks {
		if err := w.adoptPacks(ctx); err != nil {
			return nil, err
		}
	}
	if err := fn(ctx, w); err != nil {
		return nil, w.cause(ctx, err)
	}
	if err := w.flush(ctx); err != nil {
		return nil, w.cause(ctx, err)
	}
	done = true
	return &Written{r: r, stats: w.stats}, nil
}

// newWriter makes a Writer with one packer for data and one for trees.
// One data packer, not one per core: a session then ends with at most one
// partly filled data pack (fewer, fuller packs: fewer requests on object
// storage), and the chunks that one goroutine saves one after another lie
// one after another in the packs, so that restoring a file reads its packs
// in order, each once. The work that needs the cores, compressing and
// sealing, is done by the callers before they take the packer.
func (r *Repository) newWriter(ctx context.Context, cancel context.CancelCauseFunc) *Writer {
	w := &Writer{
		r: r, ctx: ctx, cancel: cancel,
		closing:        make(chan struct{}),
		packWrites:     make(chan struct{}, maxPackWrites),
		dataPacker:     make(chan *packer, 1),
		treePacker:     make(chan *packer, 1),
		unindexedPacks: map[ID]bool{},
	}
	w.dataPacker <- &packer{kind: DataPack}
	w.treePacker <- &packer{kind: TreePack}
	return w
}

// cause returns the failed pack write that cancelled the session's
// context, rather than the cancellation it caused in fn.
func (w *Writer) cause(ctx context.Context, err error) error {
	if perr := w.packWriteError(); perr != nil && errors.Is(err, context.Canceled) && context.Cause(ctx) == perr {
		return perr
	}
	return err
}

// close ends the use of the Writer: later calls fail, and the calls under
// way finish, giving their packers back, before close returns with both
// packers in w.held. It runs once.
func (w *Writer) close() {
	w.closeOnce.Do(func() {
		close(w.closing)
		w.held = append(w.held, <-w.dataPacker, <-w.treePacker)
	})
}

// flush writes every partly filled pack, waits for every pack write, and
// writes index files for every stored blob not yet indexed.
func (w *Writer) flush(ctx context.Context) error {
	w.close()
	// Whatever flush returns, no pack write goes on after it.
	defer w.packWG.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, p := range w.held {
		if len(p.blobs) > 0 {
			if err := w.startPackWrite(ctx, p); err != nil {
				return err
			}
		}
	}
	w.packWG.Wait()
	if err := w.packWriteError(); err != nil {
		return err
	}
	return w.flushIndex(ctx)
}

// abort throws away the packs not yet written, waits for the pack writes
// under way, and forgets the blobs that no index file lists.
func (w *Writer) abort() {
	w.close()
	for _, p := range w.held {
		if p.out != nil {
			p.out.abort(w.r)
			for _, b := range p.blobs {
				w.r.idx.unreserve(b.ID)
			}
			p.out, p.blobs = nil, nil
		}
	}
	w.packWG.Wait()
	w.indexMu.Lock()
	defer w.indexMu.Unlock()
	w.r.idx.forget(w.unindexed, w.unindexedPacks)
	w.unindexed, w.unindexedPacks = nil, map[ID]bool{}
}

// SaveBlob stores a blob whose plaintext is data and whose ID is id (from
// BlobID) unless the repository has it already or another goroutine is
// storing it. It reports whether this call stored it. The blob is durable,
// and indexed, only once the session has ended without an error.
func (w *Writer) SaveBlob(ctx context.Context, t BlobType, id ID, data []byte) (bool, error) {
	return w.SaveChunk(ctx, t, id, data, nil)
}

// CompressHint carries from one chunk of a file (or stream) to the next
// whether the file's data compresses, so that SaveChunk need not try a
// sample of every chunk of a file it is already compressing. Give all the
// chunks of one file the same hint; its zero value knows nothing. It is
// safe for concurrent use.
type CompressHint struct{ compresses atomic.Bool }

// SaveChunk is SaveBlob for one chunk of a file: while the file's chunks
// compress, its next chunk is compressed without the trial of a sample;
// after a chunk that did not compress, the next one is tried first again.
// A nil hint is SaveBlob. The blob stored is the same either way, except
// that a chunk whose samples do not compress but whose whole does is
// stored compressed.
func (w *Writer) SaveChunk(ctx context.Context, t BlobType, id ID, data []byte, hint *CompressHint) (bool, error) {
	r := w.r
	if !r.idx.reserve(id) {
		return false, nil
	}
	// Compressing and sealing happen here, in the callers, in parallel:
	// the one packer is held only to append the sealed bytes.
	bufp := r.compressBufs.Get().(*[]byte)
	defer r.compressBufs.Put(bufp)
	payload, comp := data, compressNone
	if r.zenc != nil && len(data) >= 64 && (hint.says() || r.worthCompressing(data, *bufp)) {
		compressed := r.zenc.EncodeAll(data, (*bufp)[:0])
		*bufp = compressed[:0]
		// Keep the compressed form only when it saves more than 1/64:
		// decompressing costs time on every restore.
		kept := len(compressed) < len(data)-len(data)/64
		if kept {
			payload, comp = compressed, compressZstd
		}
		hint.set(kept)
	}
	// The seal binds the blob to its ID only, not to its place in a pack:
	// it can be made before the packer is taken. The pooled buffer goes
	// with the blob into the pack, which puts it back once written.
	sealedp := r.compressBufs.Get().(*[]byte)
	*sealedp = r.seal.seal((*sealedp)[:0], payload, id[:])
	return w.pack(ctx, PackedBlob{ID: id, Type: t, Compression: comp, RawLength: uint32(len(data))}, sealedp)
}

func (h *CompressHint) says() bool { return h != nil && h.compresses.Load() }

func (h *CompressHint) set(compresses bool) {
	if h != nil {
		h.compresses.Store(compresses)
	}
}

// SaveSealedBlob stores a blob that is already sealed, as it is: sealed is
// the blob's sealed bytes as read from a pack of this repository, and b
// says what they hold (its ID, type, compression and raw length, as the
// pack's header or an index lists them; Offset and Length are ignored).
// A sealed blob is bound to its ID only, not to its pack or offset, so
// the copy is valid in any pack; prune's repacking copies blobs this way,
// without decompressing and compressing them again. The seal is opened
// (and the plaintext thrown away) before anything is stored: bytes that
// fail fail with ErrIntegrity, naming the blob, and are not stored. As
// SaveBlob, it stores nothing that the repository has already and
// reports whether this call stored the blob; sealed may be reused once it
// returns.
func (w *Writer) SaveSealedBlob(ctx context.Context, b PackedBlob, sealed []byte) (bool, error) {
	r := w.r
	if !r.idx.reserve(b.ID) {
		return false, nil
	}
	bufp := r.compressBufs.Get().(*[]byte)
	err := r.authenticateSealedBlob(b, sealed, bufp)
	if err != nil {
		r.compressBufs.Put(bufp)
		r.idx.unreserve(b.ID)
		return false, err
	}
	// The caller may reuse sealed once this returns, and the pack may
	// write it later: the pack gets a copy.
	*bufp = append((*bufp)[:0], sealed...)
	return w.pack(ctx, PackedBlob{ID: b.ID, Type: b.Type, Compression: b.Compression, RawLength: b.RawLength}, bufp)
}

// pack appends a blob whose ID the caller has reserved to the pack of its
// kind: *sealed is the blob's sealed bytes, in a buffer of compressBufs
// that pack takes over, and b (without Offset and Length) becomes its
// header entry. Blobs of one caller go into the pack
// in the order of its calls. A full pack is handed to a background write.
// It reports whether the blob went into a pack: if not, its reservation
// is given up.
func (w *Writer) pack(ctx context.Context, b PackedBlob, sealed *[]byte) (bool, error) {
	r := w.r
	slot := w.packerOf(packKind(b.Type))
	giveUp := func(err error) (bool, error) {
		r.compressBufs.Put(sealed)
		r.idx.unreserve(b.ID)
		return false, err
	}
	var p *packer
	select {
	case p = <-slot:
	case <-ctx.Done():
		return giveUp(ctx.Err())
	case <-w.closing:
		return giveUp(ErrSessionClosed)
	}
	select {
	case <-w.closing: // the session ends: close takes the packer
		slot <- p
		return giveUp(ErrSessionClosed)
	default:
	}
	if p.out == nil {
		// The pack outlives this call: it is written under the session's
		// context, and a failed write fails the session.
		out, err := r.newPackOutput(w.ctx, p.kind, func(err error) { w.failPackWrite(fmt.Errorf("write pack: %w", err)) })
		if err != nil {
			slot <- p
			return giveUp(fmt.Errorf("write pack: %w", err))
		}
		p.out = out
	}
	offset, size, err := p.out.addSealed(sealed)
	if err != nil {
		// The pack cannot be written, and with it go blobs that earlier
		// calls reported as stored: the session fails, as for a failed
		// background write, so that nothing can refer to them. Its blobs
		// are given up, to be stored again by a later session.
		p.out.abort(r)
		r.idx.unreserve(b.ID)
		for _, pb := range p.blobs {
			r.idx.unreserve(pb.ID)
		}
		p.out, p.blobs = nil, nil
		slot <- p
		err = fmt.Errorf("write pack: %w", err)
		w.failPackWrite(err)
		return false, err
	}
	b.Offset, b.Length = uint32(offset), uint32(size-offset)
	p.blobs = append(p.blobs, b)
	// The header (one entry per blob) counts towards the pack's size, so
	// that packs of many small blobs fit their buffer too.
	if size+len(p.blobs)*packEntrySize >= r.cfg.PackSize {
		err = w.startPackWrite(ctx, p)
	}
	slot <- p
	return true, err
}

// Trees go into packs of their own, data into others: a backup reads its
// parent's trees, so tree packs are worth keeping in a cache, data packs
// are not (PackKind).
func packKind(t BlobType) PackKind {
	if t == TreeBlob {
		return TreePack
	}
	return DataPack
}

// packerOf returns the channel that holds the packer of packs of kind.
func (w *Writer) packerOf(kind PackKind) chan *packer {
	if kind == TreePack {
		return w.treePacker
	}
	return w.dataPacker
}

// startPackWrite hands p's full pack to a background writer and gives p an
// empty buffer, so that packing goes on while the pack is stored. At most
// maxPackWrites packs are in flight; more wait here (backpressure).
func (w *Writer) startPackWrite(ctx context.Context, p *packer) error {
	if err := w.packWriteError(); err != nil {
		return err
	}
	// Take a write slot first: on cancellation the blobs stay in the
	// packer, still reserved and unwritten, and the session throws them
	// away.
	select {
	case w.packWrites <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	blobs, out := p.blobs, p.out
	p.blobs, p.out = nil, nil
	w.packWG.Add(1)
	go func() {
		defer w.packWG.Done()
		err := w.writePack(w.ctx, blobs, out)
		<-w.packWrites
		if err != nil {
			w.failPackWrite(err)
		}
	}()
	return nil
}

// failPackWrite records the session's first failed pack write and cancels
// the session's context with it: the session then fails.
func (w *Writer) failPackWrite(err error) {
	w.packErrMu.Lock()
	if w.packErr == nil {
		w.packErr = err
	}
	w.packErrMu.Unlock()
	w.cancel(err)
}

func (w *Writer) packWriteError() error {
	w.packErrMu.Lock()
	defer w.packErrMu.Unlock()
	return w.packErr
}

// Stats returns what the session has added so far: packs written and
// indexed, and index files; a pack being filled counts once it is
// written. Safe to call at any time, also while blobs are saved.
func (w *Writer) Stats() WriteStats {
	w.indexMu.Lock()
	defer w.indexMu.Unlock()
	return w.stats
}

// writePack finishes a pack from its blobs, stores it and indexes its
// blobs. On error the blobs are released so that a retry stores them again.
func (w *Writer) writePack(ctx context.Context, blobs []PackedBlob, out packOutput) error {
	r := w.r
	packID, size, err := out.finish(ctx, r, blobs)
	if err != nil {
		for _, b := range blobs {
			r.idx.unreserve(b.ID)
		}
		return fmt.Errorf("write pack: %w", err)
	}
	indexed := make([]IndexedBlob, len(blobs))
	for i, b := range blobs {
		indexed[i] = IndexedBlob{PackedBlob: b, Pack: packID}
	}
	r.idx.add(indexed)
	w.indexMu.Lock()
	w.stats.Packs++
	w.stats.Blobs += len(blobs)
	w.stats.Bytes += int64(size)
	for _, b := range blobs {
		if b.Type == DataBlob {
			w.stats.DataBlobs++
		} else {
			w.stats.TreeBlobs++
		}
		w.stats.RawBytes += int64(b.RawLength)
	}
	w.unindexed = append(w.unindexed, indexed...)
	w.unindexedPacks[packID] = true
	full := len(w.unindexedPacks) >= maxPacksPerIndex || len(w.unindexed) >= maxBlobsPerIndex
	w.indexMu.Unlock()
	if full {
		return w.flushIndex(ctx)
	}
	return nil
}

// An index file is written while a session runs once its blobs fill
// maxPacksPerIndex packs or number maxBlobsPerIndex, so that an interrupted
// backup leaves most of its work indexed and the list of blobs waiting for
// an index file stays small (about 5 MiB) even for many tiny files. No
// index file holds more than maxBlobsPerIndex blobs (more are split into
// several), so that prune, which streams the index, decodes at most that
// many at a time.
const (
	maxPacksPerIndex = 64
	maxBlobsPerIndex = 1 << 16
)

func (w *Writer) flushIndex(ctx context.Context) error {
	w.indexMu.Lock()
	defer w.indexMu.Unlock()
	if len(w.unindexed) == 0 {
		return nil
	}
	r := w.r
	// At most maxBlobsPerIndex blobs a file, however many a pack of tiny
	// blobs or the adopted packs bring: prune decodes one file at a time.
	for blobs := sortedIndexFile(w.unindexed).Blobs; len(blobs) > 0; {
		n := min(len(blobs), maxBlobsPerIndex)
		body := encodeIndexBody(sortedIndexFile(blobs[:n]))
		data := sealObject(r.seal, "index", "", body)
		name := fileID(data)
		if err := r.be.Save(ctx, Handle{Type: IndexFile, Name: name.String()}, data); err != nil {
			return fmt.Errorf("write index: %w", err)
		}
		w.stats.Bytes += int64(len(data))
		blobs = blobs[n:]
	}
	w.unindexed = nil
	w.unindexedPacks = map[ID]bool{}
	return nil
}

// adoptPacks indexes the packs no index file lists, and forgets the
// indexed packs that are lost (WriteOptions.AdoptPacks); the counts go
// into w.stats.
func (w *Writer) adoptPacks(ctx context.Context) error {
	r := w.r
	type pack struct {
		id   ID
		size int64
	}
	var orphans []pack
	sizes := map[ID]int64{}
	err := r.be.List(ctx, PackFile, func(name string, size int64) error {
		id, err := ParseID(name)
		if err != nil {
			return nil
		}
		sizes[id] = size
		if !r.idx.HasPack(id) {
			orphans = append(orphans, pack{id, size})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list packs: %w", err)
	}
	lost := r.idx.damagedPacks(sizes)
	w.stats.LostPacks = len(lost)
	if w.stats.LostBlobs, err = r.idx.dropPacks(lost); err != nil {
		return err
	}
	var mu sync.Mutex
	adopted := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, p := range orphans {
		g.Go(func() error {
			blobs, err := r.ReadPackHeader(gctx, p.id, p.size)
			if errors.Is(err, ErrIntegrity) || errors.Is(err, ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			indexed := make([]IndexedBlob, len(blobs))
			for i, b := range blobs {
				indexed[i] = IndexedBlob{PackedBlob: b, Pack: p.id}
			}
			r.idx.add(indexed)
			mu.Lock()
			adopted++
			mu.Unlock()
			w.indexMu.Lock()
			w.unindexed = append(w.unindexed, indexed...)
			w.unindexedPacks[p.id] = true
			w.indexMu.Unlock()
			return nil
		})
	}
	err = g.Wait() // before adopted is read: every goroutine counted
	w.stats.AdoptedPacks = adopted
	return err
}

// HasAll reports whether the repository holds every blob of ids: a file
// whose content a backup takes from the parent snapshot without reading
// it must not refer to a blob that was lost with its pack
// (WriteOptions.AdoptPacks); such a file is read again.
func (w *Writer) HasAll(ids []ID) bool {
	for _, id := range ids {
		if !w.r.idx.Has(id) {
			return false
		}
	}
	return true
}
