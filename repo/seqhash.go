package repo

import (
	"encoding/binary"
	"math/bits"

	"lukechampine.com/blake3/guts"
)

// seqHasher computes BLAKE3-256, plain (its zero value: a streamed pack's
// name, fileID) or keyed (blob IDs, newSeqHasher), in the goroutine that
// calls it. blake3.Hasher.Write hashes every 16 KiB of a large write in a
// goroutine of its own and waits for them all. Measured in a first backup
// of the mixed set (docs/PERFORMANCE.md, "The first backup's idle
// cores"): the pack's writer, the one goroutine through which every byte
// of a backup passes, spent most of its time waiting for those goroutines
// to be scheduled between the savers' compressions (16 s of an 18 s
// backup on a loaded machine), and blob IDs, hashed by the savers, paid
// the goroutines' cost on every chunk. This hashes the same tree, up to
// 16 chunks of 1 KiB at a time with the same SIMD code (guts), in order:
// 2,350 to 2,511 MB/s on one core against the library's 1,711 to 1,805.
//
// Every byte but the last group's goes through guts.CompressBuffer in
// whole groups of guts.MaxSIMD chunks, the width of its SIMD code, at
// chunk counters that are multiples of the group: a hasher fed pieces of
// any size (a pack's blobs as they are sealed, a stream read in pieces)
// compresses them as fast as one large write. Buffering one chunk instead,
// as blake3.Hasher does, left each piece's first chunk to the portable
// code and the chunks after it to narrower subtrees until the counter was
// aligned again. Best of six runs on one core at load 5 (docs/PERFORMANCE.md,
// "Whole groups for BLAKE3"): a pack's name 2,948 -> 3,704 MB/s, a blob
// ID of 256 KiB 3,096 -> 3,856 MB/s.
type seqHasher struct {
	keyed bool
	key   [8]uint32 // with keyed; else guts.IV
	// The roots of complete subtrees of groups of guts.MaxSIMD chunks, one
	// per height at most: stack[i] is taken when bit i of groups is set
	// (as in blake3.Hasher, in groups instead of chunks).
	stack  [64][8]uint32
	groups uint64 // whole groups hashed
	// What follows the groups: at most one group, never compressed until
	// more is written, since the last group holds the root's chunk (sum).
	buf    [guts.MaxSIMD * guts.ChunkSize]byte
	buflen int
}

// newSeqHasher returns a hasher of BLAKE3-256 keyed with the 32 bytes of
// key.
func newSeqHasher(key []byte) *seqHasher {
	h := &seqHasher{keyed: true}
	for i := range h.key {
		h.key[i] = binary.LittleEndian.Uint32(key[i*4:])
	}
	return h
}

// keyAndFlags returns the key words and the flags of every compression.
func (h *seqHasher) keyAndFlags() (*[8]uint32, uint32) {
	if h.keyed {
		return &h.key, guts.FlagKeyedHash
	}
	return &guts.IV, 0
}

// reset forgets what was written; the key stays.
func (h *seqHasher) reset() {
	h.groups, h.buflen = 0, 0
}

func (h *seqHasher) Write(p []byte) {
	key, flags := h.keyAndFlags()
	if h.buflen > 0 {
		n := copy(h.buf[h.buflen:], p)
		h.buflen += n
		p = p[n:]
		if len(p) == 0 {
			return
		}
		// The buffer is full and more follows: it is not the last group.
		h.push(guts.ChainingValue(guts.CompressBuffer(&h.buf, len(h.buf), key, h.groups*guts.MaxSIMD, flags)))
		h.buflen = 0
	}
	for len(p) > len(h.buf) {
		group := (*[guts.MaxSIMD * guts.ChunkSize]byte)(p)
		h.push(guts.ChainingValue(guts.CompressBuffer(group, len(group), key, h.groups*guts.MaxSIMD, flags)))
		p = p[len(group):]
	}
	h.buflen = copy(h.buf[:], p)
}

// push adds the root of the group that follows the groups hashed so far,
// merging it with the complete subtrees before it.
func (h *seqHasher) push(cv [8]uint32) {
	key, flags := h.keyAndFlags()
	i := 0
	for h.groups&(1<<i) != 0 {
		cv = guts.ChainingValue(guts.ParentNode(h.stack[i], cv, key, flags))
		i++
	}
	h.stack[i] = cv
	h.groups++
}

// sum returns the hash of everything written.
func (h *seqHasher) sum() ID {
	key, flags := h.keyAndFlags()
	// The last group, whole or not (a single chunk, or nothing, comes back
	// as that chunk's node), merged with the subtrees before it.
	n := guts.CompressBuffer(&h.buf, h.buflen, key, h.groups*guts.MaxSIMD, flags)
	for i := bits.TrailingZeros64(h.groups); i < bits.Len64(h.groups); i++ {
		if h.groups&(1<<i) != 0 {
			n = guts.ParentNode(h.stack[i], guts.ChainingValue(n), key, flags)
		}
	}
	n.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(n))
	return ID(out[:32])
}
