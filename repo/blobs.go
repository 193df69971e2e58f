package repo

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
)

// packer collects sealed blobs until it holds a pack's worth.
type packer struct {
	kind  PackKind
	out   packOutput // nil until the pack's first blob
	blobs []PackedBlob
}

// packOutput takes a pack's bytes as its blobs are added: into a buffer
// that is saved whole, or straight into the backend (PackStreamer).
type packOutput interface {
	// addSealed appends a sealed blob to the pack and returns where it
	// starts and the pack's size after it. It takes over sealed, a
	// buffer of Repository.compressBufs, and puts it back once its bytes
	// are written. A streamed pack writes them in the background: the
	// error of a failed write comes from a later addSealed or finish.
	addSealed(sealed *[]byte) (offset, size int, err error)
	// finish appends the header and trailer and stores the pack.
	finish(ctx context.Context, r *Repository, blobs []PackedBlob) (id ID, size int, err error)
	// abort throws the pack away.
	abort(r *Repository)
}

// newPackOutput starts a pack of kind. failed is told the error of a
// streamed pack's failed write as soon as it happens.
func (r *Repository) newPackOutput(ctx context.Context, kind PackKind, failed func(error)) (packOutput, error) {
	if ps, ok := Capability[PackStreamer](r.be); ok {
		s, err := ps.NewPackStream(ctx, kind)
		if err == nil {
			return newStreamedPack(s, &r.compressBufs, failed), nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
	}
	return &bufferedPack{buf: r.packBuffer(), bufs: &r.compressBufs}, nil
}

// bufferedPack holds the whole pack in memory and saves it at the end.
type bufferedPack struct {
	buf  []byte
	bufs *sync.Pool // where sealed blobs go back once copied
}

func (b *bufferedPack) addSealed(sealed *[]byte) (int, int, error) {
	offset := len(b.buf)
	b.buf = append(b.buf, *sealed...)
	b.bufs.Put(sealed)
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

// streamedPack hands each sealed blob to a goroutine of its own, which
// hashes it (for the pack's name) and writes it to the backend. The packer
// is held only to queue the blob: a write that waits for the disk (a
// local data pack is written past the page cache, 2 MiB at a time) or the
// network no longer stops the other savers, which used to wait for the
// packer with their blobs compressed, leaving a core idle.
type streamedPack struct {
	s    PackStream
	h    seqHasher  // unkeyed: the pack's name
	size int        // bytes queued
	bufs *sync.Pool // where sealed blobs go back once written
	// onFail is told a failed write at once, so that the session stops
	// without waiting for the next blob or the pack's end.
	onFail func(error)

	queue   chan *[]byte  // sealed blobs to write, in pack order
	written chan struct{} // closed when the goroutine has ended
	failed  chan struct{} // closed when a write failed; err says why
	err     error
}

// streamedPackQueue is how many sealed blobs a streamed pack holds while
// its goroutine writes: at most a few MiB, and enough for the savers to
// go on through one 2 MiB write to the disk.
const streamedPackQueue = 8

func newStreamedPack(s PackStream, bufs *sync.Pool, onFail func(error)) *streamedPack {
	p := &streamedPack{
		s: s, bufs: bufs, onFail: onFail,
		queue:   make(chan *[]byte, streamedPackQueue),
		written: make(chan struct{}),
		failed:  make(chan struct{}),
	}
	go p.writeQueued()
	return p
}

// writeQueued writes the queued blobs until the queue is closed. After a
// failed write it only gives the buffers back.
func (p *streamedPack) writeQueued() {
	defer close(p.written)
	for sealed := range p.queue {
		if p.err == nil {
			if err := p.write(*sealed); err != nil {
				p.err = err
				close(p.failed)
				p.onFail(err)
			}
		}
		p.bufs.Put(sealed)
	}
}

func (p *streamedPack) addSealed(sealed *[]byte) (int, int, error) {
	select {
	case <-p.failed:
		p.bufs.Put(sealed)
		return 0, 0, p.err
	default:
	}
	n := len(*sealed)
	select {
	case p.queue <- sealed:
	case <-p.failed:
		p.bufs.Put(sealed)
		return 0, 0, p.err
	}
	p.size += n
	return p.size - n, p.size, nil
}

func (p *streamedPack) write(b []byte) error {
	p.h.Write(b)
	_, err := p.s.Write(b)
	return err
}

// drain waits until every queued blob is written and returns the first
// failed write's error.
func (p *streamedPack) drain() error {
	close(p.queue)
	<-p.written
	return p.err
}

func (p *streamedPack) finish(ctx context.Context, r *Repository, blobs []PackedBlob) (ID, int, error) {
	err := p.drain()
	tail := appendPackTail(r.seal, nil, blobs)
	if err == nil {
		err = p.write(tail)
	}
	if err != nil {
		p.s.Abort()
		return ID{}, 0, err
	}
	p.size += len(tail)
	id := p.h.sum()
	return id, p.size, p.s.Commit(ctx, id.String())
}

func (p *streamedPack) abort(*Repository) {
	_ = p.drain() // the pack is thrown away, written or not
	p.s.Abort()
}

// sampleSize is the size of the samples worthCompressing tries.
const sampleSize = 4 << 10

// trialMinSize is the smallest blob worthCompressing tries samples of.
// Below it the trial costs more than it can save: compressing a random
// 64 KiB whole takes about 10 µs, the two samples 9 µs, while on the Go
// tree's files of 16 to 32 KiB and 32 to 64 KiB, which mostly compress,
// the samples took 30% and 17% of the time of compressing them whole.
const trialMinSize = 128 << 10

// worthCompressing guesses cheaply whether data compresses: it compresses
// a sample from the start and one from the middle, and gives up on data
// (typically already compressed or encrypted) where neither saves 1/32.
// On a random 256 KiB chunk the samples take 9 µs against 44 µs for
// compressing it whole; on text, one sample adds about 2%.
func (r *Repository) worthCompressing(data, buf []byte) bool {
	if len(data) < trialMinSize {
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
		if cerr := r.idx.cacheErr(); cerr != nil {
			return nil, fmt.Errorf("blob %s: %w (%w)", id.Short(), ErrNotFound, cerr)
		}
		return nil, fmt.Errorf("blob %s: %w", id.Short(), ErrNotFound)
	}
	plain, err := r.loadPlace(ctx, b, buf)
	if err != nil && ctx.Err() == nil && !errors.Is(err, ErrStorageUnavailable) {
		// A blob stored again after its pack was lost, cut short or
		// damaged has another place (Index.alternates); a storage that
		// failed after its retries would only fail those reads too.
		for _, alt := range r.idx.alternates(id) {
			if p, aerr := r.loadPlace(ctx, alt, buf); aerr == nil {
				return p, nil
			}
		}
	}
	return plain, err
}

// loadPlace reads blob b from its pack.
func (r *Repository) loadPlace(ctx context.Context, b IndexedBlob, buf *BlobBuffer) ([]byte, error) {
	h := Handle{Type: PackFile, Name: b.Pack.String()}
	var sealed []byte
	var err error
	if b.Type == TreeBlob {
		sealed, err = r.loadTreeInto(ctx, h, int64(b.Offset), int(b.Length), buf.sealed)
	} else {
		sealed, err = r.loadInto(ctx, h, int64(b.Offset), int(b.Length), buf.sealed)
	}
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", b.ID.Short(), err)
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

// loadTreeInto is loadInto for a tree blob: through the backend's
// TreePackLoader when it has one (a local copy of the pack).
func (r *Repository) loadTreeInto(ctx context.Context, h Handle, offset int64, length int, buf []byte) ([]byte, error) {
	if tl, ok := Capability[TreePackLoader](r.be); ok {
		data := grow(buf, length)[:length]
		err := tl.LoadTreePackInto(ctx, h, offset, data)
		if err == nil {
			return data, nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return nil, err
		}
	}
	return r.loadInto(ctx, h, offset, length, buf)
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

// authenticateSealedBlob checks that sealed is an intact sealed blob as b
// describes it (ID, type, compression and raw length): it opens the seal,
// bound to b's ID, into *scratch (grown if need be) and throws the
// plaintext away, without decompressing it. An uncompressed plaintext
// must be RawLength bytes long. The seal proves that these are the bytes
// sealed for this ID; unlike openBlob it does not hash the plaintext
// against the ID, which would need it decompressed.
func (r *Repository) authenticateSealedBlob(b PackedBlob, sealed []byte, scratch *[]byte) error {
	if !b.Type.valid() || b.Compression > compressZstd || b.RawLength > maxBlobSize {
		return fmt.Errorf("blob %s: bad type, compression or raw length: %w", b.ID.Short(), ErrIntegrity)
	}
	plain, err := r.seal.open(grow(*scratch, len(sealed))[:0], sealed, b.ID[:])
	if err != nil {
		return fmt.Errorf("blob %s: %w", b.ID.Short(), err)
	}
	*scratch = plain[:0]
	if b.Compression == compressNone && len(plain) != int(b.RawLength) {
		return fmt.Errorf("blob %s: %d bytes of plaintext, its raw length is %d: %w", b.ID.Short(), len(plain), b.RawLength, ErrIntegrity)
	}
	return nil
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
	names, _, err := r.listIndexFiles(ctx)
	return names, err
}

// listIndexFiles lists the index files, and how many blobs they hold
// about (told by their sizes), for a sorted load (startLoad).
func (r *Repository) listIndexFiles(ctx context.Context) (names []string, expected int, err error) {
	err = r.be.List(ctx, IndexFile, func(name string, size int64) error {
		names = append(names, name)
		expected += int(size / indexEntrySize)
		return nil
	})
	return names, expected, err
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

// LoadIndex reads every index file into memory. A damaged index file
// does not stop it: it is named in IndexDamage, and the packs that no
// readable index file lists are indexed from their headers instead, so
// that backups and restores go on (repair index replaces the file). Any
// other failure to read an index file is an error.
//
// With a local index cache (UseIndexCache) that covers some of the index
// files listed, it reads only the others; when there is none to use and
// the index is big, it builds one from the index files and answers from
// it (indexcacheload.go).
func (r *Repository) LoadIndex(ctx context.Context) error {
	names, expected, err := r.listIndexFiles(ctx)
	if err != nil {
		return fmt.Errorf("load index: %w", err)
	}
	// Only a load into an empty index is the index files' alone: blobs
	// already there (a writer's, not yet in an index file) must not go
	// into a cache that says it covers just these files.
	if r.indexCacheRoot != "" && r.idx.Len() == 0 {
		return r.loadIndexWithCache(ctx, names, expected)
	}
	return r.loadIndexFiles(ctx, names, expected)
}

// loadIndexFiles reads the named index files into the index.
func (r *Repository) loadIndexFiles(ctx context.Context, names []string, expected int) error {
	add := r.idx.add
	load := r.idx.startLoad(expected)
	if load != nil {
		add = load.addFile
	}
	var mu sync.Mutex
	var damaged []IndexDamage
	g, gctx := errgroup.WithContext(ctx)
	// An index file being read costs about 4 times its size until it is
	// added: more files at a time than cores only add to the peak.
	g.SetLimit(min(4, runtime.GOMAXPROCS(0)))
	for _, name := range names {
		g.Go(func() error {
			blobs, _, err := r.ReadIndexFile(gctx, name)
			if errors.Is(err, ErrIntegrity) {
				mu.Lock()
				damaged = append(damaged, IndexDamage{Name: name, Err: err})
				mu.Unlock()
				return nil
			}
			if err != nil {
				return fmt.Errorf("load index: %w (nightjar check tells more)", err)
			}
			add(blobs)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if load != nil {
		load.finish()
	}
	sort.Slice(damaged, func(i, j int) bool { return damaged[i].Name < damaged[j].Name })
	r.indexDamage = damaged
	if len(damaged) == 0 {
		return nil
	}
	n, err := r.indexUnlistedPacks(ctx)
	r.indexedFromHeaders = n
	return err
}
