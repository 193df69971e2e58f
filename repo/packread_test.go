package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// countedPackReads counts the reads of packs that reach the backend it wraps.
type countedPackReads struct {
	repo.Backend
	mu sync.Mutex
	n  int
}

func (p *countedPackReads) Unwrap() repo.Backend { return p.Backend }

func (p *countedPackReads) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile {
		p.mu.Lock()
		p.n++
		p.mu.Unlock()
	}
	return p.Backend.Load(ctx, h, offset, length)
}

// LoadBlobsInOrder hands every blob asked for, in the order asked, with
// its content, and reads each pack with one read where the blobs asked for
// follow each other in it; a blob asked for again out of order is read on
// its own.
func TestLoadBlobsInOrderOneReadPerPack(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	var ids []repo.ID
	var want [][]byte
	for i := range 40 {
		data := backendtest.RandomBytes(uint64(i), 10<<10)
		ids = append(ids, saveBlob(t, r, data))
		want = append(want, data)
	}
	flush(t, r)
	packs := len(names(t, mem, repo.PackFile))
	asked := append(append([]repo.ID(nil), ids...), ids[3]) // the fourth again, at the end
	want = append(want, want[3])

	counted := &countedPackReads{Backend: mem}
	r2 := openRepo(t, counted)
	if err := r2.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	var buf repo.BlobBuffer
	next := 0
	err := r2.LoadBlobsInOrder(ctx, asked, &buf, func(i int, plain []byte) error {
		if i != next {
			t.Fatalf("blob %d handed when %d was next", i, next)
		}
		if !bytes.Equal(plain, want[i]) {
			t.Errorf("blob %d: %d bytes, not the %d saved", i, len(plain), len(want[i]))
		}
		next++
		return nil
	})
	if err != nil || next != len(asked) {
		t.Fatalf("load: %v after %d of %d blobs", err, next, len(asked))
	}
	if counted.n != packs+1 {
		t.Errorf("pack reads for %d blobs in %d packs and one asked again: %d, want %d", len(ids), packs, counted.n, packs+1)
	}
}

// A blob the index does not know ends the call with ErrNotFound, after
// the blobs before it.
func TestLoadBlobsInOrderUnknownBlob(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	known := saveBlob(t, r, []byte("known"))
	flush(t, r)
	var handed []int
	var buf repo.BlobBuffer
	err := r.LoadBlobsInOrder(ctx, []repo.ID{known, r.BlobID([]byte("never saved")), known}, &buf, func(i int, _ []byte) error {
		handed = append(handed, i)
		return nil
	})
	if !errors.Is(err, repo.ErrNotFound) || len(handed) != 1 || handed[0] != 0 {
		t.Errorf("load with an unknown second blob: %v after blobs %v; want ErrNotFound after blob 0", err, handed)
	}
}

// planRecorder is a ReadPlanner over the backend it wraps: it keeps the
// plan it is given and the reads of packs that reach it.
type planRecorder struct {
	repo.Backend
	mu    sync.Mutex
	plan  []repo.PackReads
	plans int
	reads []string
}

func (p *planRecorder) Unwrap() repo.Backend { return p.Backend }

func (p *planRecorder) PlanReads(plan []repo.PackReads) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan = plan
	p.plans++
}

func (p *planRecorder) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile {
		p.mu.Lock()
		p.reads = append(p.reads, fmt.Sprintf("%s@%d+%d", h.Name, offset, length))
		p.mu.Unlock()
	}
	return p.Backend.Load(ctx, h, offset, length)
}

