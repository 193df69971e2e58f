package chunker

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
)

// Bounds on Params, checked by Validate.
const (
	minAvg = 1 << 8  // smallest Params.Avg: 256 bytes
	maxAvg = 1 << 26 // largest Params.Avg: 64 MiB
	minMin = 64      // smallest Params.Min
	maxMax = 1 << 28 // largest Params.Max: 256 MiB
)

// masks[n] is the cut mask with n one-bits, for n from log2(minAvg)-2 to
// log2(maxAvg)+2. Bit i of the mask (i counting from 0) is set for
// i = 63 - floor(k*48/n), k = 0..n-1: the bits are spread evenly over the top
// 48 bits of the hash, so every mask depends on the last 64 input bytes. The
// values are part of the repository format.
var masks = [...]uint64{
	6:  0x8080808080800000,
	7:  0x8204081020400000,
	8:  0x8208208208200000,
	9:  0x8420842084200000,
	10: 0x8842108842100000,
	11: 0x8884442221100000,
	12: 0x8888888888880000,
	13: 0x9112224448880000,
	14: 0x9224489224480000,
	15: 0x9248924892480000,
	16: 0x9249249249240000,
	17: 0xa492924949240000,
	18: 0xa4a4a4a4a4a40000,
	19: 0xa5294a5294a40000,
	20: 0xa94a94a94a940000,
	21: 0xaa54aa54aa540000,
	22: 0xaaa554aaa5540000,
	23: 0xaaaaaa5555540000,
	24: 0xaaaaaaaaaaaa0000,
	25: 0xd55555aaaaaa0000,
	26: 0xd55aaad55aaa0000,
	27: 0xd5aad5aad5aa0000,
	28: 0xd6ad6ad6ad6a0000,
}

// Params are the chunk size bounds in bytes. Chunks are longer than Min and at
// most Max bytes, except the last chunk of a stream, which may be shorter.
//
// With b = log2(Avg), the mask tested from Min to Avg bytes into a chunk has
// b+2 one-bits and the mask tested from Avg to Max has b-2 (see masks). For
// DefaultParams (Avg = 256 KiB, b = 18) they are 0xa94a94a94a940000 (20 bits)
// and 0x9249249249240000 (16 bits). On random input the mean chunk size is
// then about 1.14 Avg for Min = Avg/4 and 1.19 Avg for Min = Avg/2.
type Params struct {
	Min, Avg, Max int
}

// DefaultParams are the chunk sizes of new repositories, chosen by
// measurement with bench/chunksizes (see docs/CHUNKING.md).
var DefaultParams = Params{Min: 64 << 10, Avg: 256 << 10, Max: 1 << 20}

// ErrParams reports chunk size parameters that Validate rejects.
var ErrParams = errors.New("invalid chunker parameters")

// Validate reports whether p can be used: Avg a power of two from 256 bytes
// to 64 MiB, and 64 <= Min < Avg < Max <= 256 MiB.
func (p Params) Validate() error {
	switch {
	case p.Avg < minAvg || p.Avg > maxAvg || p.Avg&(p.Avg-1) != 0:
		return fmt.Errorf("%w: avg %d: want a power of two from %d to %d", ErrParams, p.Avg, minAvg, maxAvg)
	case p.Min < minMin || p.Min >= p.Avg:
		return fmt.Errorf("%w: min %d: want at least %d and less than avg %d", ErrParams, p.Min, minMin, p.Avg)
	case p.Max <= p.Avg || p.Max > maxMax:
		return fmt.Errorf("%w: max %d: want more than avg %d and at most %d", ErrParams, p.Max, p.Avg, maxMax)
	}
	return nil
}

// masks returns the strict mask (tested below Avg) and the loose mask (tested
// from Avg on) of valid params.
func (p Params) masks() (strict, loose uint64) {
	b := bits.TrailingZeros(uint(p.Avg))
	return masks[b+2], masks[b-2]
}

// maxEmptyReads is how many (0, nil) reads in a row NextInto accepts before it
// gives up with io.ErrNoProgress, as bufio does.
const maxEmptyReads = 100

// Chunker splits a stream into chunks.
//
// The cut rule, part of the repository format: for a chunk starting at offset
// 0 of the remaining input, the hash h starts at 0 and is updated as
// h = (h << 1) + gear[b] (mod 2^64) for each byte b from offset Min on. After
// the byte at offset i is added, the chunk ends after that byte (length i+1)
// if h & strict == 0 for i < Avg or h & loose == 0 for i >= Avg. A chunk
// without such a point ends at Max bytes, or at the end of the input.
type Chunker struct {
	r             io.Reader
	gear          *[256]uint64
	min, avg, max int
	strict, loose uint64

	carry []byte // bytes read past the last chunk: the next one's start
	chunk []byte // Next's chunk buffer (NextInto's callers bring theirs)
	eof   bool   // r has returned io.EOF
	err   error  // sticky read error
}

// readSize is how much a Chunker asks its reader for at a time. A chunk's
// bytes are read where the chunk is returned, and what is read past its
// cut point is copied to the start of the next one: half a read on
// average. Reading a megabyte ahead, as an earlier Chunker did, cost two
// copies of every byte (moving the unread bytes to the front of its
// buffer, and the caller's copy of each chunk) where this costs an eighth
// of one at the default chunk size; reads from the page cache take the
// same system time at 64 KiB as at 1 MiB (docs/PERFORMANCE.md).
const readSize = 64 << 10

