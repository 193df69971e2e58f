package directio

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestWriter writes a file in parts the way restore's workers do for a
// big file: runs of chunks at unaligned offsets, holes between them, runs
// longer than the staging buffer, parts in any order, a Writer for each
// part. Every byte of the result is checked, and with direct I/O
// available the writer must not have fallen back to the page cache.
func TestWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		direct bool
	}{{"direct", true}, {"page cache only", false}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			tmp := filepath.Join(t.TempDir(), "file")
			out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			var direct io.WriterAt // nil: page cache only
			if tc.direct {
				d := OpenSecond(tmp, out)
				if d == nil {
					t.Skipf("the file system under %s refuses O_DIRECT", tmp)
				}
				defer d.Close()
				direct = d
			}

			type chunk struct {
				off  int64
				data []byte // nil: a hole
			}
			const size = 11<<20 + 12345
			want := make([]byte, size)
			var parts [][]chunk
			for offset := int64(0); offset < size; {
				var part []chunk
				for range 1 + rng.IntN(6) {
					n := min(int64(1+rng.IntN(3<<20)), size-offset)
					if n == 0 {
						break
					}
					c := chunk{off: offset}
					if rng.IntN(4) != 0 {
						c.data = make([]byte, n)
						for i := range c.data {
							c.data[i] = byte(rng.Uint32() | 1)
						}
						copy(want[offset:], c.data)
					}
					part = append(part, c)
					offset += n
				}
				parts = append(parts, part)
			}
			rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })

			stage := AlignedBuffer(4 << 20)
			var lock sync.Mutex
			for _, part := range parts {
				w := NewWriter(out, direct, stage, &lock)
				for _, c := range part {
					if c.data == nil {
						err = w.Flush()
					} else {
						err = w.Stage(c.off, c.data)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				if tc.direct && !w.Direct() {
					t.Fatal("the file system refused a direct write: the writer fell back to the page cache")
				}
			}
			if err := out.Truncate(size); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(tmp)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("file has %d bytes, want %d", len(got), len(want))
			}
			if i := firstDifference(got, want); i >= 0 {
				t.Fatalf("file differs from the data written from byte %d on", i)
			}
		})
	}
}

func firstDifference(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}