// A read plan holds exactly the reads of packs that LoadBlobsInOrder then
// makes for the same lists of blobs (a backend counts on it to know when
// the last planned read of a range was served); a backend that does not
// plan gets no plan.
func TestReadPlanHoldsTheReadsMade(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	var ids []repo.ID
	for i := range 30 {
		ids = append(ids, saveBlob(t, r, backendtest.RandomBytes(uint64(i), 8<<10)))
	}
	flush(t, r)
	if r.NewReadPlan() != nil {
		t.Error("a plan for a backend that does not plan reads")
	}
	rec := &planRecorder{Backend: mem}
	r2 := openRepo(t, rec)
	if err := r2.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	// Runs, a blob alone, blobs out of order and one asked twice.
	lists := [][]repo.ID{ids[:10], {ids[20]}, {ids[15], ids[12], ids[13], ids[14]}, ids[5:25], {ids[3], ids[3]}}
	plan := r2.NewReadPlan()
	if plan == nil {
		t.Fatal("no plan for a backend that plans reads")
	}
	for _, l := range lists {
		plan.Add(l)
	}
	end := plan.Start()
	var planned []string
	for _, pr := range rec.plan {
		for _, rd := range pr.Reads {
			planned = append(planned, fmt.Sprintf("%s@%d+%d", pr.Pack.Name, rd.Offset, rd.Length))
		}
	}
	var buf repo.BlobBuffer
	for _, l := range lists {
		if err := r2.LoadBlobsInOrder(ctx, l, &buf, func(int, []byte) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(planned)
	slices.Sort(rec.reads)
	if !slices.Equal(planned, rec.reads) {
		t.Errorf("planned reads %v\nreads made %v", planned, rec.reads)
	}
	end()
	if rec.plans != 2 || rec.plan != nil {
		t.Errorf("after the plan ended: %d plans given, the last %v; want 2, the last nil", rec.plans, rec.plan)
	}
}

// streamingBackend reads ranges as streams (repo.RangeOpener) over the
// backend it wraps, counting the streams opened and the loads of packs,
// and flips a byte of what a stream gives at the pack offset flip (-1:
// none).
type streamingBackend struct {
	repo.Backend
	flip         int64
	opens, loads int
}

func (s *streamingBackend) Unwrap() repo.Backend { return s.Backend }

func (s *streamingBackend) OpenRange(ctx context.Context, h repo.Handle, offset, length int64) (io.ReadCloser, error) {
	s.opens++
	data, err := s.Backend.Load(ctx, h, offset, length)
	if err != nil {
		return nil, err
	}
	if at := s.flip - offset; s.flip >= 0 && at >= 0 && at < int64(len(data)) {
		data = slices.Clone(data)
		data[at] ^= 1
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (s *streamingBackend) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile {
		s.loads++
	}
	return s.Backend.Load(ctx, h, offset, length)
}

// StreamBlobsInOrder reads a pack's blobs asked for in its order with one
// stream, handing each in order; a blob the stream gives damaged is read
// again alone with those after it, and every blob still comes as saved.
func TestStreamBlobsInOrder(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	var ids []repo.ID
	var want [][]byte
	for i := range 40 {
		data := backendtest.RandomBytes(uint64(100+i), 10<<10)
		ids = append(ids, saveBlob(t, r, data))
		want = append(want, data)
	}
	flush(t, r)
	for _, flipBlob := range []int{-1, 30} {
		be := &streamingBackend{Backend: mem, flip: -1}
		r2 := openRepo(t, be)
		if err := r2.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		if flipBlob >= 0 {
			b, _ := r2.Index().Lookup(ids[flipBlob])
			be.flip = int64(b.Offset) + 20
		}
		var buf repo.BlobBuffer
		next := 0
		err := r2.StreamBlobsInOrder(ctx, ids, &buf, func(i int, plain []byte) error {
			if i != next {
				t.Fatalf("blob %d handed when %d was next", i, next)
			}
			if !bytes.Equal(plain, want[i]) {
				t.Errorf("blob %d: %d bytes, not the %d saved", i, len(plain), len(want[i]))
			}
			next++
			return nil
		})
		if err != nil || next != len(ids) {
			t.Fatalf("stream: %v after %d of %d blobs", err, next, len(ids))
		}
		wantLoads := 0
		if flipBlob >= 0 {
			wantLoads = len(ids) - flipBlob // the damaged blob and those after it, alone
		}
		if be.opens != 1 || be.loads != wantLoads {
			t.Errorf("damaged blob %d: %d streams and %d loads, want 1 and %d", flipBlob, be.opens, be.loads, wantLoads)
		}
	}
}

// A blob asked for again right after itself (a chunk two big files of a
// pack job share) is handed again from the stream, which goes on: one
// stream for the whole pack, no blob read alone.
func TestStreamBlobsInOrderRepeatedBlob(t *testing.T) {
	oneCore(t)
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	var saved []repo.ID
	var want [][]byte
	for i := range 10 {
		data := backendtest.RandomBytes(uint64(300+i), 10<<10)
		saved = append(saved, saveBlob(t, r, data))
		want = append(want, data)
	}
	flush(t, r)
	// Blobs 2 and 7 twice, blob 5 three times: as a pack job asks for the
	// chunks of two files that share some.
	var ids []repo.ID
	var wantOf [][]byte
	for i, id := range saved {
		n := 1
		switch i {
		case 2, 7:
			n = 2
		case 5:
			n = 3
		}
		for range n {
			ids = append(ids, id)
			wantOf = append(wantOf, want[i])
		}
	}
	be := &streamingBackend{Backend: mem, flip: -1}
	r2 := openRepo(t, be)
	if err := r2.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	var buf repo.BlobBuffer
	next := 0
	err := r2.StreamBlobsInOrder(ctx, ids, &buf, func(i int, plain []byte) error {
		if i != next {
			t.Fatalf("blob %d handed when %d was next", i, next)
		}
		if !bytes.Equal(plain, wantOf[i]) {
			t.Errorf("blob %d: %d bytes, not the %d saved", i, len(plain), len(wantOf[i]))
		}
		next++
		return nil
	})
	if err != nil || next != len(ids) {
		t.Fatalf("stream: %v after %d of %d blobs", err, next, len(ids))
	}
	if be.opens != 1 || be.loads != 0 {
		t.Errorf("%d streams and %d loads, want 1 stream and none alone", be.opens, be.loads)
	}
}

// A file whose blobs all lie in packs that pack jobs read (AddByPack) is
// read with those jobs: ByPack holds for it and the plan leaves its reads
// out; a file with a blob in another pack, an empty file and a file with a
// blob the index lacks are planned (or not read) as before.
func TestReadPlanLeavesOutFilesReadByPack(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	var big, other []repo.ID
	for i := range 4 {
		big = append(big, saveBlob(t, r, backendtest.RandomBytes(uint64(400+i), 8<<10)))
	}
	flush(t, r)
	for i := range 3 {
		other = append(other, saveBlob(t, r, backendtest.RandomBytes(uint64(500+i), 8<<10)))
	}
	flush(t, r)
	rec := &planRecorder{Backend: mem}
	r2 := openRepo(t, rec)
	if err := r2.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	bigPack, _ := r2.Index().Lookup(big[0])
	otherPack, _ := r2.Index().Lookup(other[0])
	missing := r2.BlobID([]byte("never saved"))
	plan := r2.NewReadPlan()
	plan.AddByPack(big[:2])
	plan.AddByPack([]repo.ID{other[0], missing}) // read in parts: no pack job
	beside := []repo.ID{big[2]}
	split := []repo.ID{big[3], other[1]}
	plan.Add(beside)
	plan.Add(split)
	plan.Add([]repo.ID{other[2]})
	plan.Add([]repo.ID{big[1], missing})
	end := plan.Start()
	defer end()
	for _, c := range []struct {
		name string
		ids  []repo.ID
		want bool
	}{{"beside", beside, true}, {"split", split, false}, {"other", other[2:], false}, {"missing", []repo.ID{big[1], missing}, false}, {"empty", nil, false}} {
		if got := plan.ByPack(c.ids); got != c.want {
			t.Errorf("ByPack(%s) = %v, want %v", c.name, got, c.want)
		}
	}
	reads := map[string]int{}
	for _, pr := range rec.plan {
		reads[pr.Pack.Name] = len(pr.Reads)
	}
	// The big pack: the split file's read and the one of the file with a
	// missing blob; the other pack: the split file's and other[2]'s.
	if want := map[string]int{bigPack.Pack.String(): 2, otherPack.Pack.String(): 2}; !maps.Equal(reads, want) {
		t.Errorf("planned reads by pack %v, want %v", reads, want)
	}
}

// storageGone is a backend whose reads of packs fail as a storage that
// failed after its retries does, and counts them.
type storageGone struct {
	repo.Backend
	reads int
}

func (s *storageGone) Unwrap() repo.Backend { return s.Backend }

func (s *storageGone) gone(h repo.Handle) error {
	s.reads++
	return fmt.Errorf("read %s: %w", h, repo.ErrStorageUnavailable)
}

func (s *storageGone) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile {
		return nil, s.gone(h)
	}
	return s.Backend.Load(ctx, h, offset, length)
}

func (s *storageGone) OpenRange(_ context.Context, h repo.Handle, _, _ int64) (io.ReadCloser, error) {
	return nil, s.gone(h)
}

// When the storage itself failed after its retries, a run's blobs are not
// read again one by one (each read would spend the retries again): the
// call ends with that failure after the one read.
func TestStorageFailureEndsTheReadAtOnce(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	r := initRepo(t, mem)
	var ids []repo.ID
	for i := range 10 {
		ids = append(ids, saveBlob(t, r, backendtest.RandomBytes(uint64(200+i), 10<<10)))
	}
	flush(t, r)
	for name, read := range map[string]func(*repo.Repository, *repo.BlobBuffer) error{
		"LoadBlobsInOrder": func(r *repo.Repository, buf *repo.BlobBuffer) error {
			return r.LoadBlobsInOrder(ctx, ids, buf, func(int, []byte) error { return nil })
		},
		"StreamBlobsInOrder": func(r *repo.Repository, buf *repo.BlobBuffer) error {
			return r.StreamBlobsInOrder(ctx, ids, buf, func(int, []byte) error { return nil })
		},
	} {
		be := &storageGone{Backend: mem}
		r2 := openRepo(t, be)
		if err := r2.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		var buf repo.BlobBuffer
		if err := read(r2, &buf); !errors.Is(err, repo.ErrStorageUnavailable) || be.reads != 1 {
			t.Errorf("%s with the storage gone: %v after %d reads; want ErrStorageUnavailable after 1", name, err, be.reads)
		}
	}
}
