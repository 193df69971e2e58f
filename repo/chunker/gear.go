package chunker

import (
	"encoding/binary"

	"lukechampine.com/blake3"
)

// gearContext is the input hashed to derive the gear table; it is part of the
// repository format.
const gearContext = "nightjar chunker gear v1"

// Gear is the table of 256 pseudo-random 64-bit values the rolling hash adds
// for each input byte.
type Gear struct {
	table [256]uint64
}

// NewGear derives the gear table from key: gear[i] is bytes 8i..8i+7, read as
// a little-endian uint64, of the first 2048 bytes of the BLAKE3 XOF output of
// BLAKE3 in keyed-hash mode with key over the 24-byte ASCII input
// "nightjar chunker gear v1". This derivation is part of the repository format.
func NewGear(key [32]byte) *Gear { return NewGearFor(key, gearContext) }

// NewGearFor derives a gear table as NewGear does, but over context: other
// uses of a rolling hash get tables of their own from the same key.
func NewGearFor(key [32]byte, context string) *Gear {
	h := blake3.New(32, key[:])
	h.Write([]byte(context)) // a blake3.Hasher never fails to write
	var out [256 * 8]byte
	// An OutputReader fills any buffer completely and never fails.
	h.XOF().Read(out[:])
	g := new(Gear)
	for i := range g.table {
		g.table[i] = binary.LittleEndian.Uint64(out[8*i:])
	}
	return g
}