// New returns a Chunker reading r. It panics if g is nil or p is invalid:
// check parameters from configuration with Params.Validate first.
func New(r io.Reader, g *Gear, p Params) *Chunker {
	if g == nil {
		panic("chunker: nil gear")
	}
	if err := p.Validate(); err != nil {
		panic("chunker: " + err.Error())
	}
	strict, loose := p.masks()
	return &Chunker{
		r:      r,
		gear:   &g.table,
		min:    p.Min,
		avg:    p.Avg,
		max:    p.Max,
		strict: strict,
		loose:  loose,
		carry:  make([]byte, 0, min(readSize, p.Max)), // less than one read is ever carried
	}
}

// Reset makes c read r from its start, reusing c's buffers.
func (c *Chunker) Reset(r io.Reader) {
	c.r = r
	c.carry = c.carry[:0]
	c.eof = false
	c.err = nil
}

// Next returns the next chunk, a slice of c's buffer valid until the next call
// of Next or Reset. It returns io.EOF after the last chunk, and a read error
// of the underlying reader, wrapped, on this and every later call.
func (c *Chunker) Next() ([]byte, error) {
	if c.chunk == nil {
		c.chunk = make([]byte, 0, c.max)
	}
	return c.NextInto(c.chunk)
}

// NextInto is Next with the chunk in dst's memory (dst's length does not
// matter; it grows if its capacity is short of the chunk): the caller owns
// the chunk, and can hand it to another goroutine without copying it. A
// buffer of Max bytes never grows, and the chunk keeps its capacity.
func (c *Chunker) NextInto(dst []byte) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	dst = append(dst[:0], c.carry...)
	c.carry = c.carry[:0]
	var s cutSearch
	empty := 0
	for {
		if n := c.find(&s, dst, c.eof); n > 0 {
			c.carry = append(c.carry, dst[n:]...)
			return dst[:n], nil
		}
		if c.eof {
			return nil, io.EOF
		}
		want := min(len(dst)+readSize, c.max)
		if cap(dst) < want {
			dst = slices.Grow(dst, want-len(dst))
		}
		n, err := c.r.Read(dst[len(dst):want])
		dst = dst[:len(dst)+n]
		switch {
		case err == io.EOF:
			c.eof = true
		case err != nil:
			c.err = fmt.Errorf("read chunker input: %w", err)
			return nil, c.err
		case n == 0:
			empty++
			if empty == maxEmptyReads {
				c.err = fmt.Errorf("read chunker input: %w", io.ErrNoProgress)
				return nil, c.err
			}
		default:
			empty = 0
		}
	}
}

// cutSearch is how far the search for a chunk's cut point has got.
type cutSearch struct {
	pos int    // bytes of the chunk hashed, from min on (0: none yet)
	h   uint64 // the hash after them
}

// find goes on with the search s over data, the chunk's bytes read so
// far, of which s has seen the first s.pos, and returns the chunk's
// length once it is known: at a cut point, at max, or at the end of data
// if the input ends there (final). It returns 0 while more bytes are
// needed to know.
func (c *Chunker) find(s *cutSearch, data []byte, final bool) int {
	if len(data) > c.max {
		data = data[:c.max]
	}
	s.pos = max(s.pos, c.min)
	if s.pos < len(data) && s.pos < c.avg {
		end := min(len(data), c.avg)
		n, h := roll(c.gear, s.h, data[s.pos:end], c.strict)
		if n > 0 {
			return s.pos + n
		}
		s.pos, s.h = end, h
	}
	if s.pos < len(data) && s.pos >= c.avg {
		n, h := roll(c.gear, s.h, data[s.pos:], c.loose)
		if n > 0 {
			return s.pos + n
		}
		s.pos, s.h = len(data), h
	}
	if len(data) == c.max || final {
		return len(data)
	}
	return 0
}

// roll continues the hash h over data and returns the length of data up to
// its first cut point for mask, or 0 if it has none, and the final hash.
//
// It takes two bytes a step: from h and the gear values g0, g1 of the next two
// bytes, the hashes after them are 2h+g0 and 4h+(2g0+g1). Computing the second
// from h, not from the first, leaves one shift-add per two bytes on the
// loop-carried chain instead of one per byte, which bounded the one-byte loop.
// Both are the exact hashes mod 2^64, so the cut points are unchanged.
func roll(gear *[256]uint64, h uint64, data []byte, mask uint64) (int, uint64) {
	_ = *gear // one nil check here instead of one per byte
	i := 0
	// Bounding i by a hoisted len(data)-1 lets the compiler prove i+1 is in
	// range and drop the bounds checks.
	for n := len(data) - 1; i < n; i += 2 {
		g0, g1 := gear[data[i]], gear[data[i+1]]
		if (h<<1+g0)&mask == 0 {
			return i + 1, h
		}
		h = h<<2 + (g0<<1 + g1)
		if h&mask == 0 {
			return i + 2, h
		}
	}
	if i < len(data) {
		h = h<<1 + gear[data[i]]
		if h&mask == 0 {
			return i + 1, h
		}
	}
	return 0, h
}
