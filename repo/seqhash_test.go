package repo

import (
	"math/rand/v2"
	"testing"

	"lukechampine.com/blake3"
)

// TestSeqHasher checks seqHasher against the library's BLAKE3, plain (what
// fileID computes) and keyed (blob IDs), for lengths around every chunk
// and subtree boundary and random ones, written whole and in pieces of
// random sizes, with a hasher used again after reset.
func TestSeqHasher(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 600<<10+3)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	key := make([]byte, 32)
	for i := range key {
		key[i] = byte(rng.Uint32())
	}
	lengths := []int{0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 2049, 3 << 10, 15 << 10, 16 << 10, 16<<10 + 1, 17 << 10,
		32<<10 - 1, 32 << 10, 32<<10 + 1, 64 << 10, 100 << 10, 256 << 10, 256<<10 + 1, 512<<10 - 1, len(data)}
	for range 30 {
		lengths = append(lengths, rng.IntN(len(data)+1))
	}
	keyedOnce := newSeqHasher(key)
	for _, n := range lengths {
		plain := ID(blake3.Sum256(data[:n]))
		var keyed ID
		ref := blake3.New(32, key)
		ref.Write(data[:n])
		ref.Sum(keyed[:0])
		for _, c := range []struct {
			name string
			h    *seqHasher
			want ID
		}{
			{"plain", &seqHasher{}, plain},
			{"keyed", newSeqHasher(key), keyed},
		} {
			c.h.Write(data[:n])
			if got := c.h.sum(); got != c.want {
				t.Errorf("%s, %d bytes written at once: %s, want %s", c.name, n, got, c.want)
			}
			c.h.reset()
			for rest := data[:n]; len(rest) > 0; {
				k := min(len(rest), 1+rng.IntN(40<<10))
				// A piece whose memory ends where it does, as the last
				// blob in a buffer of its own size, every other one in
				// a larger buffer whose bytes after it are not its own.
				piece := rest[:k]
				if rng.IntN(2) == 0 {
					piece = append([]byte(nil), piece...)
				}
				c.h.Write(piece)
				rest = rest[k:]
			}
			if got := c.h.sum(); got != c.want {
				t.Errorf("%s, %d bytes written in pieces after a reset: %s, want %s", c.name, n, got, c.want)
			}
		}
		keyedOnce.reset()
		keyedOnce.Write(data[:n])
		if got := keyedOnce.sum(); got != keyed {
			t.Errorf("keyed, one hasher reused, %d bytes: %s, want %s", n, got, keyed)
		}
	}
}
