package repo_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// rangeCounter passes everything to the backend it wraps and counts, by
// pack, the ranged reads (repo.RangeOpener) and the other reads (Load).
type rangeCounter struct {
	repo.Backend
	mu     sync.Mutex
	ranges map[string]int
	loads  map[string]int
}

func newRangeCounter(be repo.Backend) *rangeCounter {
	return &rangeCounter{Backend: be, ranges: map[string]int{}, loads: map[string]int{}}
}

func (c *rangeCounter) Unwrap() repo.Backend { return c.Backend }

func (c *rangeCounter) OpenRange(ctx context.Context, h repo.Handle, offset, length int64) (io.ReadCloser, error) {
	if h.Type == repo.PackFile {
		c.mu.Lock()
		c.ranges[h.Name]++
		c.mu.Unlock()
	}
	ro, _ := repo.Capability[repo.RangeOpener](c.Backend)
	return ro.OpenRange(ctx, h, offset, length)
}

func (c *rangeCounter) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile {
		c.mu.Lock()
		c.loads[h.Name]++
		c.mu.Unlock()
	}
	return c.Backend.Load(ctx, h, offset, length)
}

// windowsOnly hides every capability of the backend it wraps: check reads
// its packs the old way, a window at a time.
type windowsOnly struct{ repo.Backend }

