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
type seqHasher struct {
	keyed bool
	key   [8]uint32 // with keyed; else guts.IV
	// The roots of complete subtrees, one per height at most: stack[i]
	// is taken when bit i of chunks is set (as in blake3.Hasher).
	stack  [64][8]uint32
	chunks uint64 // whole chunks hashed
	buf    [guts.ChunkSize]byte
	buflen int
	spare  [guts.MaxSIMD * guts.ChunkSize]byte // for a subtree near the end of a slice's memory
}

// seqHashTreeHeight is the height of the largest subtree seqHasher
// compresses at once: guts.MaxSIMD chunks.
const seqHashTreeHeight = 4

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
	h.chunks, h.buflen = 0, 0
}

func (h *seqHasher) Write(p []byte) {
	key, flags := h.keyAndFlags()
	if h.buflen > 0 {
		n := copy(h.buf[h.buflen:], p)
		h.buflen += n
		p = p[n:]
	}
	if h.buflen == len(h.buf) && len(p) > 0 {
		h.push(guts.ChainingValue(guts.CompressChunk(h.buf[:], key, h.chunks, flags)), 0)
		h.buflen = 0
	}
	// The last chunk stays in buf, even when whole: the root is made
	// from it (sum).
	for len(p) > len(h.buf) {
		whole := uint64((len(p) - 1) / len(h.buf))
		height := min(bits.TrailingZeros64(h.chunks), bits.Len64(whole)-1, seqHashTreeHeight)
		n := (1 << height) * len(h.buf)
		h.push(guts.ChainingValue(h.compressTree(p[:n], key, flags)), height)
		p = p[n:]
	}
	h.buflen += copy(h.buf[h.buflen:], p)
}

// compressTree hashes a complete subtree of at most guts.MaxSIMD chunks,
// which starts at chunk h.chunks.
func (h *seqHasher) compressTree(p []byte, key *[8]uint32, flags uint32) guts.Node {
	// guts.CompressBuffer takes an array of guts.MaxSIMD chunks, and its
	// SIMD code may read all of it whatever the length: a subtree of
	// fewer chunks is copied (8 KiB at most), so that no byte past p is
	// read, which may be another goroutine's.
	if len(p) == len(h.spare) {
		return guts.CompressBuffer((*[guts.MaxSIMD * guts.ChunkSize]byte)(p), len(p), key, h.chunks, flags)
	}
	copy(h.spare[:], p)
	return guts.CompressBuffer(&h.spare, len(p), key, h.chunks, flags)
}

// push adds the root of the subtree of 2^height chunks that follows the
// chunks hashed so far, merging it with the complete subtrees before it.
func (h *seqHasher) push(cv [8]uint32, height int) {
	key, flags := h.keyAndFlags()
	i := height
	for h.chunks&(1<<i) != 0 {
		cv = guts.ChainingValue(guts.ParentNode(h.stack[i], cv, key, flags))
		i++
	}
	h.stack[i] = cv
	h.chunks += 1 << height
}

// sum returns the hash of everything written.
func (h *seqHasher) sum() ID {
	key, flags := h.keyAndFlags()
	n := guts.CompressChunk(h.buf[:h.buflen], key, h.chunks, flags)
	for i := bits.TrailingZeros64(h.chunks); i < bits.Len64(h.chunks); i++ {
		if h.chunks&(1<<i) != 0 {
			n = guts.ParentNode(h.stack[i], guts.ChainingValue(n), key, flags)
		}
	}
	n.Flags |= guts.FlagRoot
	out := guts.WordsToBytes(guts.CompressNode(n))
	return ID(out[:32])
}
