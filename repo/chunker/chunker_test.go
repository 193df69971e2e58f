package chunker

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/iotest"

	"lukechampine.com/blake3"
)

// small are parameters that give many chunks on little data.
var small = Params{Min: 1 << 10, Avg: 4 << 10, Max: 16 << 10}

// randomBytes returns n bytes of ChaCha8 output for seed; the stream for a
// seed is fixed by the Go specification of ChaCha8.
func randomBytes(seed byte, n int) []byte {
	var s [32]byte
	s[0] = seed
	b := make([]byte, n)
	rand.NewChaCha8(s).Read(b)
	return b
}

// random64M is 64 MiB of seeded pseudo-random data shared by the tests.
var random64M = sync.OnceValue(func() []byte { return randomBytes(1, 64<<20) })

// testKey returns a key whose first byte is b.
func testKey(b byte) [32]byte {
	var k [32]byte
	k[0] = b
	return k
}

// chunks returns copies of all chunks of data.
func chunks(t testing.TB, r io.Reader, g *Gear, p Params) [][]byte {
	t.Helper()
	c := New(r, g, p)
	var out [][]byte
	for {
		b, err := c.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		out = append(out, bytes.Clone(b))
	}
}

// lengths returns the length of each chunk.
func lengths(cs [][]byte) []int {
	n := make([]int, len(cs))
	for i, c := range cs {
		n[i] = len(c)
	}
	return n
}

// checkChunks fails unless cs concatenate to data and every chunk but the
// last is longer than p.Min and at most p.Max.
func checkChunks(t testing.TB, data []byte, cs [][]byte, p Params) {
	t.Helper()
	if got := bytes.Join(cs, nil); !bytes.Equal(got, data) {
		t.Fatalf("concatenated chunks (%d bytes) differ from input (%d bytes)", len(got), len(data))
	}
	for i, c := range cs {
		if len(c) > p.Max || len(c) == 0 || (i < len(cs)-1 && len(c) <= p.Min) {
			t.Fatalf("chunk %d of %d has %d bytes, want (%d, %d]", i, len(cs), len(c), p.Min, p.Max)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	tests := []struct {
		name string
		p    Params
		ok   bool
	}{
		{"default", DefaultParams, true},
		{"small", small, true},
		{"smallest", Params{Min: 64, Avg: 256, Max: 257}, true},
		{"largest", Params{Min: 1 << 20, Avg: 1 << 26, Max: 1 << 28}, true},
		{"zero", Params{}, false},
		{"avg not power of two", Params{Min: 1 << 10, Avg: 3 << 10, Max: 16 << 10}, false},
		{"avg too small", Params{Min: 64, Avg: 128, Max: 1024}, false},
		{"avg too large", Params{Min: 1 << 20, Avg: 1 << 27, Max: 1 << 28}, false},
		{"min too small", Params{Min: 63, Avg: 1024, Max: 4096}, false},
		{"min equals avg", Params{Min: 1024, Avg: 1024, Max: 4096}, false},
		{"max equals avg", Params{Min: 256, Avg: 1024, Max: 1024}, false},
		{"max too large", Params{Min: 1 << 20, Avg: 1 << 26, Max: 1<<28 + 1}, false},
		{"negative", Params{Min: -1, Avg: 1024, Max: 4096}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(%+v) = %v, want ok %v", tt.p, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrParams) {
				t.Fatalf("Validate(%+v) = %v, want ErrParams", tt.p, err)
			}
		})
	}
}

func TestNewPanicsOnInvalidParams(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New with invalid params did not panic")
		}
	}()
	New(bytes.NewReader(nil), NewGear(testKey(0)), Params{})
}

