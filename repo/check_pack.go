package repo

import (
	"context"
	"errors"
	"fmt"

	"lukechampine.com/blake3"
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

// packScratch is the memory one reading slot of check --read-data reuses
// from pack to pack.
type packScratch struct {
	tail   []byte // the pack's end: header and trailer
	window []byte // sealed blobs being checked
	plain  []byte // a decompressed blob
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
// end. It returns the blobs the header lists, and hands each one with
// its verified plaintext (valid only during the call) or why it is
// broken to fn.
//
// Errors are SplitPack's: an error with no blob handed to fn means the
// header is unreadable, one after blobs were handed says the pack does
// not match its name. A failure to read from the backend is returned
// wrapped in errPackRead, whatever was handed to fn before it.
func (r *Repository) streamPack(ctx context.Context, id ID, size int64, s *packScratch, fn func(b PackedBlob, plain []byte, err error)) ([]PackedBlob, error) {
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
	tailLen := min(size, checkTailRead)
	tail, err := load(size-tailLen, int(tailLen), s.tail)
	if err != nil {
		return nil, err
	}
	s.tail = tail
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
		s.tail = tail
	}
	end := tail[len(tail)-int(n+packTrailerSize):] // header and trailer
	// decodePackHeader opens the sealed header into new memory: end
	// stays as read, for the hash.
	blobs, err := decodePackHeader(r.seal, end[:n], headerAt)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", id.Short(), err)
	}

	hash := blake3.New(32, nil)
	for i := 0; i < len(blobs); {
		// The window: blob i and the blobs after it that fit with it.
		start := int64(blobs[i].Offset)
		j := i + 1
		for j < len(blobs) && int64(blobs[j].Offset)+int64(blobs[j].Length)-start <= checkReadWindow {
			j++
		}
		last := blobs[j-1]
		window, err := load(start, int(int64(last.Offset)+int64(last.Length)-start), s.window)
		if err != nil {
			return blobs, err
		}
		s.window = window
		// Hashed before the blobs are opened: openBlob decrypts in place.
		hash.Write(window)
		for _, b := range blobs[i:j] {
			at := int64(b.Offset) - start
			plain, err := r.openBlob(b, window[at:at+int64(b.Length)], &s.plain)
			fn(b, plain, err)
		}
		i = j
	}
	hash.Write(end)
	var sum ID
	hash.Sum(sum[:0])
	if sum != id {
		return blobs, fmt.Errorf("pack %s: content does not match its name: %w", id.Short(), ErrIntegrity)
	}
	return blobs, nil
}

// isPackRead reports whether err is a failure to read a pack rather than
// damage in it.
func isPackRead(err error) bool {
	var e errPackRead
	return errors.As(err, &e)
}
