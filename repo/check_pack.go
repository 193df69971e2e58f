package repo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
)

// checkReadWindow is how many bytes of consecutive blobs check --read-data
// reads from a pack at a time (a blob longer than that is read alone).
// Reading a pack whole, as check did before, held one pack (16 MiB) per
// reading slot, and the collector let the heap grow to twice that: on
// the mixed set that was 50 of check's 57 MiB of live heap
// (docs/PERFORMANCE.md, "Memory at every step").
const checkReadWindow = 2 << 20

// checkTailRead is how much of a pack's end the first read takes: the
// trailer and, for most packs, the whole header with it.
const checkTailRead = 64 << 10

// checkTailKeep bounds the bytes at a pack's end that streamIndexedPack
// keeps, to open as the header and trailer once the stream reaches them:
// a header of about 200,000 blobs (bench/bigrepo's packs of tiny blobs
// hold 164,000). A pack whose header is longer is read the old way.
const checkTailKeep = 8 << 20

// checkStreamBuffer is the read buffer of a pack stream: the small blobs
// of a tree pack are taken from it, a large blob is read past it.
const checkStreamBuffer = 256 << 10

// packScratch is the memory one reading slot of check --read-data reuses
// from pack to pack.
type packScratch struct {
	tail    []byte // the pack's end: header and trailer
	window  []byte // sealed blobs being checked
	plain   []byte // a decompressed blob
	in      *bufio.Reader
	results []placeResult // by index place of the pack being streamed
}

// placeResult is what streamIndexedPack found at an index place of a pack.
type placeResult struct {
	streamed bool  // the place was opened as the stream passed it
	err      error // why the blob there is broken; nil: it is whole
}

// errPackRead wraps a failure to read a pack from the backend, as
// opposed to damage found in what was read.
type errPackRead struct{ err error }

func (e errPackRead) Error() string { return e.err.Error() }
func (e errPackRead) Unwrap() error { return e.err }

// streamPack checks pack id, of size bytes as listed, the way SplitPack
// checks a pack in memory, but reads it front to back a window at a time,
// so that no more than one window and one blob of it are in memory. It
// reads the header first (from the pack's end), then the blobs in order,
// hashing every byte on the way to compare the pack with its name at the
// end. It returns the blobs the header lists, and hands each one to fn
// with why it is broken (nil: it is whole).
//
// It is the way for a backend without repo.RangeOpener; with one,
// streamIndexedPack reads a pack with one request. firstRead is how much
// of the pack's end the first read takes (checkTailRead, or a pack of
// trees whole when it is no larger than a window); the blobs it holds are
// not read again.
//
// Errors are SplitPack's: an error with no blob handed to fn means the
// header is unreadable, one after blobs were handed says the pack does
// not match its name. A failure to read from the backend is returned
// wrapped in errPackRead, whatever was handed to fn before it.
func (r *Repository) streamPack(ctx context.Context, id ID, size, firstRead int64, s *packScratch, fn func(b PackedBlob, err error)) ([]PackedBlob, error) {
	h := Handle{Type: PackFile, Name: id.String()}
	if size < packTrailerSize {
		return nil, fmt.Errorf("pack %s: too short: %w", id.Short(), ErrIntegrity)
	}
	load := func(offset int64, length int, buf []byte) ([]byte, error) {
		data, err := r.loadInto(ctx, h, offset, length, buf)
		if err != nil {
			return nil, errPackRead{err}
		}
		return data, nil
	}
	tailLen := min(size, firstRead)
	tail, err := load(size-tailLen, int(tailLen), s.tail)
	if err != nil {
		return nil, err
	}
	s.tail = tail
	tailAt := size - tailLen // where in the pack tail starts
	n, err := parsePackTrailer(tail[tailLen-packTrailerSize:], size)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", id.Short(), err)
	}
	headerAt := size - packTrailerSize - n
	if headerAt < size-tailLen {
		// A header longer than the first read: read all of it.
		if tail, err = load(headerAt, int(n+packTrailerSize), s.tail); err != nil {
			return nil, err
		}
		s.tail, tailAt = tail, headerAt
	}
	end := tail[len(tail)-int(n+packTrailerSize):] // header and trailer
	// decodePackHeader opens the sealed header into new memory: end
	// stays as read, for the hash.
	blobs, err := decodePackHeader(r.seal, end[:n], headerAt)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", id.Short(), err)
	}

	hash := &seqHasher{} // the pack's name (fileID)
	for i := 0; i < len(blobs); {
		// The window: blob i and the blobs after it that fit with it.
		start := int64(blobs[i].Offset)
		j := i + 1
		for j < len(blobs) && int64(blobs[j].Offset)+int64(blobs[j].Length)-start <= checkReadWindow {
			j++
		}
		last := blobs[j-1]
		windowEnd := int64(last.Offset) + int64(last.Length)
		var window []byte
		if start >= tailAt {
			// Read with the tail already: opened in place there, before
			// the header, which stays as read.
			window = tail[start-tailAt : windowEnd-tailAt]
		} else {
			window, err = load(start, int(windowEnd-start), s.window)
			if err != nil {
				return blobs, err
			}
			s.window = window
		}
		// Hashed before the blobs are opened: openBlob decrypts in place.
		hash.Write(window)
		for _, b := range blobs[i:j] {
			at := int64(b.Offset) - start
			_, err := r.openBlob(b, window[at:at+int64(b.Length)], &s.plain)
			fn(b, err)
		}
		i = j
	}
	hash.Write(end)
	sum := hash.sum()
	if sum != id {
		return blobs, fmt.Errorf("pack %s: content does not match its name: %w", id.Short(), ErrIntegrity)
	}
	return blobs, nil
}

