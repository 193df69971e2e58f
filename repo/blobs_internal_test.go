package repo

import (
	"math/rand/v2"
	"testing"

	"lukechampine.com/blake3"
)

// TestPackHasher checks packHasher against blake3.Sum256 (what fileID
// computes) for lengths around every chunk and subtree boundary, written
// whole and in pieces of random sizes.
func TestPackHasher(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 200<<10+3)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	var lengths []int
	for _, n := range []int{0, 1, 1023, 1024, 1025, 2048, 2049, 16 << 10, 16<<10 + 1, 17 << 10, 32<<10 - 1, 100 << 10, len(data)} {
		lengths = append(lengths, n)
	}
	for range 30 {
		lengths = append(lengths, rng.IntN(len(data)+1))
	}
	for _, n := range lengths {
		want := ID(blake3.Sum256(data[:n]))
		var whole packHasher
		whole.Write(data[:n])
		if got := whole.sum(); got != want {
			t.Errorf("%d bytes written at once: %s, want %s", n, got, want)
		}
		var pieces packHasher
		for rest := data[:n]; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(40<<10))
			// A piece whose memory ends where it does, as the last blob
			// in a buffer of its own size.
			pieces.Write(append([]byte(nil), rest[:k]...))
			rest = rest[k:]
		}
		if got := pieces.sum(); got != want {
			t.Errorf("%d bytes written in pieces: %s, want %s", n, got, want)
		}
	}
}