// TestMasks checks the format's mask table against the rule documented on it.
func TestMasks(t *testing.T) {
	lo, hi := bits.TrailingZeros(minAvg)-2, bits.TrailingZeros(maxAvg)+2
	if len(masks) != hi+1 {
		t.Fatalf("mask table has %d entries, want %d", len(masks), hi+1)
	}
	for n := lo; n <= hi; n++ {
		var want uint64
		for k := range n {
			want |= 1 << (63 - k*48/n)
		}
		if masks[n] != want {
			t.Errorf("masks[%d] = %#016x, want %#016x", n, masks[n], want)
		}
		if got := bits.OnesCount64(masks[n]); got != n {
			t.Errorf("masks[%d] has %d one-bits", n, got)
		}
		if masks[n]&0xffff != 0 {
			t.Errorf("masks[%d] = %#016x uses the low 16 bits", n, masks[n])
		}
	}
	// The masks of DefaultParams, as documented on Params.
	if strict, loose := DefaultParams.masks(); strict != 0xa94a94a94a940000 || loose != 0x9249249249240000 {
		t.Errorf("default masks %#016x, %#016x; want 0xa94a94a94a940000, 0x9249249249240000", strict, loose)
	}
}

// TestGearDerivation checks NewGear against the documented derivation and
// against golden values, which pin the on-disk format.
func TestGearDerivation(t *testing.T) {
	key := testKey(7)
	h := blake3.New(32, key[:])
	h.Write([]byte("nightjar chunker gear v1"))
	var out [2048]byte
	h.XOF().Read(out[:])
	g := NewGear(key)
	for i, v := range g.table {
		var le [8]byte
		for j := range le {
			le[j] = byte(v >> (8 * j))
		}
		if !bytes.Equal(le[:], out[8*i:8*i+8]) {
			t.Fatalf("gear[%d] = %#016x, want little-endian bytes %x", i, v, out[8*i:8*i+8])
		}
	}

	golden := []struct {
		name        string
		key         [32]byte
		first, last uint64
	}{
		{"zero key", [32]byte{}, 0x3b112d4c1d81722c, 0x79d16b34000cd1cc},
		{"key 7", testKey(7), 0x2a7b822c5a249283, 0xcef55396c6b33bcb},
	}
	for _, tt := range golden {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGear(tt.key)
			if g.table[0] != tt.first || g.table[255] != tt.last {
				t.Fatalf("gear[0], gear[255] = %#016x, %#016x; want %#016x, %#016x",
					g.table[0], g.table[255], tt.first, tt.last)
			}
		})
	}
}

// TestGoldenCuts pins the cut rule: a change here breaks deduplication
// against every existing repository.
func TestGoldenCuts(t *testing.T) {
	data := randomBytes(9, 64<<10)
	got := lengths(chunks(t, bytes.NewReader(data), NewGear(testKey(0)), small))
	want := []int{5004, 4508, 4913, 7140, 4257, 6210, 4607, 3870, 2741, 4895, 5219, 4851, 4565, 2756}
	if !slices.Equal(got, want) {
		t.Fatalf("chunk lengths = %v, want %v", got, want)
	}
}

func TestEmptyInput(t *testing.T) {
	c := New(bytes.NewReader(nil), NewGear(testKey(0)), small)
	for range 2 {
		if b, err := c.Next(); err != io.EOF {
			t.Fatalf("Next on empty input = %d bytes, %v; want io.EOF", len(b), err)
		}
	}
}

func TestChunks(t *testing.T) {
	g := NewGear(testKey(0))
	tests := []struct {
		name string
		data []byte
		p    Params
	}{
		{"one byte", []byte{1}, small},
		{"min bytes", randomBytes(2, small.Min), small},
		{"min+1 bytes", randomBytes(2, small.Min+1), small},
		{"max bytes", randomBytes(2, small.Max), small},
		{"random small params", randomBytes(3, 8<<20), small},
		{"random default params", random64M(), DefaultParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := chunks(t, bytes.NewReader(tt.data), g, tt.p)
			checkChunks(t, tt.data, cs, tt.p)
		})
	}
}

// refCut is the cut rule as documented on Chunker, one byte a step: the
// one-byte loop that find replaced, kept as its reference.
func refCut(g *Gear, p Params, data []byte) int {
	if len(data) <= p.Min {
		return len(data)
	}
	if len(data) > p.Max {
		data = data[:p.Max]
	}
	strict, loose := p.masks()
	normal := min(p.Avg, len(data))
	var h uint64
	i := p.Min
	for ; i < normal; i++ {
		h = (h << 1) + g.table[data[i]]
		if h&strict == 0 {
			return i + 1
		}
	}
	for ; i < len(data); i++ {
		h = (h << 1) + g.table[data[i]]
		if h&loose == 0 {
			return i + 1
		}
	}
	return len(data)
}

// TestCutMatchesReference checks that find, which takes two bytes a step,
// finds the cut points of refCut, whether given the data at once or in
// pieces, for several keys, parameters with odd and even
// phase lengths, lengths around Min, Avg and Max, and zero, random and
// low-entropy data.
func TestCutMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var randomKey [32]byte
	for i := range randomKey {
		randomKey[i] = byte(rng.Uint32())
	}
	keys := [][32]byte{testKey(0), testKey(1), testKey(7), randomKey}
	params := []Params{
		{Min: 64, Avg: 256, Max: 1024},
		{Min: 65, Avg: 256, Max: 1023},
		{Min: 100, Avg: 512, Max: 777},
		{Min: 255, Avg: 1024, Max: 4099},
		small,
	}
	words := []string{"the ", "a ", "nightjar ", "backup ", "chunk ", "of ", "\n", "\t", "0", "1"}
	text := func(n int) []byte {
		var b []byte
		for len(b) < n {
			b = append(b, words[rng.IntN(len(words))]...)
		}
		return b[:n]
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	inputs := []struct {
		name string
		data func(n int) []byte
	}{
		{"zeros", func(n int) []byte { return make([]byte, n) }},
		{"random", random},
		{"text", text},
		{"repeated", func(n int) []byte { return bytes.Repeat([]byte("nightjar"), n/8+1)[:n] }},
		{"sparse", func(n int) []byte { // mostly zeros, some random bytes
			b := make([]byte, n)
			for range n / 64 {
				b[rng.IntN(n)] = byte(rng.Uint32())
			}
			return b
		}},
	}
	// Cuts at the last strict and the first loose byte, seen with odd and even
	// strict phases: the step pairs must not blur the boundary.
	type boundary struct{ loose, odd bool }
	seen := map[boundary]bool{}
	for _, key := range keys {
		g := NewGear(key)
		for _, p := range params {
			c := New(bytes.NewReader(nil), g, p)
			check := func(name string, data []byte) {
				t.Helper()
				want := refCut(g, p, data)
				if got := c.find(&cutSearch{}, data, true); got != want {
					t.Fatalf("key %x, %+v, %s, %d bytes: cut %d, want %d", key[0], p, name, len(data), got, want)
				}
				// The same search given the data as reads bring it, in
				// pieces of random sizes.
				var s cutSearch
				for n := 0; len(data) > 0; {
					n = min(n+1+rng.IntN(p.Max/3), len(data))
					if got := c.find(&s, data[:n], n == len(data)); got > 0 {
						if got != want {
							t.Fatalf("key %x, %+v, %s, %d bytes in pieces: cut %d, want %d", key[0], p, name, len(data), got, want)
						}
						break
					}
				}
				if len(data) > p.Avg && (want == p.Avg || want == p.Avg+1) {
					seen[boundary{want == p.Avg+1, (p.Avg-p.Min)%2 == 1}] = true
				}
			}
			for _, in := range inputs {
				// Every length near the bounds.
				for _, base := range []int{p.Min, p.Avg, p.Max} {
					for n := base - 3; n <= base+3; n++ {
						check(in.name, in.data(n))
					}
				}
				// Every chunk of a stream, and cuts from random offsets and
				// with random ends.
				data := in.data(8 * p.Max)
				for off := 0; off < len(data); {
					n := refCut(g, p, data[off:])
					check(in.name, data[off:])
					off += n
				}
				for range 300 {
					off := rng.IntN(len(data))
					end := off + rng.IntN(min(len(data)-off, p.Max+2)+1)
					check(in.name, data[off:end])
				}
			}
		}
	}
	for _, b := range []boundary{{false, false}, {false, true}, {true, false}, {true, true}} {
		if !seen[b] {
			t.Errorf("no cut at the strict/loose boundary %+v: the inputs miss a case", b)
		}
	}
}

func TestZerosCutAtMax(t *testing.T) {
	data := make([]byte, 3*small.Max+5)
	got := lengths(chunks(t, bytes.NewReader(data), NewGear(testKey(0)), small))
	want := []int{small.Max, small.Max, small.Max, 5}
	if !slices.Equal(got, want) {
		t.Fatalf("chunk lengths of zeros = %v, want %v", got, want)
	}
}

// TestDeterminism checks that chunks depend only on the bytes, not on how the
// reader delivers them or on an earlier use of the Chunker.
func TestDeterminism(t *testing.T) {
	data := randomBytes(4, 2<<20)
	g := NewGear(testKey(0))
	want := lengths(chunks(t, bytes.NewReader(data), g, small))
	tests := []struct {
		name string
		r    func() io.Reader
	}{
		{"same reader again", func() io.Reader { return bytes.NewReader(data) }},
		{"one byte reads", func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }},
		{"half reads", func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) }},
		{"data with eof", func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := lengths(chunks(t, tt.r(), g, small)); !slices.Equal(got, want) {
				t.Fatalf("chunk lengths differ: got %d chunks, want %d", len(got), len(want))
			}
		})
	}
	t.Run("reset after partial use", func(t *testing.T) {
		c := New(bytes.NewReader(randomBytes(5, 1<<20)), g, small)
		if _, err := c.Next(); err != nil {
			t.Fatal(err)
		}
		c.Reset(bytes.NewReader(data))
		var got []int
		for {
			b, err := c.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, len(b))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("chunk lengths after Reset differ: got %d chunks, want %d", len(got), len(want))
		}
	})
}

// refLengths returns the chunk lengths of data by refCut, one byte a step,
// independent of how a Chunker reads.
func refLengths(g *Gear, p Params, data []byte) []int {
	var out []int
	for len(data) > 0 {
		n := refCut(g, p, data)
		out = append(out, n)
		data = data[n:]
	}
	return out
}

// emptyReads returns (0, nil) before every read of r.
type emptyReads struct {
	r    io.Reader
	turn bool
}

func (e *emptyReads) Read(p []byte) (int, error) {
	if e.turn = !e.turn; e.turn {
		return 0, nil
	}
	return e.r.Read(p)
}

// TestNextInto checks NextInto against refCut, whatever the capacity of
// the caller's buffers and however the reader delivers the bytes, with
// the chunks' buffers handed back late and scribbled on before reuse, as
// backup's savers hand them back: a chunk stays intact until its buffer
// comes back, and reusing a buffer changes no later chunk. A buffer of Max
// bytes holds its chunk with its capacity.
func TestNextInto(t *testing.T) {
	g := NewGear(testKey(0))
	for _, p := range []Params{small, DefaultParams} {
		data := random64M()[:8<<20]
		want := refLengths(g, p, data)
		readers := map[string]func() io.Reader{
			"whole reads":   func() io.Reader { return bytes.NewReader(data) },
			"half reads":    func() io.Reader { return iotest.HalfReader(bytes.NewReader(data)) },
			"data with eof": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(data)) },
			"empty reads":   func() io.Reader { return &emptyReads{r: iotest.HalfReader(bytes.NewReader(data))} },
		}
		for name, r := range readers {
			for _, size := range []int{0, p.Min, p.Max} {
				for _, depth := range []int{0, 3} {
					c := New(r(), g, p)
					type held struct {
						chunk []byte
						off   int
					}
					var queue []held // chunks not yet handed back, oldest first
					var free [][]byte
					off := 0
					for i := 0; ; i++ {
						if len(queue) > depth {
							h := queue[0]
							queue = queue[1:]
							if !bytes.Equal(h.chunk, data[h.off:h.off+len(h.chunk)]) {
								t.Fatalf("%+v, %s, buffer of %d: chunk at %d changed before its buffer came back", p, name, size, h.off)
							}
							b := h.chunk[:cap(h.chunk)]
							for j := range b {
								b[j] = 0xee
							}
							free = append(free, b[:0])
						}
						buf := make([]byte, 0, size)
						if len(free) > 0 {
							buf, free = free[len(free)-1], free[:len(free)-1]
						}
						chunk, err := c.NextInto(buf)
						if err == io.EOF {
							if i != len(want) || off != len(data) {
								t.Fatalf("%+v, %s, buffer of %d: %d chunks of %d bytes, want %d of %d", p, name, size, i, off, len(want), len(data))
							}
							break
						}
						if err != nil {
							t.Fatal(err)
						}
						if i >= len(want) || len(chunk) != want[i] || !bytes.Equal(chunk, data[off:off+len(chunk)]) {
							t.Fatalf("%+v, %s, buffer of %d: chunk %d (%d bytes at %d) differs from refCut's", p, name, size, i, len(chunk), off)
						}
						if cap(buf) == p.Max && (&chunk[0] != &buf[:1][0] || cap(chunk) != p.Max) {
							t.Fatalf("%+v, %s: chunk %d is not in the buffer of Max bytes, with its capacity", p, name, i)
						}
						queue = append(queue, held{chunk, off})
						off += len(chunk)
					}
				}
			}
		}
	}
}