// streamIndexedPack checks pack id, of size bytes as listed, as streamPack
// does, with one ranged read of the whole pack (ro: the backend's
// RangeOpener): places, the index's places in the pack sorted by offset,
// say where the blobs lie before the header that lists them is read. Each
// place is opened as the stream passes it, every byte is hashed, and the
// bytes after the last place (the header and trailer) are kept and
// opened at the end. The header is then handed blob by blob to fn as
// streamPack hands it, with what the stream found at the same place; a
// blob the header lists that no place describes exactly (an unindexed or
// misplaced one) is read again alone. A header longer than checkTailKeep,
// or one that index places ran into, sends the pack to streamPack, and so
// does a backend whose ranged reads are unsupported after all (a wrapper
// over a backend without them).
func (r *Repository) streamIndexedPack(ctx context.Context, ro RangeOpener, id ID, size int64, places []PackedBlob, s *packScratch, fn func(b PackedBlob, err error)) ([]PackedBlob, error) {
	h := Handle{Type: PackFile, Name: id.String()}
	if size < packTrailerSize {
		return nil, fmt.Errorf("pack %s: too short: %w", id.Short(), ErrIntegrity)
	}
	rc, err := ro.OpenRange(ctx, h, 0, size)
	if errors.Is(err, errors.ErrUnsupported) {
		return r.streamPack(ctx, id, size, checkTailRead, s, fn)
	}
	if err != nil {
		return nil, errPackRead{err}
	}
	defer rc.Close()
	if s.in == nil {
		s.in = bufio.NewReaderSize(rc, checkStreamBuffer)
	} else {
		s.in.Reset(rc)
	}
	in := s.in
	hash := &seqHasher{} // the pack's name (fileID)
	var pos int64        // where in the pack the stream is
	broken := func(err error) error {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return errPackRead{fmt.Errorf("read pack %s at %d: %w", id.Short(), pos, err)}
	}
	// skip hashes the next n bytes and drops them.
	skip := func(n int64) error {
		for n > 0 {
			chunk, err := in.Peek(int(min(n, int64(in.Size()))))
			hash.Write(chunk)
			in.Discard(len(chunk))
			n -= int64(len(chunk))
			pos += int64(len(chunk))
			if err != nil && n > 0 {
				return broken(err)
			}
		}
		return nil
	}
	// take reads the next n bytes into buf (grown if need be), hashed.
	take := func(n int64, buf []byte) ([]byte, error) {
		buf = grow(buf, int(n))[:n]
		if _, err := io.ReadFull(in, buf); err != nil {
			return buf, broken(err)
		}
		// Hashed before the blob is opened: openBlob decrypts in place.
		hash.Write(buf)
		pos += n
		return buf, nil
	}

	if cap(s.results) < len(places) {
		s.results = make([]placeResult, len(places))
	} else {
		s.results = s.results[:len(places)]
		clear(s.results)
	}
	for i, p := range places {
		start, end := int64(p.Offset), int64(p.Offset)+int64(p.Length)
		if start < pos || !placeWhole(end, size) {
			continue // overlaps the place before, or runs into the trailer
		}
		if err := skip(start - pos); err != nil {
			return nil, err
		}
		sealed, err := take(int64(p.Length), s.window)
		s.window = sealed
		if err != nil {
			return nil, err
		}
		_, err = r.openBlob(p, sealed, &s.plain)
		s.results[i] = placeResult{streamed: true, err: err}
	}
	rest := size - pos
	keep := min(rest, checkTailKeep)
	if err := skip(rest - keep); err != nil {
		return nil, err
	}
	tail, err := take(keep, s.tail)
	s.tail = tail
	if err != nil {
		return nil, err
	}
	sum := hash.sum()
	n, err := parsePackTrailer(tail[keep-packTrailerSize:], size)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", id.Short(), err)
	}
	headerAt := size - packTrailerSize - n
	if headerAt < size-keep {
		return r.streamPack(ctx, id, size, checkTailRead, s, fn)
	}
	end := tail[keep-(n+packTrailerSize):] // header and trailer
	blobs, err := decodePackHeader(r.seal, end[:n], headerAt)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", id.Short(), err)
	}
	for _, b := range blobs {
		if ok, err := streamedAs(places, s.results, b); ok {
			fn(b, err)
			continue
		}
		sealed, err := r.loadInto(ctx, h, int64(b.Offset), int(b.Length), s.window)
		if err != nil {
			return blobs, errPackRead{err}
		}
		s.window = sealed
		_, err = r.openBlob(b, sealed, &s.plain)
		fn(b, err)
	}
	clear(s.results) // the errors are not kept past the pack
	if sum != id {
		return blobs, fmt.Errorf("pack %s: content does not match its name: %w", id.Short(), ErrIntegrity)
	}
	return blobs, nil
}

