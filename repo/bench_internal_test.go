package repo

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// Benchmarks of the stages a blob goes through, alone, on one core, for a
// chunk of the default average size. Compare their MB/s with the whole
// pipeline's (BenchmarkSaveBlob, and bench/compare).

const benchChunk = 256 << 10

func randomChunk() []byte {
	b := make([]byte, benchChunk)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// textChunk is compressible: repeated words in varying order.
func textChunk() []byte {
	words := []string{"backup ", "schedule ", "restore ", "repository ", "snapshot ", "chunk ", "index\n", "pack "}
	rng := rand.New(rand.NewPCG(3, 3))
	var b bytes.Buffer
	for b.Len() < benchChunk {
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.Bytes()[:benchChunk]
}

func BenchmarkBlobID(b *testing.B) {
	h := newBlobHasher(make([]byte, 32))
	data := randomChunk()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		h.sum(data)
	}
}

func BenchmarkSeal(b *testing.B) {
	s, err := newAEADSealer(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	data := randomChunk()
	out := make([]byte, 0, len(data)+s.overhead())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		out = s.seal(out[:0], data, data[:32])
	}
}

func BenchmarkOpen(b *testing.B) {
	s, err := newAEADSealer(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	data := randomChunk()
	sealed := s.seal(nil, data, data[:32])
	out := make([]byte, 0, len(data))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if out, err = s.open(out[:0], sealed, data[:32]); err != nil {
			b.Fatal(err)
		}
	}
}

func benchCompress(b *testing.B, data []byte) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	r := &Repository{zenc: enc}
	out := make([]byte, 0, len(data))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if r.worthCompressing(data, out) {
			out = enc.EncodeAll(data, out[:0])
		}
	}
}

func BenchmarkCompressText(b *testing.B)   { benchCompress(b, textChunk()) }
func BenchmarkCompressRandom(b *testing.B) { benchCompress(b, randomChunk()) }

func BenchmarkDecompressText(b *testing.B) {
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	dec, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	data := textChunk()
	compressed := enc.EncodeAll(data, nil)
	out := make([]byte, 0, len(data))
	b.SetBytes(int64(len(data)))
	var err error
	for b.Loop() {
		if out, err = dec.DecodeAll(compressed, out[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBlobIDUnaligned hashes a chunk whose length is no multiple of
// BLAKE3's 1 KiB chunks, as nearly every blob's is.
func BenchmarkBlobIDUnaligned(b *testing.B) {
	h := newBlobHasher(make([]byte, 32))
	data := randomChunk()[:benchChunk-333]
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		h.sum(data)
	}
}

// BenchmarkPackName hashes 16 MiB written in pieces of sealed blobs'
// sizes (60 to 300 KiB, any length), as a pack's writer does for its
// name.
func BenchmarkPackName(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	var pieces []int
	for n := 0; n < len(data); {
		k := min(len(data)-n, 60<<10+rng.IntN(240<<10))
		pieces = append(pieces, k)
		n += k
	}
	var h seqHasher
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		h.reset()
		rest := data
		for _, k := range pieces {
			h.Write(rest[:k])
			rest = rest[k:]
		}
		h.sum()
	}
}