// expectedMean returns the mean chunk size of p on random input: cuts are a
// Poisson process of rate 2^-(b+2) per byte from Min to Avg and 2^-(b-2) from
// Avg to Max, so the mean is Min + the integral of P(no cut yet) up to Max.
func expectedMean(p Params) float64 {
	p1, p2 := 1/(4*float64(p.Avg)), 4/float64(p.Avg)
	l1, l2 := float64(p.Avg-p.Min), float64(p.Max-p.Avg)
	return float64(p.Min) + (1-math.Exp(-p1*l1))/p1 + math.Exp(-p1*l1)*(1-math.Exp(-p2*l2))/p2
}

// TestAverageSize checks the mean chunk size on 64 MiB of random data against
// Avg (within 25%) and against expectedMean (within four standard errors of
// the sample mean).
func TestAverageSize(t *testing.T) {
	data := random64M()
	g := NewGear(testKey(0))
	tests := []struct {
		name string
		p    Params
	}{
		{"default", DefaultParams},
		{"1K/4K/16K", small},
		{"16K/64K/256K", Params{Min: 16 << 10, Avg: 64 << 10, Max: 256 << 10}},
		{"min half of avg", Params{Min: 32 << 10, Avg: 64 << 10, Max: 512 << 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls := lengths(chunks(t, bytes.NewReader(data), g, tt.p))
			ls = ls[:len(ls)-1] // the last chunk is cut by the end of data
			var sum, sumSq float64
			for _, l := range ls {
				sum += float64(l)
				sumSq += float64(l) * float64(l)
			}
			n := float64(len(ls))
			mean := sum / n
			stderr := math.Sqrt((sumSq/n - mean*mean) / n)
			want, avg := expectedMean(tt.p), float64(tt.p.Avg)
			t.Logf("%d chunks, mean %.3f x avg (standard error %.3f), expected %.3f x avg",
				len(ls), mean/avg, stderr/avg, want/avg)
			if math.Abs(mean-avg) > 0.25*avg {
				t.Errorf("mean chunk size %.0f, want within 25%% of avg %d", mean, tt.p.Avg)
			}
			if math.Abs(mean-want) > 4*stderr {
				t.Errorf("mean chunk size %.0f, want %.0f within four standard errors (%.0f)", mean, want, 4*stderr)
			}
		})
	}
}