// streamedAs returns what the stream found at the place that describes b
// exactly, if one does: places are sorted by offset, results match them.
func streamedAs(places []PackedBlob, results []placeResult, b PackedBlob) (bool, error) {
	i := sort.Search(len(places), func(i int) bool { return places[i].Offset >= b.Offset })
	for ; i < len(places) && places[i].Offset == b.Offset; i++ {
		if places[i] == b && results[i].streamed {
			return true, results[i].err
		}
	}
	return false, nil
}

// isPackRead reports whether err is a failure to read a pack rather than
// damage in it.
func isPackRead(err error) bool {
	var e errPackRead
	return errors.As(err, &e)
}

// checkPlacesBatch is the fewest index places gathered at once for the
// packs check --read-data streams (48 bytes each: 12 MiB, twice that
// while one batch is read and the next gathered); a batch is larger only
// to keep the passes over the index, one a batch, at checkPlacesPasses.
// The mixed set fits in one batch, a million small blobs take four, ten
// million eight (of 60 MiB).
const (
	checkPlacesBatch  = 1 << 18
	checkPlacesPasses = 8
)

// gatherPlaces returns the index places of the first packs of ids, sorted
// by offset, for as many packs as fit in batch places (at least one), in
// one pass over the index; counts holds the number of places in each
// pack.
func (c *checker) gatherPlaces(ids []ID, counts map[ID]int, batch int) map[ID][]PackedBlob {
	n, total := 0, 0
	for n < len(ids) && (n == 0 || total+counts[ids[n]] <= batch) {
		total += counts[ids[n]]
		n++
	}
	slot := make(map[ID]int, n)
	lists := make([][]PackedBlob, n)
	for i, id := range ids[:n] {
		slot[id] = i
		lists[i] = make([]PackedBlob, 0, counts[id])
	}
	c.r.idx.EachPlace(func(b IndexedBlob) {
		if i, ok := slot[b.Pack]; ok {
			lists[i] = append(lists[i], b.PackedBlob)
		}
	})
	out := make(map[ID][]PackedBlob, n)
	for i, id := range ids[:n] {
		l := lists[i]
		// By offset; places at one offset (a damaged index) by ID, so
		// that which of them the stream opens does not depend on the
		// order of the index.
		sort.Slice(l, func(a, b int) bool {
			if l[a].Offset != l[b].Offset {
				return l[a].Offset < l[b].Offset
			}
			return bytes.Compare(l[a].ID[:], l[b].ID[:]) < 0
		})
		out[id] = l
	}
	return out
}

// holdsTrees reports whether the index places tree blobs among places.
// check reads such a pack through the backend's LoadInto (streamPack),
// whole with one read when it is no larger than a window, even where it
// could stream it: the walk of the snapshots that follows reads its trees
// again, and on S3 finds them in the read-ahead window the pack was read
// through (one GET for the pack and none for the walk, where a stream and
// the walk's own reads made one and a dozen on the mixed set).
func holdsTrees(places []PackedBlob) bool {
	for _, p := range places {
		if p.Type == TreeBlob {
			return true
		}
	}
	return false
}
