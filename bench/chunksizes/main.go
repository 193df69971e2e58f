// Command chunksizes measures candidate chunker parameters on a realistic
// corpus, to choose chunker.DefaultParams (see docs/CHUNKING.md).
//
// It builds a corpus in a temporary directory from the files under /usr/lib
// and /usr/share, in an order fixed by a seed, plus some random data, chunks
// it with each candidate, then changes 1% of the bytes in place (random 4 KiB
// aligned blocks) and inserts 100 bytes at the start, chunks it again, and
// prints a Markdown table: chunk count, mean chunk size, chunker throughput,
// the bytes of chunks that are new after the change, and the index memory the
// chunks need at about 80 bytes per entry, for the corpus and for 1 TB.
//
//	go run ./bench/chunksizes [-size 200] [-random 20] [-seed 1] [-runs 3] [-keep]
package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"lukechampine.com/blake3"

	"github.com/nightjar-backup/nightjar/repo/chunker"
)

// indexEntryBytes is the in-memory cost of one index entry: a 32-byte ID plus
// pack, offset, length and map overhead.
const indexEntryBytes = 80

// candidates are the parameters compared.
var candidates = []chunker.Params{
	{Min: 16 << 10, Avg: 64 << 10, Max: 256 << 10},
	{Min: 32 << 10, Avg: 128 << 10, Max: 512 << 10},
	{Min: 64 << 10, Avg: 256 << 10, Max: 1 << 20},
	{Min: 128 << 10, Avg: 512 << 10, Max: 2 << 20},
	{Min: 256 << 10, Avg: 1 << 20, Max: 4 << 20},
	{Min: 512 << 10, Avg: 1 << 20, Max: 8 << 20},
	{Min: 512 << 10, Avg: 2 << 20, Max: 8 << 20},
	{Min: 1 << 20, Avg: 4 << 20, Max: 16 << 20},
}

func main() {
	size := flag.Int("size", 200, "corpus size in MiB")
	random := flag.Int("random", 20, "MiB of random data within the corpus")
	seed := flag.Uint64("seed", 1, "seed for file order, random data and changes")
	src := flag.String("src", "/usr/lib,/usr/share", "comma-separated directories to take files from")
	runs := flag.Int("runs", 3, "chunking runs per candidate; throughput is the best")
	keep := flag.Bool("keep", false, "keep the corpus directory")
	flag.Parse()
	if err := run(*size<<20, *random<<20, *seed, strings.Split(*src, ","), *runs, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "chunksizes:", err)
		os.Exit(1)
	}
}