func TestKeyChangesCuts(t *testing.T) {
	data := randomBytes(6, 1<<20)
	a := lengths(chunks(t, bytes.NewReader(data), NewGear(testKey(1)), small))
	b := lengths(chunks(t, bytes.NewReader(data), NewGear(testKey(2)), small))
	if slices.Equal(a, b) {
		t.Fatalf("keys 1 and 2 give the same %d cut points", len(a))
	}
	// Cut points are reached through the same min skip, so a few may agree
	// by chance; most must differ.
	cuts := func(ls []int) map[int]bool {
		m, off := map[int]bool{}, 0
		for _, l := range ls {
			off += l
			m[off] = true
		}
		return m
	}
	ca, cb := cuts(a), cuts(b)
	shared := 0
	for off := range ca {
		if cb[off] {
			shared++
		}
	}
	if shared > len(ca)/10 {
		t.Fatalf("keys 1 and 2 share %d of %d cut points", shared, len(ca))
	}
}

// TestInsertAtStart checks that inserting 100 bytes at the start of a file
// changes at most two chunks.
func TestInsertAtStart(t *testing.T) {
	data := random64M()
	g := NewGear(testKey(0))
	seen := map[[32]byte]bool{}
	for _, c := range chunks(t, bytes.NewReader(data), g, DefaultParams) {
		seen[blake3.Sum256(c)] = true
	}
	changed := append(randomBytes(8, 100), data...)
	cs := chunks(t, bytes.NewReader(changed), g, DefaultParams)
	checkChunks(t, changed, cs, DefaultParams)
	newChunks, newBytes := 0, 0
	for _, c := range cs {
		if !seen[blake3.Sum256(c)] {
			newChunks++
			newBytes += len(c)
		}
	}
	t.Logf("%d of %d chunks (%d bytes) new after inserting 100 bytes", newChunks, len(cs), newBytes)
	if newChunks > 2 {
		t.Fatalf("%d chunks new after inserting 100 bytes at the start, want at most 2", newChunks)
	}
}

// errReader returns its data, then err.
type errReader struct {
	data []byte
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		r    io.Reader
		want error
	}{
		{"error at start", &errReader{err: boom}, boom},
		{"error after data", &errReader{data: randomBytes(1, 100), err: boom}, boom},
		{"no progress", &errReader{}, io.ErrNoProgress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(tt.r, NewGear(testKey(0)), small)
			for range 2 {
				if _, err := c.Next(); !errors.Is(err, tt.want) {
					t.Fatalf("Next = %v, want %v", err, tt.want)
				}
			}
		})
	}
}

func TestResetDoesNotAllocate(t *testing.T) {
	data := randomBytes(3, 256<<10)
	r := bytes.NewReader(data)
	c := New(r, NewGear(testKey(0)), small)
	allocs := testing.AllocsPerRun(10, func() {
		r.Reset(data)
		c.Reset(r)
		for {
			if _, err := c.Next(); err != nil {
				break
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("chunking one stream after Reset allocates %v times, want 0", allocs)
	}
}

// FuzzChunker checks, for any input, that the chunks concatenate to the
// input, respect the bounds, and do not depend on read sizes.
func FuzzChunker(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add(make([]byte, 3000))
	f.Add(randomBytes(1, 5000))
	f.Add(bytes.Repeat([]byte("nightjar"), 1000))
	p := Params{Min: 64, Avg: 256, Max: 1024}
	g := NewGear(testKey(0))
	f.Fuzz(func(t *testing.T, data []byte) {
		cs := chunks(t, bytes.NewReader(data), g, p)
		checkChunks(t, data, cs, p)
		one := chunks(t, iotest.OneByteReader(bytes.NewReader(data)), g, p)
		if !slices.Equal(lengths(cs), lengths(one)) {
			t.Fatalf("chunks differ with one-byte reads: %v vs %v", lengths(cs), lengths(one))
		}
	})
}

func BenchmarkChunker(b *testing.B) {
	data := randomBytes(1, 64<<20)
	r := bytes.NewReader(data)
	c := New(r, NewGear(testKey(0)), DefaultParams)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r.Reset(data)
		c.Reset(r)
		for {
			if _, err := c.Next(); err != nil {
				break
			}
		}
	}
}
