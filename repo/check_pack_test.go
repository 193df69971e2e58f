package repo_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// packReads is a backend that records every read of a pack, and fails
// the reads fail says to fail.
type packReads struct {
	repo.Backend
	fail  func(h repo.Handle, offset int64) error
	mu    sync.Mutex
	reads map[string][][2]int64 // pack name -> offset and length of each read
}

func (p *packReads) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile {
		p.mu.Lock()
		if p.reads == nil {
			p.reads = map[string][][2]int64{}
		}
		p.reads[h.Name] = append(p.reads[h.Name], [2]int64{offset, length})
		p.mu.Unlock()
		if p.fail != nil {
			if err := p.fail(h, offset); err != nil {
				return nil, err
			}
		}
	}
	return p.Backend.Load(ctx, h, offset, length)
}

// check --read-data reads a pack in pieces of at most a window, or one
// blob where a blob is longer, and its header whole, never the whole pack
// at once; together the pieces cover every byte of it. The pack here has
// a header longer than the first read of its end (1,700 tiny blobs) and a
// blob longer than a window.
func TestCheckReadDataReadsInWindows(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	be := memory.New()
	initRepo(t, be)
	r := openNoIndex(t, be)
	big := random(1, repo.CheckReadWindow+repo.CheckReadWindow/4)
	if _, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		blobs := [][]byte{big}
		for i := range 1700 {
			blobs = append(blobs, random(uint64(100+i), 40))
		}
		for _, b := range blobs {
			if _, err := w.SaveBlob(ctx, repo.DataBlob, r.BlobID(b), b); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	packs := names(t, be, repo.PackFile)
	if len(packs) != 1 {
		t.Fatalf("%d packs, want 1", len(packs))
	}
	id, _ := repo.ParseID(packs[0])
	size := int64(len(load(t, be, repo.Handle{Type: repo.PackFile, Name: packs[0]})))
	header, err := r.ReadPackHeader(ctx, id, size)
	if err != nil {
		t.Fatal(err)
	}
	headerAt := int64(header[len(header)-1].Offset + header[len(header)-1].Length)
	if size-headerAt <= repo.CheckTailRead {
		t.Fatalf("header and trailer take %d bytes, not more than the first read of %d", size-headerAt, repo.CheckTailRead)
	}
	bound := int64(repo.CheckReadWindow)
	for _, b := range header {
		bound = max(bound, int64(b.Length))
	}
	bound = max(bound, size-headerAt)
	if bound >= size {
		t.Fatalf("the bound %d is not below the pack's size %d", bound, size)
	}

	rec := &packReads{Backend: be}
	o, err := repo.Open(ctx, rec, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	rep, err := o.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.PacksRead != 1 || rep.BytesRead != size || rep.Blobs != len(header) {
		t.Fatalf("check --read-data: %d packs, %d bytes, %d blobs read, problems:%s; want 1 pack of %d bytes, %d blobs, no problems",
			rep.PacksRead, rep.BytesRead, rep.Blobs, problemList(rep), size, len(header))
	}
	reads := rec.reads[packs[0]]
	slices.SortFunc(reads, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	covered := int64(0)
	for _, rd := range reads {
		if rd[1] < 0 || rd[1] > bound {
			t.Errorf("a read of %d bytes at %d: more than the %d bytes of a window, the longest blob or the header", rd[1], rd[0], bound)
		}
		if rd[0] > covered {
			t.Errorf("bytes %d to %d of the pack were never read", covered, rd[0])
		}
		covered = max(covered, rd[0]+rd[1])
	}
	if covered != size {
		t.Errorf("reads end at %d, the pack at %d", covered, size)
	}
}

// indexFileOf returns the name of the index file that lists blob id, and
// what it lists.
func indexFileOf(t *testing.T, r *repo.Repository, be repo.Backend, id repo.ID) (string, []repo.IndexedBlob) {
	t.Helper()
	for _, name := range names(t, be, repo.IndexFile) {
		blobs, _, err := r.ReadIndexFile(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(blobs, func(b repo.IndexedBlob) bool { return b.ID == id }) {
			return name, blobs
		}
	}
	t.Fatalf("no index file lists blob %s", id.Short())
	return "", nil
}

// check --read-data compares every index entry with the header of the pack
// it names: an entry that places a blob where the pack holds something
// else breaks the blob's files, and a stale second entry for a blob that
// another pack holds whole is a problem of its pack only.
func TestCheckReadDataIndexEntryMismatch(t *testing.T) {
	ctx := context.Background()
	t.Run("the only place is wrong", func(t *testing.T) {
		f := newFixture(t)
		r := f.open(t)
		if err := r.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		c := f.content["/src/dir/c.txt"][0]
		b1, _ := r.Index().Lookup(f.content["/src/dir/b.bin"][0])
		name, blobs := indexFileOf(t, r, f.be, c)
		for i := range blobs {
			if blobs[i].ID == c {
				// A place inside the pack, so the structural check passes
				// it, holding b.bin's first blob.
				blobs[i].Offset, blobs[i].Length = b1.Offset, b1.Length
			}
		}
		if _, err := r.SaveIndexFile(ctx, blobs); err != nil {
			t.Fatal(err)
		}
		if err := f.be.Remove(ctx, repo.Handle{Type: repo.IndexFile, Name: name}); err != nil {
			t.Fatal(err)
		}
		rep := f.check(t, 1)
		p := findProblem(rep, "data blob "+c.String())
		if p == nil || !strings.Contains(p.Error, "index entry does not match pack") {
			t.Fatalf("check --read-data does not name c.txt's blob as misplaced by the index:%s", problemList(rep))
		}
		paths := affectedPaths(rep)
		if !paths["/src/dir/c.txt"] || paths["/src/dir/b.bin"] || paths["/src/a.txt"] {
			t.Errorf("affected paths %v, want /src/dir/c.txt only", paths)
		}
	})
	t.Run("a stale second place", func(t *testing.T) {
		f := newFixture(t)
		r := f.open(t)
		if err := r.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		a, _ := r.Index().Lookup(f.content["/src/a.txt"][0])
		stale := a
		stale.Pack = f.packs["bc"]
		if _, err := r.SaveIndexFile(ctx, []repo.IndexedBlob{stale}); err != nil {
			t.Fatal(err)
		}
		rep := f.check(t, 1)
		if len(rep.Problems) != 1 || rep.Problems[0].Object != "pack "+f.packs["bc"].String() ||
			!strings.Contains(rep.Problems[0].Error, "repair index") || rep.Problems[0].Total != 0 {
			t.Fatalf("problems:%s; want only pack %s, naming repair index, breaking no file", problemList(rep), f.packs["bc"].Short())
		}
	})
}

// A pack that cannot be read (a storage error, not damage) breaks the files
// whose blobs it holds, whether its header or its blobs fail to read; the
// check goes on and reports it.
func TestCheckReadDataUnreadablePack(t *testing.T) {
	ctx := context.Background()
	errDisk := errors.New("input/output error")
	for _, tt := range []struct {
		name string
		fail func(offset int64) bool
	}{
		{"every read", func(int64) bool { return true }},
		{"the blobs after the header", func(offset int64) bool { return offset == 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			bc := f.packs["bc"].String()
			rec := &packReads{Backend: f.be, fail: func(h repo.Handle, offset int64) error {
				if h.Name == bc && tt.fail(offset) {
					return errDisk
				}
				return nil
			}}
			r, err := repo.Open(ctx, rec, repo.OpenOptions{Password: pw(password)})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			rep, err := r.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
			if err != nil {
				t.Fatal(err)
			}
			if p := findProblem(rep, "pack "+bc); p == nil || !strings.Contains(p.Error, errDisk.Error()) {
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