// checkThrough checks the repository in be, the share fraction of its
// packs read.
func checkThrough(t *testing.T, be repo.Backend, fraction float64) *repo.CheckReport {
	t.Helper()
	ctx := context.Background()
	r, err := repo.Open(ctx, be, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Check(ctx, repo.CheckOptions{ReadDataFraction: fraction})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// reindex replaces the index file that lists blob id with one whose
// entries change makes of its own.
func (f *fixture) reindex(t *testing.T, id repo.ID, change func([]repo.IndexedBlob) []repo.IndexedBlob) {
	t.Helper()
	ctx := context.Background()
	r := f.open(t)
	name, blobs := indexFileOf(t, r, f.be, id)
	if _, err := r.SaveIndexFile(ctx, change(blobs)); err != nil {
		t.Fatal(err)
	}
	if err := f.be.Remove(ctx, repo.Handle{Type: repo.IndexFile, Name: name}); err != nil {
		t.Fatal(err)
	}
}

// check --read-data on a backend with ranged reads reads each data pack
// with one of them (a pack of trees through LoadInto, for the walk that
// reads it again), and finds exactly what the window-by-window reading
// finds, for every kind of damage: a flipped byte in a blob, in the
// header, in the trailer, in a tree, a pack cut short, an index entry
// placing a blob where the pack holds another, one running into the
// header, a header listing a blob the index does not, and a stale second
// place. Only a blob the stream could not open as the header has it is
// read again, alone.
func TestCheckReadDataStreamsEachPackOnce(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, f *fixture)
		damaged bool // the check finds problems
		// alone: blobs of pack bc are read again alone (or the pack the
		// old way); maybe: where the index places two blobs at one
		// offset, the one streamed is the first by ID, which is keyed.
		alone, maybe bool
	}{
		{name: "sound"},
		{name: "flipped byte in a blob", damaged: true, damage: func(t *testing.T, f *fixture) {
			r := f.open(t)
			if err := r.LoadIndex(context.Background()); err != nil {
				t.Fatal(err)
			}
			b1, _ := r.Index().Lookup(f.content["/src/dir/b.bin"][0])
			store(t, f.be, f.pack("bc"), flipped(load(t, f.be, f.pack("bc")), int(b1.Offset+b1.Length/2)))
		}},
		{name: "flipped byte in the header", damaged: true, damage: func(t *testing.T, f *fixture) {
			data := load(t, f.be, f.pack("bc"))
			headerAt, trailerAt := packParts(t, data)
			store(t, f.be, f.pack("bc"), flipped(data, (headerAt+trailerAt)/2))
		}},
		{name: "flipped byte in the trailer", damaged: true, damage: func(t *testing.T, f *fixture) {
			data := load(t, f.be, f.pack("bc"))
			store(t, f.be, f.pack("bc"), flipped(data, len(data)-2))
		}},
		{name: "flipped byte in a tree", damaged: true, damage: func(t *testing.T, f *fixture) {
			store(t, f.be, f.pack("meta"), flipped(load(t, f.be, f.pack("meta")), 20))
		}},
		{name: "pack cut short", damaged: true, damage: func(t *testing.T, f *fixture) {
			data := load(t, f.be, f.pack("bc"))
			store(t, f.be, f.pack("bc"), data[:len(data)-100])
		}},
		{name: "index entry places a blob on another", damaged: true, alone: true, damage: func(t *testing.T, f *fixture) {
			r := f.open(t)
			if err := r.LoadIndex(context.Background()); err != nil {
				t.Fatal(err)
			}
			b1, _ := r.Index().Lookup(f.content["/src/dir/b.bin"][0])
			c := f.content["/src/dir/c.txt"][0]
			f.reindex(t, c, func(blobs []repo.IndexedBlob) []repo.IndexedBlob {
				for i := range blobs {
					if blobs[i].ID == c {
						blobs[i].Offset, blobs[i].Length = b1.Offset, b1.Length
					}
				}
				return blobs
			})
		}},
		{name: "index entry runs into the header", damaged: true, alone: true, damage: func(t *testing.T, f *fixture) {
			c := f.content["/src/dir/c.txt"][0]
			f.reindex(t, c, func(blobs []repo.IndexedBlob) []repo.IndexedBlob {
				for i := range blobs {
					if blobs[i].ID == c {
						blobs[i].Length += 10
					}
				}
				return blobs
			})
		}},
		{name: "header lists a blob the index does not", damaged: true, alone: true, damage: func(t *testing.T, f *fixture) {
			c := f.content["/src/dir/c.txt"][0]
			f.reindex(t, c, func(blobs []repo.IndexedBlob) []repo.IndexedBlob {
				var kept []repo.IndexedBlob
				for _, b := range blobs {
					if b.ID != c {
						kept = append(kept, b)
					}
				}
				return kept
			})
		}},
		{name: "stale second place", damaged: true, maybe: true, damage: func(t *testing.T, f *fixture) {
			r := f.open(t)
			if err := r.LoadIndex(context.Background()); err != nil {
				t.Fatal(err)
			}
			a, _ := r.Index().Lookup(f.content["/src/a.txt"][0])
			stale := a
			stale.Pack = f.packs["bc"]
			if _, err := r.SaveIndexFile(context.Background(), []repo.IndexedBlob{stale}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.damage != nil {
				tt.damage(t, f)
			}
			old := checkThrough(t, windowsOnly{f.be}, 1)
			walk := newRangeCounter(f.be) // the reads of the trees the snapshots' walk makes
			checkThrough(t, walk, 0)
			counter := newRangeCounter(f.be)
			streamed := checkThrough(t, counter, 1)
			if tt.damaged == streamed.OK() {
				t.Fatalf("check --read-data: problems%s; want some: %v", problemList(streamed), tt.damaged)
			}
			if !reflect.DeepEqual(streamed.Problems, old.Problems) || streamed.PacksRead != old.PacksRead || streamed.BytesRead != old.BytesRead {
				t.Errorf("streamed, check finds%s\n(%d packs, %d bytes read);\nwindow by window%s\n(%d packs, %d bytes read)",
					problemList(streamed), streamed.PacksRead, streamed.BytesRead, problemList(old), old.PacksRead, old.BytesRead)
			}
			for name, n := range f.packs {
				id := n.String()
				if name == "meta" {
					// The pack of trees, read a window at a time, as
					// the walk reads its trees again.
					if counter.ranges[id] != 0 || counter.loads[id] == 0 {
						t.Errorf("pack of trees: %d ranged reads and %d reads, want none and some", counter.ranges[id], counter.loads[id])
					}
					continue
				}
				if counter.ranges[id] != 1 {
					t.Errorf("pack %s: %d ranged reads, want 1", name, counter.ranges[id])
				}
				extra := counter.loads[id] - walk.loads[id]
				if want := tt.alone && name == "bc"; (extra > 0) != want && !(tt.maybe && name == "bc") {
					t.Errorf("pack %s: %d reads besides the ranged one and the walk's, want some: %v", name, extra, want)
				}
			}
		})
	}
}

// A pack the ranged read cannot read, at its start or half-way, is
// reported with the backend's error and breaks the files whose blobs it
// holds, as when a window cannot be read.
func TestCheckReadDataStreamBreaks(t *testing.T) {
	for _, at := range []int64{0, 1000} {
		t.Run(fmt.Sprintf("at %d", at), func(t *testing.T) {
			f := newFixture(t)
			bc := f.pack("bc").Name
			be := &breakingRanges{Backend: f.be, pack: bc, at: at}
			rep := checkThrough(t, be, 1)
			if p := findProblem(rep, "pack "+bc); p == nil || !strings.Contains(p.Error, errBroken.Error()) {
				t.Errorf("the unreadable pack is not reported with its error:%s", problemList(rep))
			}
			paths := affectedPaths(rep)
			if !paths["/src/dir/b.bin"] || !paths["/src/dir/c.txt"] || paths["/src/a.txt"] {
				t.Errorf("affected paths %v, want b.bin and c.txt, whose blobs the pack holds", paths)
			}
			if rep.PacksRead != 2 {
				t.Errorf("%d packs read, want the 2 others", rep.PacksRead)
			}
		})
	}
}

var errBroken = errors.New("connection reset by peer")

// breakingRanges fails the ranged read of one pack after at bytes (at the
// open for 0).
type breakingRanges struct {
	repo.Backend
	pack string
	at   int64
}

func (b *breakingRanges) OpenRange(ctx context.Context, h repo.Handle, offset, length int64) (io.ReadCloser, error) {
	if h.Name == b.pack && b.at == 0 {
		return nil, errBroken
	}
	ro, _ := repo.Capability[repo.RangeOpener](b.Backend)
	rc, err := ro.OpenRange(ctx, h, offset, length)
	if err != nil || h.Name != b.pack {
		return rc, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, b.at), errReader{}), rc}, nil
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }
