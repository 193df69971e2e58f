package repo

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	"lukechampine.com/blake3"
)

// packer collects sealed blobs until it holds a pack's worth.
type packer struct {
	kind    PackKind
	out     packOutput // nil until the pack's first blob
	blobs   []PackedBlob
	scratch []byte // where a streamed pack's blobs are sealed
}

// packOutput takes a pack's bytes as its blobs are sealed: into a buffer
// that is saved whole, or straight into the backend (PackStreamer).
type packOutput interface {
	// add seals payload into the pack and returns where it starts and the
	// pack's size after it.
	add(s sealer, payload, ad []byte, scratch *[]byte) (offset, size int, err error)
	// finish appends the header and trailer and stores the pack.
	finish(ctx context.Context, r *Repository, blobs []PackedBlob) (id ID, size int, err error)
	// abort throws the pack away.
	abort(r *Repository)
}

func (r *Repository) newPackOutput(ctx context.Context, kind PackKind) (packOutput, error) {
	if ps, ok := Capability[PackStreamer](r.be); ok {
		s, err := ps.NewPackStream(ctx, kind)
		if err == nil {
			return &streamedPack{s: s, h: blake3.New(32, nil)}, nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
	}
	return &bufferedPack{buf: r.packBuffer()}, nil
}

// bufferedPack holds the whole pack in memory and saves it at the end.
type bufferedPack struct{ buf []byte }

func (b *bufferedPack) add(s sealer, payload, ad []byte, _ *[]byte) (int, int, error) {
	offset := len(b.buf)
	b.buf = s.seal(b.buf, payload, ad)
	return offset, len(b.buf), nil
}

func (b *bufferedPack) finish(ctx context.Context, r *Repository, blobs []PackedBlob) (ID, int, error) {
	data := appendPackTail(r.seal, b.buf, blobs)
	id := fileID(data)
	err := r.be.Save(ctx, Handle{Type: PackFile, Name: id.String()}, data)
	r.recyclePackBuffer(data)
	return id, len(data), err
}

func (b *bufferedPack) abort(r *Repository) { r.recyclePackBuffer(b.buf) }

// streamedPack writes each sealed blob to the backend at once and hashes
// the pack on the way, for its name.
type streamedPack struct {
	s    PackStream
	h    *blake3.Hasher
	size int
}

func (p *streamedPack) add(s sealer, payload, ad []byte, scratch *[]byte) (int, int, error) {
	*scratch = s.seal((*scratch)[:0], payload, ad)
	if err := p.write(*scratch); err != nil {
		return 0, 0, err
	}
	return p.size - len(*scratch), p.size, nil
}

func (p *streamedPack) write(b []byte) error {
	p.h.Write(b)
	if _, err := p.s.Write(b); err != nil {
		return err
	}
	p.size += len(b)
	return nil
}

func (p *streamedPack) finish(ctx context.Context, r *Repository, blobs []PackedBlob) (ID, int, error) {
	if err := p.write(appendPackTail(r.seal, nil, blobs)); err != nil {
		p.s.Abort()
		return ID{}, 0, err
	}
	var id ID
	p.h.Sum(id[:0])
	return id, p.size, p.s.Commit(ctx, id.String())
}

func (p *streamedPack) abort(*Repository) { p.s.Abort() }

// Stats counts what this process wrote to the repository.
type Stats struct {
	Packs int   // packs written
	Bytes int64 // bytes of packs and index files written
}

// WriteStats returns what this Repository has written so far.
func (r *Repository) WriteStats() Stats {
	r.indexMu.Lock()
	defer r.indexMu.Unlock()
	return Stats{Packs: r.writtenPacks, Bytes: r.writtenBytes}
}

// SaveBlob stores a blob whose plaintext is data and whose ID is id (from
// BlobID) unless the repository has it already or another goroutine is
// storing it. It reports whether this call stored it. The blob is durable,
// and indexed, only after the pack that holds it is written (see Flush).
func (r *Repository) SaveBlob(ctx context.Context, t BlobType, id ID, data []byte) (bool, error) {
	if !r.idx.reserve(id) {
		return false, nil
	}
	return true, r.SaveReservedBlob(ctx, t, id, data)
}

// Reserve claims blob id for this caller to store with SaveReservedBlob. It
// reports false when the repository has it or someone else is storing it.
func (r *Repository) Reserve(id ID) bool { return r.idx.reserve(id) }

// SaveReservedBlob stores a blob claimed with Reserve.
func (r *Repository) SaveReservedBlob(ctx context.Context, t BlobType, id ID, data []byte) error {
	bufp := r.compressBufs.Get().(*[]byte)
	defer r.compressBufs.Put(bufp)
	payload, comp := data, compressNone
	if r.zenc != nil && len(data) >= 64 && r.worthCompressing(data, *bufp) {
		compressed := r.zenc.EncodeAll(data, (*bufp)[:0])
		*bufp = compressed[:0]
		// Keep the compressed form only when it saves more than 1/64:
		// decompressing costs time on every restore.
		if len(compressed) < len(data)-len(data)/64 {
			payload, comp = compressed, compressZstd
		}
	}
	packers := r.packerPool(packKind(t))
	var p *packer
	select {
	case p = <-packers:
	case <-ctx.Done():
		r.idx.unreserve(id)
		return ctx.Err()
	}
	if p.out == nil {
		out, err := r.newPackOutput(ctx, p.kind)
		if err != nil {
			packers <- p
			r.idx.unreserve(id)
			return fmt.Errorf("write pack: %w", err)
		}
		p.out = out
	}
	offset, size, err := p.out.add(r.seal, payload, id[:], &p.scratch)
	if err != nil {
		// The pack cannot be written: its blobs are given up, to be
		// stored again by whoever saves them next.
		p.out.abort(r)
		r.idx.unreserve(id)
		for _, b := range p.blobs {
			r.idx.unreserve(b.ID)
		}
		p.out, p.blobs = nil, nil
		packers <- p
		return fmt.Errorf("write pack: %w", err)
	}
	p.blobs = append(p.blobs, PackedBlob{
		ID: id, Type: t, Compression: comp, Offset: uint32(offset),
		Length: uint32(size - offset), RawLength: uint32(len(data)),
	})
	// The header (one entry per blob) counts towards the pack's size, so
	// that packs of many small blobs fit their buffer too.
	if size+len(p.blobs)*packEntrySize >= r.cfg.PackSize {
		err = r.startPackWrite(ctx, p)
	}
	packers <- p
	return err
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

// packerPool returns the packers of packs of kind: one per core for data,
// one for trees.
func (r *Repository) packerPool(kind PackKind) chan *packer {
	if kind == TreePack {
		return r.treePackers
	}
	return r.packers
}

// sampleSize is the size of the samples worthCompressing tries.
const sampleSize = 4 << 10

// worthCompressing guesses cheaply whether data compresses: it compresses
// a sample from the start and one from the middle, and gives up on data
// (typically already compressed or encrypted) where neither saves 1/32.
// It costs about 3% of compressing a 256 KiB chunk whole.
func (r *Repository) worthCompressing(data, buf []byte) bool {
	if len(data) < 4*sampleSize {
		return true
	}
	mid := len(data)/2 - sampleSize/2
	for _, sample := range [][]byte{data[:sampleSize], data[mid : mid+sampleSize]} {
		if out := r.zenc.EncodeAll(sample, buf[:0]); len(out) < sampleSize-sampleSize/32 {
			return true
		}
	}
	return false
}

// startPackWrite hands p's full pack to a background writer and gives p an
// empty buffer, so that sealing goes on while the pack is stored. At most
// maxPackWrites packs are in flight; more wait here (backpressure).
func (r *Repository) startPackWrite(ctx context.Context, p *packer) error {
	if err := r.packWriteError(); err != nil {
		return err
	}
	// Take a write slot first: on cancellation the blobs stay in the
	// packer, still reserved and unwritten, and Flush reports the error.
	select {
	case r.packWrites <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	blobs, out := p.blobs, p.out
	p.blobs, p.out = nil, nil
	r.packWG.Add(1)
	go func() {
		defer r.packWG.Done()
		err := r.writePack(ctx, blobs, out)
		<-r.packWrites
		if err != nil {
			r.packErrMu.Lock()
			if r.packErr == nil {
				r.packErr = err
			}
			r.packErrMu.Unlock()
		}
	}()
	return nil
}

// WaitPackWrites waits until every pack being stored in the background is
// stored or has failed. Flush and Close wait for them too; a backup that
// ends without Flush calls it before its caller releases the repository's
// lock, so that no pack is published after that or left half-written in
// tmp/ when the process exits.
func (r *Repository) WaitPackWrites() { r.packWG.Wait() }

func (r *Repository) packWriteError() error {
	r.packErrMu.Lock()
	defer r.packErrMu.Unlock()
	return r.packErr
}

// packBuffer returns an empty buffer that holds a whole pack without
// growing: a pack ends at the first blob with which its blobs and header
// reach PackSize, so it is at most PackSize plus one sealed blob, its
// header entry and the trailer.
func (r *Repository) packBuffer() []byte {
	select {
	case b := <-r.packBufs:
		return b[:0]
	default:
		return make([]byte, 0, r.cfg.PackSize+r.cfg.Chunker.Max+64<<10)
	}
}

// recyclePackBuffer keeps a written pack's buffer for the next pack. The
// free list holds as many buffers as can be in use at once, so memory
// stays at (packers + pack writes) buffers.
func (r *Repository) recyclePackBuffer(b []byte) {
	select {
	case r.packBufs <- b[:0]:
	default:
	}
}

// writePack finishes a pack from its blobs, stores it and indexes its
// blobs. On error the blobs are released so that a retry stores them again.
func (r *Repository) writePack(ctx context.Context, blobs []PackedBlob, out packOutput) error {
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
	r.indexMu.Lock()
	r.writtenPacks++
	r.writtenBytes += int64(size)
	r.unindexed = append(r.unindexed, indexed...)
	r.unindexedPacks[packID] = true
	full := len(r.unindexedPacks) >= maxPacksPerIndex || len(r.unindexed) >= maxBlobsPerIndex
	r.indexMu.Unlock()
	if full {
		return r.flushIndex(ctx)
	}
	return nil
}

// An index file is written while a backup runs once its blobs fill
// maxPacksPerIndex packs or number maxBlobsPerIndex, so that an interrupted
// backup leaves most of its work indexed and the list of blobs waiting for
// an index file stays small (about 5 MiB) even for many tiny files.
const (
	maxPacksPerIndex = 64
	maxBlobsPerIndex = 1 << 16
)

// Flush writes every partly filled pack and then index files for every
// stored blob not yet indexed. After Flush returns, every blob that SaveBlob
// stored is durable and indexed, and may be referred to.
func (r *Repository) Flush(ctx context.Context) error {
	// Whatever Flush returns, no pack write goes on after it.
	defer r.packWG.Wait()
	var all []*packer
	defer func() {
		for _, p := range all {
			r.packerPool(p.kind) <- p
		}
	}()
	for _, pool := range []chan *packer{r.packers, r.treePackers} {
		for range cap(pool) {
			select {
			case p := <-pool:
				all = append(all, p)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	for _, p := range all {
		if len(p.blobs) > 0 {
			if err := r.startPackWrite(ctx, p); err != nil {
				return err
			}
		}
	}
	r.packWG.Wait()
	if err := r.packWriteError(); err != nil {
		return err
	}
	return r.flushIndex(ctx)
}

func (r *Repository) flushIndex(ctx context.Context) error {
	r.indexMu.Lock()
	defer r.indexMu.Unlock()
	if len(r.unindexed) == 0 {
		return nil
	}
	body := encodeIndexBody(sortedIndexFile(r.unindexed))
	data := sealObject(r.seal, "index", "", body)
	name := fileID(data)
	if err := r.be.Save(ctx, Handle{Type: IndexFile, Name: name.String()}, data); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	r.writtenBytes += int64(len(data))
	r.unindexed = nil
	r.unindexedPacks = map[ID]bool{}
	return nil
}

// LoadBlob reads, authenticates, decompresses and verifies blob id.
func (r *Repository) LoadBlob(ctx context.Context, id ID) ([]byte, error) {
	var buf BlobBuffer
	return r.LoadBlobTo(ctx, id, &buf)
}

// BlobBuffer is the memory LoadBlobTo reuses from one call to the next.
// The zero value is ready; give each goroutine its own.
type BlobBuffer struct{ sealed, plain []byte }

// LoadBlobTo is LoadBlob without allocating per blob: the plaintext lives
// in buf and stays valid until the next call with the same buf. Restore
// reads every blob of a snapshot this way.
func (r *Repository) LoadBlobTo(ctx context.Context, id ID, buf *BlobBuffer) ([]byte, error) {
	b, ok := r.idx.Lookup(id)
	if !ok {
		return nil, fmt.Errorf("blob %s: %w", id.Short(), ErrNotFound)
	}
	sealed, err := r.loadInto(ctx, Handle{Type: PackFile, Name: b.Pack.String()}, int64(b.Offset), int(b.Length), buf.sealed)
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", id.Short(), err)
	}
	buf.sealed = sealed
	return r.openBlob(b.PackedBlob, sealed, &buf.plain)
}

// loadInto reads length bytes at offset of an object: into buf's memory
// (grown if need be) when the backend is a BufferLoader, else into the
// memory Load returns.
func (r *Repository) loadInto(ctx context.Context, h Handle, offset int64, length int, buf []byte) ([]byte, error) {
	if bl, ok := Capability[BufferLoader](r.be); ok {
		data := grow(buf, length)[:length]
		err := bl.LoadInto(ctx, h, offset, data)
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
	}
	return r.be.Load(ctx, h, offset, int64(length))
}

// grow returns b, or a new slice, with a capacity of at least n.
func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b
	}
	return make([]byte, 0, n)
}

// openBlob turns a sealed blob into its verified plaintext. It decrypts in
// place, overwriting sealed. A compressed blob is decompressed into
// *plainBuf when that is given (keeping the grown buffer there), else into
// new memory.
func (r *Repository) openBlob(b PackedBlob, sealed []byte, plainBuf *[]byte) ([]byte, error) {
	plain, err := r.seal.openInPlace(sealed, b.ID[:])
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", b.ID.Short(), err)
	}
	if b.Compression == compressZstd {
		if b.RawLength > maxBlobSize {
			return nil, fmt.Errorf("blob %s: raw length %d too large: %w", b.ID.Short(), b.RawLength, ErrIntegrity)
		}
		var out []byte
		if plainBuf != nil {
			out = grow(*plainBuf, int(b.RawLength))[:0]
		} else {
			out = make([]byte, 0, b.RawLength)
		}
		plain, err = r.zdec.DecodeAll(plain, out)
		if err != nil {
			return nil, fmt.Errorf("blob %s: decompress: %v: %w", b.ID.Short(), err, ErrIntegrity)
		}
		if plainBuf != nil {
			*plainBuf = plain
		}
	}
	if len(plain) != int(b.RawLength) || r.hasher.sum(plain) != b.ID {
		return nil, fmt.Errorf("blob %s: content does not match its id: %w", b.ID.Short(), ErrIntegrity)
	}
	return plain, nil
}

// maxBlobSize bounds the size of any blob a reader accepts.
const maxBlobSize = 128 << 20

// ReadPackHeader reads the list of blobs of the pack named id, whose size
// is size bytes.
func (r *Repository) ReadPackHeader(ctx context.Context, id ID, size int64) ([]PackedBlob, error) {
	h := Handle{Type: PackFile, Name: id.String()}
	if size < packTrailerSize {
		return nil, fmt.Errorf("pack %s: %d bytes is too short: %w", id.Short(), size, ErrIntegrity)
	}
	trailer, err := r.be.Load(ctx, h, size-packTrailerSize, packTrailerSize)
	if err != nil {
		return nil, err
	}
	n, err := parsePackTrailer(trailer, size)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", id.Short(), err)
	}
	sealed, err := r.be.Load(ctx, h, size-packTrailerSize-n, n)
	if err != nil {
		return nil, err
	}
	blobs, err := decodePackHeader(r.seal, sealed, size-packTrailerSize-n)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", id.Short(), err)
	}
	return blobs, nil
}

// SplitPack checks a whole pack file (its name, header and every blob) and
// returns its blobs with their verified plaintexts through fn. It is what
// check --read-data builds on. It decrypts in place: data is overwritten,
// and a plaintext handed to fn is valid only during that call.
//
// A pack whose content does not match its name is reported with an error,
// after its blobs were still checked one by one, so that damage is
// narrowed to the blobs that are really broken. An error with no blob
// handed to fn means the header itself is unreadable.
func (r *Repository) SplitPack(id ID, data []byte, fn func(b PackedBlob, plain []byte, err error)) error {
	nameOK := fileID(data) == id
	size := int64(len(data))
	if size < packTrailerSize {
		return fmt.Errorf("pack %s: too short: %w", id.Short(), ErrIntegrity)
	}
	n, err := parsePackTrailer(data[size-packTrailerSize:], size)
	if err != nil {
		return fmt.Errorf("pack %s: %w", id.Short(), err)
	}
	start := size - packTrailerSize - n
	blobs, err := decodePackHeader(r.seal, data[start:size-packTrailerSize], start)
	if err != nil {
		return fmt.Errorf("pack %s: %w", id.Short(), err)
	}
	var plainBuf []byte
	for _, b := range blobs {
		plain, err := r.openBlob(b, data[b.Offset:b.Offset+b.Length], &plainBuf)
		fn(b, plain, err)
	}
	if !nameOK {
		return fmt.Errorf("pack %s: content does not match its name: %w", id.Short(), ErrIntegrity)
	}
	return nil
}

// ListIndexFiles returns the names of all index files.
func (r *Repository) ListIndexFiles(ctx context.Context) ([]string, error) {
	var names []string
	err := r.be.List(ctx, IndexFile, func(name string, _ int64) error {
		names = append(names, name)
		return nil
	})
	return names, err
}

// ReadIndexFile loads and verifies one index file.
func (r *Repository) ReadIndexFile(ctx context.Context, name string) ([]IndexedBlob, []ID, error) {
	id, err := ParseID(name)
	if err != nil {
		return nil, nil, fmt.Errorf("index %s: bad name: %w", name, ErrIntegrity)
	}
	data, err := r.be.Load(ctx, Handle{Type: IndexFile, Name: name}, 0, -1)
	if err != nil {
		return nil, nil, err
	}
	if fileID(data) != id {
		return nil, nil, fmt.Errorf("index %s: content does not match its name: %w", id.Short(), ErrIntegrity)
	}
	body, err := openObject(r.seal, "index", "", data)
	if err != nil {
		return nil, nil, err
	}
	f, err := decodeIndexBody(body)
	if err != nil {
		return nil, nil, fmt.Errorf("index %s: %w", id.Short(), err)
	}
	return f.Blobs, f.Packs, nil
}

// LoadIndex reads every index file into memory. It fails on the first
// damaged index file; check reports them all.
func (r *Repository) LoadIndex(ctx context.Context) error {
	names, err := r.ListIndexFiles(ctx)
	if err != nil {
		return fmt.Errorf("load index: %w", err)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, name := range names {
		g.Go(func() error {
			blobs, _, err := r.ReadIndexFile(ctx, name)
			if err != nil {
				return fmt.Errorf("load index: %w (nightjar check tells more)", err)
			}
			r.idx.add(blobs)
			return nil
		})
	}
	return g.Wait()
}

// AdoptPacks indexes packs that no index file lists: the work of a backup
// that was interrupted after writing them. Their blobs are then reused
// instead of stored again, and the next Flush writes an index for them.
// Packs whose header cannot be read are left alone (check reports them).
func (r *Repository) AdoptPacks(ctx context.Context) (int, error) {
	type pack struct {
		id   ID
		size int64
	}
	var orphans []pack
	err := r.be.List(ctx, PackFile, func(name string, size int64) error {
		id, err := ParseID(name)
		if err == nil && !r.idx.HasPack(id) {
			orphans = append(orphans, pack{id, size})
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("list packs: %w", err)
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
			r.indexMu.Lock()
			r.unindexed = append(r.unindexed, indexed...)
			r.unindexedPacks[p.id] = true
			r.indexMu.Unlock()
			return nil
		})
	}
	err = g.Wait() // before adopted is read: every goroutine counted
	return adopted, err
}