func run(size, random int, seed uint64, src []string, runs int, keep bool) error {
	rng := rand.New(rand.NewPCG(seed, 0))
	dir, err := os.MkdirTemp("", "chunksizes-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(os.Stderr, "corpus in", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	corpus, nfiles, err := buildCorpus(rng, seed, src, size, random)
	if err != nil {
		return err
	}
	changed, nblocks := change(rng, corpus)
	orig, edited := filepath.Join(dir, "corpus"), filepath.Join(dir, "changed")
	if err := os.WriteFile(orig, corpus, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(edited, changed, 0o600); err != nil {
		return err
	}
	fmt.Printf("corpus: %s from %d files under %s plus %s of random data; change: %d blocks of 4 KiB (%s) overwritten, 100 bytes inserted at the start\n\n",
		humanize.IBytes(uint64(len(corpus))), nfiles, strings.Join(src, " and "),
		humanize.IBytes(uint64(random)), nblocks, humanize.IBytes(uint64(nblocks*4096)))

	fmt.Println("| min / avg / max | chunks | mean chunk | MB/s | new chunks | new bytes after change | index memory (corpus) | index memory per TB |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	g := chunker.NewGear([32]byte{1})
	for _, p := range candidates {
		var lens []int
		best := time.Duration(1<<63 - 1)
		for range runs {
			start := time.Now()
			lens, err = chunkFile(orig, g, p)
			if err != nil {
				return err
			}
			best = min(best, time.Since(start))
		}
		seen := map[[32]byte]bool{}
		for _, c := range split(corpus, lens) {
			seen[blake3.Sum256(c)] = true
		}
		changedLens, err := chunkFile(edited, g, p)
		if err != nil {
			return err
		}
		newChunks, newBytes := 0, 0
		for _, c := range split(changed, changedLens) {
			if id := blake3.Sum256(c); !seen[id] {
				seen[id] = true
				newChunks++
				newBytes += len(c)
			}
		}
		mean := len(corpus) / len(lens)
		fmt.Printf("| %s / %s / %s | %d | %s | %.0f | %d | %s (%.1f%%) | %s | %s |\n",
			humanize.IBytes(uint64(p.Min)), humanize.IBytes(uint64(p.Avg)), humanize.IBytes(uint64(p.Max)),
			len(lens), humanize.IBytes(uint64(mean)),
			float64(len(corpus))/1e6/best.Seconds(),
			newChunks, humanize.IBytes(uint64(newBytes)), 100*float64(newBytes)/float64(len(corpus)),
			humanize.IBytes(uint64(len(seen)-newChunks)*indexEntryBytes),
			humanize.Bytes(uint64(1e12/float64(mean)*indexEntryBytes)))
	}
	return nil
}

// buildCorpus concatenates the regular files under src in an order fixed by
// seed, interleaved with random blocks from rng, until it holds size bytes.
func buildCorpus(rng *rand.Rand, seed uint64, src []string, size, random int) ([]byte, int, error) {
	var files []string
	for _, root := range src {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable directories are skipped
			}
			if d.Type().IsRegular() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	if len(files) == 0 {
		return nil, 0, fmt.Errorf("no files under %s", strings.Join(src, ", "))
	}
	// Order the files by a seeded hash of their names rather than by a
	// shuffle, so that a file installed or removed since the last run moves
	// no other file.
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	type ranked struct {
		rank [32]byte
		name string
	}
	order := make([]ranked, len(files))
	for i, name := range files {
		h := blake3.New(32, key[:])
		h.Write([]byte(name))
		h.Sum(order[i].rank[:0])
		order[i].name = name
	}
	slices.SortFunc(order, func(a, b ranked) int { return bytes.Compare(a.rank[:], b.rank[:]) })

	const randomBlocks = 8
	var buf bytes.Buffer
	buf.Grow(size)
	nfiles, nextRandom := 0, 0
	for _, f := range order {
		// Spread the random data over the corpus in randomBlocks blocks.
		if nextRandom < randomBlocks && buf.Len() >= nextRandom*size/randomBlocks {
			block := make([]byte, random/randomBlocks)
			fillRandom(rng, block)
			buf.Write(block)
			nextRandom++
		}
		left := size - buf.Len()
		if left <= 0 {
			break
		}
		data, err := os.ReadFile(f.name)
		if err != nil {
			continue // unreadable files are skipped
		}
		buf.Write(data[:min(len(data), left)])
		nfiles++
	}
	return buf.Bytes(), nfiles, nil
}

// change returns a copy of corpus with 1% of its bytes overwritten in random
// distinct 4 KiB-aligned blocks and 100 random bytes inserted at the start,
// and the number of blocks overwritten.
func change(rng *rand.Rand, corpus []byte) ([]byte, int) {
	const block = 4096
	out := make([]byte, 100, 100+len(corpus))
	fillRandom(rng, out)
	out = append(out, corpus...)
	body := out[100:]
	n := len(corpus) / 100 / block
	for _, i := range rng.Perm(len(corpus) / block)[:n] {
		fillRandom(rng, body[i*block:(i+1)*block])
	}
	return out, n
}

// fillRandom fills b with bytes from rng.
func fillRandom(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// chunkFile returns the chunk lengths of the file name.
func chunkFile(name string, g *chunker.Gear, p chunker.Params) ([]int, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := chunker.New(f, g, p)
	var lens []int
	for {
		b, err := c.Next()
		if err == io.EOF {
			return lens, nil
		}
		if err != nil {
			return nil, err
		}
		lens = append(lens, len(b))
	}
}

// split cuts data into consecutive slices of the given lengths.
func split(data []byte, lens []int) [][]byte {
	out := make([][]byte, len(lens))
	for i, n := range lens {
		out[i], data = data[:n], data[n:]
	}
	return out
}
