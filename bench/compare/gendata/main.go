// Command gendata writes the reproducible data sets of the side-by-side
// benchmark in bench/compare (see docs/PERFORMANCE.md) and applies their
// reproducible changes.
//
//	gendata gen    -out DIR [-seed 1]            # the ~1 GiB "generated" set, in DIR/data
//	gendata mutate -dir DIR [-seed 1]            # its change: 1% of the bytes in place + 100 bytes at the start of the big files
//	gendata large  -out DIR [-mib 512] [-seed 1] # one random and one compressible file of MIB MiB each, in DIR
//	gendata change -dir DIR [-seed 1]            # 1% of the small files, a span each + 100 bytes at the start of compressible-*.txt
//	gendata tiny   -out DIR [-n 200000] [-max 1024] [-seed 1]
//
// Every file's content comes from its own ChaCha8 stream, seeded from the
// seed and the file's name, so the same seed gives byte-identical trees.
//
// The generated set (gen; 1.07 GB = 1023 MiB, 20,212 files):
//
//	big/     rand-256M.bin, rand-128M.bin (incompressible), text-192M.txt (text-like)
//	medium/  random files: 4×32 MiB, 8×8 MiB, 16×2 MiB, 32×512 KiB, 64×128 KiB,
//	         text files: 4×16 MiB, 16×2 MiB, 64×256 KiB,
//	         and dup-of-rand-8M-000.bin, a copy of an 8 MiB random file
//	small/   20 × 20 folders × 50 files = 20,000 files of 0 B to 32 KiB
//	         (log-uniform sizes; 70% text, 25% random, 5% copies of earlier files, ~1% empty)
//
// Its change (mutate): 1% of the set's bytes are overwritten in place:
// first 1% of the small files (every 100th, by a seeded choice) are
// rewritten whole with new content of the same size, then the rest of the
// budget goes into 256 KiB spans at seeded random 4 KiB-aligned offsets in
// the big and medium files (a file is picked with probability proportional
// to its size). Finally 100 random bytes are inserted at the start of each
// file under big/. Files keep their inode.
//
// The large files (large): DIR/random-<MIB>M.bin, incompressible, and
// DIR/compressible-<MIB>M.txt, text-like (zstd makes about a third of it).
// Their content depends only on the seed and the file name, not on DIR.
//
// The change of any tree (change), used for the Go source tree and the
// large files: the small files are the regular files of 1 byte to under
// 1 MiB (an empty file cannot be changed in place); exactly 1% of them,
// rounded up, are picked by a seeded choice from the list sorted by
// relative path, and in each one span of up to 4 KiB (the whole file when
// smaller) at a seeded offset is overwritten in place with new random
// bytes, each differing from the old one: same size, same inode. Then 100
// random bytes are inserted at the start of every large compressible file,
// a regular file of at least 1 MiB named compressible-*.txt (in place, same
// inode). It prints what it changed.
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		fl := flag.NewFlagSet("gen", flag.ExitOnError)
		out := fl.String("out", "", "folder to create")
		seed := fl.Uint64("seed", 1, "seed")
		_ = fl.Parse(os.Args[2:])
		err = gen(*out, *seed)
	case "mutate":
		fl := flag.NewFlagSet("mutate", flag.ExitOnError)
		dir := fl.String("dir", "", "folder made by gen")
		seed := fl.Uint64("seed", 1, "seed")
		_ = fl.Parse(os.Args[2:])
		err = mutate(*dir, *seed)
	case "large":
		fl := flag.NewFlagSet("large", flag.ExitOnError)
		out := fl.String("out", "", "folder to write the two files into (made if missing)")
		mibs := fl.Int("mib", 512, "size of each file in MiB")
		seed := fl.Uint64("seed", 1, "seed")
		_ = fl.Parse(os.Args[2:])
		err = large(*out, *mibs, *seed)
	case "change":
		fl := flag.NewFlagSet("change", flag.ExitOnError)
		dir := fl.String("dir", "", "folder to change")
		seed := fl.Uint64("seed", 1, "seed")
		_ = fl.Parse(os.Args[2:])
		err = change(*dir, *seed)
	case "tiny":
		fl := flag.NewFlagSet("tiny", flag.ExitOnError)
		out := fl.String("out", "", "folder to create")
		n := fl.Int("n", 200000, "number of files")
		maxSize := fl.Int("max", 1024, "largest file size in bytes")
		perDir := fl.Int("per-dir", 1000, "files per folder")
		seed := fl.Uint64("seed", 1, "seed")
		_ = fl.Parse(os.Args[2:])
		err = tiny(*out, *n, *maxSize, *perDir, *seed)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendata:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gendata gen -out DIR [-seed N] | mutate -dir DIR [-seed N] | large -out DIR [-mib MIB] [-seed N] |\n"+
		"       change -dir DIR [-seed N] | tiny -out DIR [-n N] [-max BYTES] [-seed N]")
	os.Exit(2)
}

// rng returns the random stream of one named purpose.
func rng(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	_, _ = io.WriteString(h, name)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[0:], seed)
	binary.LittleEndian.PutUint64(key[8:], h.Sum64())
	copy(key[16:], "nightjar-bench16")
	return rand.New(rand.NewChaCha8(key))
}

// textGen produces text-like bytes: words from a fixed vocabulary drawn
// with Zipf frequencies, in lines of varying length with some numbers and
// punctuation. zstd compresses it about 3:1, like prose or source code.
type textGen struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab [][]byte
}

var vocabulary [][]byte

func init() {
	r := rng(0, "vocabulary")
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	vocabulary = make([][]byte, 8192)
	for i := range vocabulary {
		n := 2 + int(math.Min(12, r.ExpFloat64()*4))
		w := make([]byte, n)
		for j := range w {
			// Skewed letter frequencies, as in natural language.
			k := int(math.Min(float64(len(letters)-1), r.ExpFloat64()*6))
			w[j] = letters[k]
		}
		vocabulary[i] = w
	}
}

func newText(r *rand.Rand) *textGen {
	return &textGen{r: r, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(vocabulary)-1)), vocab: vocabulary}
}

// fill writes len(p) text bytes into p.
func (t *textGen) fill(p []byte) {
	i := 0
	col := 0
	lineLen := 40 + t.r.IntN(60)
	for i < len(p) {
		var w []byte
		switch x := t.r.IntN(100); {
		case x < 3:
			w = fmt.Appendf(nil, "%d", t.r.IntN(100000))
		default:
			w = t.vocab[t.zipf.Uint64()]
		}
		i += copy(p[i:], w)
		col += len(w)
		if i >= len(p) {
			break
		}
		var sep byte = ' '
		switch {
		case col >= lineLen:
			sep = '\n'
			col = 0
			lineLen = 40 + t.r.IntN(60)
		case t.r.IntN(12) == 0:
			sep = ','
		case t.r.IntN(20) == 0:
			sep = '.'
		}
		p[i] = sep
		i++
		if sep == ',' || sep == '.' {
			if i < len(p) {
				p[i] = ' '
				i++
			}
		}
	}
}

// content fills p with random (text == false) or text-like bytes.
func content(r *rand.Rand, p []byte, text bool) {
	if text {
		newText(r).fill(p)
		return
	}
	for i := 0; i < len(p); i += 8 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], r.Uint64())
		copy(p[i:], b[:])
	}
}

// writeFile writes size bytes of generated content to path, seeded from
// the part of path from its last "data/" on.
func writeFile(path string, size int64, text bool, seed uint64) error {
	return writeNamed(path, path[strings.LastIndex(path, "/data/")+1:], size, text, seed)
}

// writeNamed writes size bytes of generated content to path, from the
// random stream of name.
func writeNamed(path, name string, size int64, text bool, seed uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	r := rng(seed, name)
	var tg *textGen
	if text {
		tg = newText(r)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := int64(len(buf))
		if left < n {
			n = left
		}
		if tg != nil {
			tg.fill(buf[:n])
		} else {
			content(r, buf[:n], false)
		}
		if _, err := w.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		left -= n
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

const (
	kib = 1 << 10
	mib = 1 << 20
)

func gen(out string, seed uint64) error {
	if out == "" {
		return fmt.Errorf("gen: -out is required")
	}
	// Names are made relative to a folder called "data" so that the content
	// does not depend on where the set is written.
	root := filepath.Join(out, "data")
	if _, err := os.Stat(root); err == nil {
		return fmt.Errorf("gen: %s exists", root)
	}
	for _, d := range []string{"big", "medium", "small"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	var files, total int64
	write := func(rel string, size int64, text bool) error {
		files++
		total += size
		return writeFile(filepath.Join(root, rel), size, text, seed)
	}
	// The big and medium files are written by one worker per core; each
	// has its own random stream, so the order does not matter.
	type job struct {
		rel  string
		size int64
		text bool
	}
	var jobs []job
	queue := func(rel string, size int64, text bool) error {
		files++
		total += size
		jobs = append(jobs, job{rel, size, text})
		return nil
	}
	big := []struct {
		name string
		size int64
		text bool
	}{
		{"big/rand-256M.bin", 256 * mib, false},
		{"big/rand-128M.bin", 128 * mib, false},
		{"big/text-192M.txt", 192 * mib, true},
	}
	for _, b := range big {
		if err := queue(b.name, b.size, b.text); err != nil {
			return err
		}
	}
	medium := []struct {
		n    int
		size int64
		text bool
		tag  string
	}{
		{4, 32 * mib, false, "32M"}, {8, 8 * mib, false, "8M"}, {16, 2 * mib, false, "2M"},
		{32, 512 * kib, false, "512K"}, {64, 128 * kib, false, "128K"},
		{4, 16 * mib, true, "16M"}, {16, 2 * mib, true, "2M"}, {64, 256 * kib, true, "256K"},
	}
	for _, m := range medium {
		for i := 0; i < m.n; i++ {
			kind, ext := "rand", "bin"
			if m.text {
				kind, ext = "text", "txt"
			}
			if err := queue(fmt.Sprintf("medium/%s-%s-%03d.%s", kind, m.tag, i, ext), m.size, m.text); err != nil {
				return err
			}
		}
	}
	next := make(chan job)
	errs := make(chan error, runtime.NumCPU())
	for range runtime.NumCPU() {
		go func() {
			var err error
			for j := range next {
				if err == nil {
					err = writeFile(filepath.Join(root, j.rel), j.size, j.text, seed)
				}
			}
			errs <- err
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	for range runtime.NumCPU() {
		if err := <-errs; err != nil {
			return err
		}
	}
	if err := copyFile(filepath.Join(root, "medium/rand-8M-000.bin"), filepath.Join(root, "medium/dup-of-rand-8M-000.bin")); err != nil {
		return err
	}
	files++
	total += 8 * mib

	// The small tree.
	r := rng(seed, "small tree")
	var smallNames []string
	for a := 0; a < 20; a++ {
		for b := 0; b < 20; b++ {
			dir := fmt.Sprintf("small/d%02d/e%02d", a, b)
			if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
				return err
			}
			for c := 0; c < 50; c++ {
				x := r.IntN(100)
				var size int64
				if x != 0 { // ~1% empty files
					size = int64(math.Exp(math.Log(16) + r.Float64()*(math.Log(32*kib)-math.Log(16))))
				}
				text := x < 71
				ext := "txt"
				if !text {
					ext = "dat"
				}
				rel := fmt.Sprintf("%s/f%02d.%s", dir, c, ext)
				if x >= 95 && len(smallNames) > 0 { // a copy of an earlier file
					src := smallNames[r.IntN(len(smallNames))]
					if err := copyFile(filepath.Join(root, src), filepath.Join(root, rel)); err != nil {
						return err
					}
					st, err := os.Stat(filepath.Join(root, rel))
					if err != nil {
						return err
					}
					files++
					total += st.Size()
				} else if err := write(rel, size, text); err != nil {
					return err
				}
				smallNames = append(smallNames, rel)
			}
		}
	}
	fmt.Printf("gendata: %d files, %d bytes (%.1f MiB) in %s\n", files, total, float64(total)/mib, root)
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

type entry struct {
	rel  string
	size int64
}

func mutate(dir string, seed uint64) error {
	root := filepath.Join(dir, "data")
	var small, large []entry
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		total += info.Size()
		if strings.HasPrefix(rel, "small/") {
			small = append(small, entry{rel, info.Size()})
		} else {
			large = append(large, entry{rel, info.Size()})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(small, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })
	slices.SortFunc(large, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })
	r := rng(seed, "mutate")
	budget := total / 100
	var changed, smallChanged, spans int64

	// 1% of the small files, rewritten whole in place.
	perm := r.Perm(len(small))
	for _, i := range perm[:len(small)/100] {
		e := small[i]
		buf := make([]byte, e.size)
		content(r, buf, strings.HasSuffix(e.rel, ".txt"))
		if err := writeAt(filepath.Join(root, e.rel), buf, 0); err != nil {
			return err
		}
		changed += e.size
		smallChanged++
	}

	// The rest in 256 KiB spans in the big and medium files.
	var largeTotal int64
	for _, e := range large {
		largeTotal += e.size
	}
	for changed < budget {
		x := r.Int64N(largeTotal)
		var e entry
		for _, e = range large {
			if x < e.size {
				break
			}
			x -= e.size
		}
		n := min(256*kib, budget-changed, e.size)
		off := r.Int64N(e.size-n+1) &^ (4*kib - 1)
		buf := make([]byte, n)
		content(r, buf, strings.HasSuffix(e.rel, ".txt"))
		if err := writeAt(filepath.Join(root, e.rel), buf, off); err != nil {
			return err
		}
		changed += n
		spans++
	}

	// 100 bytes at the start of every big file.
	var inserted int
	for _, e := range large {
		if !strings.HasPrefix(e.rel, "big/") {
			continue
		}
		p := filepath.Join(root, e.rel)
		old, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		buf := make([]byte, 100, 100+len(old))
		content(r, buf, strings.HasSuffix(e.rel, ".txt"))
		if err := writeAt(p, append(buf, old...), 0); err != nil {
			return err
		}
		inserted++
	}
	fmt.Printf("gendata: of %d bytes, overwrote %d in place (%.2f%%: %d small files, %d spans of up to 256 KiB); inserted 100 bytes at the start of %d big files\n",
		total, changed, 100*float64(changed)/float64(total), smallChanged, spans, inserted)
	return nil
}

// writeAt writes p at off into the existing file path, keeping its inode.
func writeAt(path string, p []byte, off int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(p, off); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tiny writes n files of 1 to maxSize random bytes each (so every file is
// one distinct chunk), perDir to a folder, in two halves a/ and b/ so that
// half of the set can be backed up alone.
func tiny(out string, n, maxSize, perDir int, seed uint64) error {
	if out == "" {
		return fmt.Errorf("tiny: -out is required")
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("tiny: %s exists", out)
	}
	r := rng(seed, "tiny")
	buf := make([]byte, maxSize)
	var total int64
	for i := 0; i < n; i++ {
		half := "a"
		if i >= n/2 {
			half = "b"
		}
		dir := filepath.Join(out, half, fmt.Sprintf("d%04d", i/perDir))
		if i%perDir == 0 || i == n/2 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		size := 1 + r.IntN(maxSize)
		content(r, buf[:size], false)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%06d", i)), buf[:size], 0o644); err != nil {
			return err
		}
		total += int64(size)
	}
	fmt.Printf("gendata: %d files, %d bytes in %s\n", n, total, out)
	return nil
}

// largeNames returns the names of the two files of the large set.
func largeNames(mibs int) (random, compressible string) {
	return fmt.Sprintf("random-%dM.bin", mibs), fmt.Sprintf("compressible-%dM.txt", mibs)
}

// large writes the random and the compressible file of mibs MiB each into
// out, one per worker.
func large(out string, mibs int, seed uint64) error {
	if out == "" {
		return fmt.Errorf("large: -out is required")
	}
	if mibs < 1 {
		return fmt.Errorf("large: -mib must be at least 1")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	random, compressible := largeNames(mibs)
	for _, name := range []string{random, compressible} {
		if _, err := os.Lstat(filepath.Join(out, name)); err == nil {
			return fmt.Errorf("large: %s exists", filepath.Join(out, name))
		}
	}
	size := int64(mibs) * mib
	errs := make(chan error, 2)
	go func() { errs <- writeNamed(filepath.Join(out, random), "large/"+random, size, false, seed) }()
	go func() {
		errs <- writeNamed(filepath.Join(out, compressible), "large/"+compressible, size, true, seed)
	}()
	err1, err2 := <-errs, <-errs
	if err1 != nil {
		return err1
	}
	if err2 != nil {
		return err2
	}
	fmt.Printf("gendata: 2 files, %d bytes (%d MiB each) in %s: %s (random), %s (compressible)\n",
		2*size, mibs, out, random, compressible)
	return nil
}

// isCompressibleLarge tells whether a file is one of the large compressible
// files that change inserts bytes into.
func isCompressibleLarge(name string, size int64) bool {
	return size >= mib && strings.HasPrefix(name, "compressible-") && strings.HasSuffix(name, ".txt")
}

// change applies the reproducible change of the source and large sets to
// the tree under dir (see the package comment).
func change(dir string, seed uint64) error {
	if dir == "" {
		return fmt.Errorf("change: -dir is required")
	}
	var small, compressible []entry
	var files, empty int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files++
		switch size := info.Size(); {
		case size == 0:
			empty++
		case size < mib:
			small = append(small, entry{rel, size})
		case isCompressibleLarge(d.Name(), size):
			compressible = append(compressible, entry{rel, size})
		}
		return nil
	})
	if err != nil {
		return err
	}
	// WalkDir walks in lexical order per folder; sort the whole relative
	// paths so the choice does not depend on how the walk orders them.
	slices.SortFunc(small, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })
	slices.SortFunc(compressible, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })
	r := rng(seed, "change")

	// 1% of the small files, rounded up: one span of up to 4 KiB each.
	n := (len(small) + 99) / 100
	var overwritten int64
	for _, i := range r.Perm(len(small))[:n] {
		e := small[i]
		span := min(4*kib, e.size)
		off := r.Int64N(e.size - span + 1)
		if err := overwrite(filepath.Join(dir, e.rel), off, span, r); err != nil {
			return err
		}
		overwritten += span
	}

	// 100 random bytes at the start of every large compressible file.
	for _, e := range compressible {
		head := make([]byte, 100)
		content(r, head, false)
		if err := insertAtStart(filepath.Join(dir, e.rel), e.size, head); err != nil {
			return err
		}
	}
	fmt.Printf("gendata: of %d small files (regular, 1 B to under 1 MiB; %d empty ones left out) among %d regular files, "+
		"overwrote one span in %d (%d bytes in place); inserted 100 bytes at the start of %d large compressible files (%d bytes)\n",
		len(small), empty, files, n, overwritten, len(compressible), 100*len(compressible))
	return nil
}

// overwrite replaces n bytes at off in the file path with random bytes,
// each one different from the byte it replaces, keeping size and inode.
func overwrite(path string, off, n int64, r *rand.Rand) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	old := make([]byte, n)
	if _, err := f.ReadAt(old, off); err != nil {
		f.Close()
		return err
	}
	buf := make([]byte, n)
	content(r, buf, false)
	for i := range buf {
		if buf[i] == old[i] {
			buf[i] ^= 0xff
		}
	}
	if _, err := f.WriteAt(buf, off); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// insertAtStart puts head before the size bytes of the file path, in
// place: the content moves towards the end one chunk at a time, last chunk
// first, so the file keeps its inode and the memory use stays small.
func insertAtStart(path string, size int64, head []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	shift := int64(len(head))
	buf := make([]byte, 4*mib)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil {
			f.Close()
			return err
		}
		if _, err := f.WriteAt(chunk, start+shift); err != nil {
			f.Close()
			return err
		}
		end = start
	}
	if _, err := f.WriteAt(head, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
