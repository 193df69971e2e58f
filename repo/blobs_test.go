package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

func TestBlobRoundTrip(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		data       []byte
		compressed bool // stored zstd-compressed
	}{
		{"compressible", compressible(1 << 20), true},
		{"incompressible", random(1, 300<<10), false},
		{"all zeros", make([]byte, 256<<10), true},
		{"tiny", []byte("hi"), false},
		{"empty", []byte{}, false},
		{"63 bytes", bytes.Repeat([]byte("a"), 63), false},
		{"64 compressible bytes", bytes.Repeat([]byte("a"), 64), true},
	}
	be := memory.New()
	r := initRepo(t, be)
	ids := make([]repo.ID, len(tests))
	for i, tt := range tests {
		ids[i] = r.BlobID(tt.data)
		stored, err := writer(t, r).SaveBlob(ctx, repo.DataBlob, ids[i], tt.data)
		if err != nil || !stored {
			t.Fatalf("%s: SaveBlob = %v, %v; want stored", tt.name, stored, err)
		}
	}
	flush(t, r)
	o := openRepo(t, be)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, rr := range []*repo.Repository{r, o} {
				got, err := rr.LoadBlob(ctx, ids[i])
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				if !bytes.Equal(got, tt.data) {
					t.Fatalf("loaded %d bytes that differ from the %d saved", len(got), len(tt.data))
				}
			}
			b, ok := o.Index().Lookup(ids[i])
			if !ok {
				t.Fatal("not in the reloaded index")
			}
			if b.Type != repo.DataBlob || b.RawLength != uint32(len(tt.data)) {
				t.Errorf("index entry %+v: want a data blob of %d bytes", b, len(tt.data))
			}
			if tt.compressed && (b.Compression == 0 || b.Length >= b.RawLength) {
				t.Errorf("compressible blob stored with compression %d in %d bytes of %d", b.Compression, b.Length, b.RawLength)
			}
			if !tt.compressed && (b.Compression != 0 || b.Length <= b.RawLength) {
				t.Errorf("incompressible blob stored with compression %d in %d bytes of %d: want it as it is, sealed", b.Compression, b.Length, b.RawLength)
			}
		})
	}
}

// TestLoadBlobTo: one BlobBuffer reused across blobs of every kind and
// size, in both orders, gives what LoadBlob gives, from a backend that
// loads into the buffer (local) and from one that does not (memory). A
// damaged blob fails, and the next load through the same buffer works.
func TestLoadBlobTo(t *testing.T) {
	ctx := context.Background()
	blobs := [][]byte{compressible(1 << 20), random(2, 300<<10), []byte("hi"), {}, compressible(3 << 10), random(3, 1<<20)}
	localBE, err := local.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	faulty := backendtest.NewFaulty(memory.New())
	for _, be := range []repo.Backend{localBE, faulty} {
		t.Run(fmt.Sprintf("%T", be), func(t *testing.T) {
			r := initRepo(t, be)
			ids := make([]repo.ID, len(blobs))
			for i, data := range blobs {
				ids[i] = r.BlobID(data)
				if _, err := writer(t, r).SaveBlob(ctx, repo.DataBlob, ids[i], data); err != nil {
					t.Fatal(err)
				}
			}
			flush(t, r)
			o := openRepo(t, be)
			var buf repo.BlobBuffer
			backward := slices.Clone(ids)
			slices.Reverse(backward)
			order := append(slices.Clone(ids), backward...)
			for _, id := range order {
				got, err := o.LoadBlobTo(ctx, id, &buf)
				if err != nil {
					t.Fatalf("load %s: %v", id.Short(), err)
				}
				want := blobs[slices.Index(ids, id)]
				if !bytes.Equal(got, want) {
					t.Fatalf("load %s: %d bytes that differ from the %d saved", id.Short(), len(got), len(want))
				}
			}
			if be == repo.Backend(faulty) {
				b, _ := o.Index().Lookup(ids[1])
				faulty.CorruptLoads(repo.PackFile, backendtest.FlipByte(int64(b.Offset)+30))
				if _, err := o.LoadBlobTo(ctx, ids[1], &buf); !errors.Is(err, repo.ErrIntegrity) {
					t.Errorf("load of a damaged blob: %v, want ErrIntegrity", err)
				}
				faulty.Reset()
				if got, err := o.LoadBlobTo(ctx, ids[0], &buf); err != nil || !bytes.Equal(got, blobs[0]) {
					t.Errorf("load after a damaged one: %v", err)
				}
			}
		})
	}
}

// TestCompressionLevels: every level stores what reads back; the harder
// levels store compressible data in fewer bytes, and "off" stores it as it
// is. A repository reads blobs of every level whatever its own.
func TestCompressionLevels(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	data := compressible(1 << 20)
	stored := map[repo.Compression]uint32{}
	ids := map[repo.Compression]repo.ID{}
	for i, c := range []repo.Compression{repo.CompressionOff, repo.CompressionFastest, repo.CompressionDefault, repo.CompressionBetter} {
		if err := r.SetCompression(c); err != nil {
			t.Fatal(err)
		}
		blob := append(slices.Clone(data), byte(i)) // a distinct blob per level
		ids[c] = r.BlobID(blob)
		if _, err := writer(t, r).SaveBlob(ctx, repo.DataBlob, ids[c], blob); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, r)
	o := openRepo(t, be)
	if err := o.SetCompression(repo.CompressionOff); err != nil {
		t.Fatal(err)
	}
	for c, id := range ids {
		got, err := o.LoadBlob(ctx, id)
		if err != nil || !bytes.Equal(got[:len(data)], data) {
			t.Fatalf("%s: load: %v", c, err)
		}
		b, _ := o.Index().Lookup(id)
		stored[c] = b.Length
	}
	if stored[repo.CompressionOff] <= uint32(len(data)) {
		t.Errorf("off stored %d bytes of %d: want them as they are, sealed", stored[repo.CompressionOff], len(data)+1)
	}
	if !(stored[repo.CompressionFastest] < stored[repo.CompressionOff] && stored[repo.CompressionBetter] <= stored[repo.CompressionFastest]) {
		t.Errorf("stored sizes %v: want off > fastest >= better", stored)
	}
	if err := r.SetCompression("max"); err == nil || !strings.Contains(err.Error(), "want off, fastest, default or better") {
		t.Errorf("SetCompression(max): %v", err)
	}
}

func TestLoadBlobUnknown(t *testing.T) {
	r := initRepo(t, memory.New())
	if _, err := r.LoadBlob(context.Background(), r.BlobID([]byte("never saved"))); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("load of an unknown blob: %v, want ErrNotFound", err)
	}
}

func TestDedup(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	data := random(2, 100000)
	id := r.BlobID(data)
	var first *repo.Written
	stages := []struct {
		name   string
		before func()
		want   bool
	}{
		{"first save", func() {}, true},
		{"same blob before flush", func() {}, false},
		{"same blob after flush", func() { first = flush(t, r) }, false},
	}
	for _, st := range stages {
		st.before()
		stored, err := writer(t, r).SaveBlob(ctx, repo.DataBlob, id, data)
		if err != nil || stored != st.want {
			t.Errorf("%s: SaveBlob = %v, %v; want %v", st.name, stored, err, st.want)
		}
	}
	second := flush(t, r)
	o := openRepo(t, be)
	if stored, err := writer(t, o).SaveBlob(ctx, repo.DataBlob, id, data); err != nil || stored {
		t.Errorf("after reopening: SaveBlob = %v, %v; want not stored again", stored, err)
	}
	flush(t, o)
	if got := names(t, be, repo.PackFile); len(got) != 1 {
		t.Errorf("%d packs for one blob saved four times, want 1", len(got))
	}
	count := 0
	for _, name := range names(t, be, repo.IndexFile) {
		blobs, _, err := o.ReadIndexFile(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		count += len(blobs)
	}
	if count != 1 {
		t.Errorf("index files list the blob %d times, want once", count)
	}
	if st := first.Stats(); st.Packs != 1 || st.Blobs != 1 {
		t.Errorf("first session's stats %+v, want 1 pack of 1 blob", st)
	}
	if st := second.Stats(); st.Packs != 0 || st.Blobs != 0 || st.Bytes != 0 {
		t.Errorf("stats of the session that stored nothing new: %+v, want zero", st)
	}
}

// Many goroutines saving overlapping sets of blobs store each blob once.
func TestSaveBlobConcurrently(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	const workers, blobs = 8, 300
	data := make([][]byte, blobs)
	ids := make([]repo.ID, blobs)
	for i := range data {
		if i%2 == 0 {
			data[i] = random(uint64(i), 64<<10)
		} else {
			data[i] = compressible(32<<10 + i)
		}
		ids[i] = r.BlobID(data[i])
	}
	stored := make([][]bool, workers)
	wr := writer(t, r)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		stored[w] = make([]bool, blobs)
		wg.Add(1)
		go func() {
			defer wg.Done()
			order := rand.New(rand.NewPCG(uint64(w), 0)).Perm(blobs)
			for _, i := range order {
				ok, err := wr.SaveBlob(ctx, repo.DataBlob, ids[i], data[i])
				if err != nil {
					errs <- err
					return
				}
				stored[w][i] = ok
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range blobs {
		n := 0
		for w := range workers {
			if stored[w][i] {
				n++
			}
		}
		if n != 1 {
			t.Errorf("blob %d stored by %d goroutines, want exactly 1", i, n)
		}
	}
	flush(t, r)
	o := openRepo(t, be)
	if o.Index().Len() != blobs {
		t.Errorf("index has %d blobs, want %d", o.Index().Len(), blobs)
	}
	var lwg sync.WaitGroup
	for w := range workers {
		lwg.Add(1)
		go func() {
			defer lwg.Done()
			for i := w; i < blobs; i += workers {
				got, err := o.LoadBlob(ctx, ids[i])
				if err != nil || !bytes.Equal(got, data[i]) {
					t.Errorf("blob %d: %v", i, err)
				}
			}
		}()
	}
	lwg.Wait()
}

// Index files list their blobs sorted by ID, name only existing packs, and
// give back the same index after reopening.
func TestIndexFiles(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := initRepo(t, be)
	for round := range 3 {
		for i := range 50 {
			saveBlob(t, r, random(uint64(round*1000+i), 1000+i))
		}
		flush(t, r)
	}
	indexFiles := names(t, be, repo.IndexFile)
	if len(indexFiles) != 3 {
		t.Fatalf("%d index files after 3 flushes, want 3", len(indexFiles))
	}
	packs := names(t, be, repo.PackFile)
	total := 0
	for _, name := range indexFiles {
		blobs, packIDs, err := r.ReadIndexFile(ctx, name)
		if err != nil {
			t.Fatalf("read index %s: %v", name, err)
		}
		total += len(blobs)
		if !slices.IsSortedFunc(blobs, func(a, b repo.IndexedBlob) int { return bytes.Compare(a.ID[:], b.ID[:]) }) {
			t.Errorf("index %s is not sorted by blob ID", name)
		}
		for i := 1; i < len(blobs); i++ {
			if blobs[i].ID == blobs[i-1].ID {
				t.Errorf("index %s lists blob %s twice", name, blobs[i].ID.Short())
			}
		}
		for _, p := range packIDs {
			if !slices.Contains(packs, p.String()) {
				t.Errorf("index %s names pack %s, which does not exist", name, p.Short())
			}
		}
	}
	if total != 150 {
		t.Errorf("index files list %d blobs, want 150", total)
	}

	o := openRepo(t, be)
	if o.Index().Len() != r.Index().Len() {
		t.Fatalf("reloaded index has %d blobs, want %d", o.Index().Len(), r.Index().Len())
	}
	err := r.Index().Each(func(b repo.IndexedBlob) {
		if got, ok := o.Index().Lookup(b.ID); !ok || got != b {
			t.Errorf("blob %s reloads as %+v, %v; want %+v", b.ID.Short(), got, ok, b)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A backup interrupted after writing a pack but before its index leaves an
// unindexed pack; the next writer adopts it instead of storing its blobs
// again.
func TestAdoptPacks(t *testing.T) {
	ctx := context.Background()
	be := backendtest.NewFaulty(memory.New())
	r := initRepo(t, be)
	data := [][]byte{random(1, 50000), compressible(70000), []byte("small")}
	var ids []repo.ID
	for _, d := range data {
		ids = append(ids, saveBlob(t, r, d))
	}
	be.FailSave(repo.IndexFile, 1)
	if _, err := endSession(r, nil); !errors.Is(err, backendtest.ErrInjected) {
		t.Fatalf("session with a failing index save: %v, want the injected error", err)
	}
	for i, id := range ids {
		if r.Index().Has(id) {
			t.Errorf("blob %d of the failed session is still in the index", i)
		}
	}
	packSaves := be.Saves(repo.PackFile)
	if got := names(t, be, repo.PackFile); len(got) == 0 || len(names(t, be, repo.IndexFile)) != 0 {
		t.Fatalf("want packs and no index file, have %d packs and index files %v", len(got), names(t, be, repo.IndexFile))
	}

	o := openRepo(t, be)
	if o.Index().Len() != 0 {
		t.Fatalf("index of the interrupted repository has %d blobs, want 0", o.Index().Len())
	}
	rep, err := o.Check(ctx, repo.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.UnindexedPacks != len(names(t, be, repo.PackFile)) {
		t.Errorf("check of the interrupted repository: ok %v, %d unindexed packs; want ok and all packs unindexed%s",
			rep.OK(), rep.UnindexedPacks, problemList(rep))
	}

	a := openRepo(t, be)
	startSession(t, a, repo.WriteOptions{AdoptPacks: true})
	for i, id := range ids {
		if stored, err := writer(t, a).SaveBlob(ctx, repo.DataBlob, id, data[i]); err != nil || stored {
			t.Errorf("blob %d after adoption: SaveBlob = %v, %v; want it reused", i, stored, err)
		}
		if got, err := a.LoadBlob(ctx, id); err != nil || !bytes.Equal(got, data[i]) {
			t.Errorf("blob %d after adoption: load: %v", i, err)
		}
	}
	if n := flush(t, a).Stats().AdoptedPacks; n != len(names(t, be, repo.PackFile)) {
		t.Errorf("%d packs adopted, want every pack", n)
	}
	if got := be.Saves(repo.PackFile); got != packSaves {
		t.Errorf("%d pack saves after adoption, want none", got-packSaves)
	}
	again, err := a.WriteSession(ctx, repo.WriteOptions{AdoptPacks: true}, func(context.Context, *repo.Writer) error { return nil })
	if err != nil || again.Stats().AdoptedPacks != 0 {
		t.Errorf("second adopting session: %v, %+v; want nothing left to adopt", err, again)
	}

	final := openRepo(t, be)
	for i, id := range ids {
		if got, err := final.LoadBlob(ctx, id); err != nil || !bytes.Equal(got, data[i]) {
			t.Errorf("blob %d after adoption and reopening: %v", i, err)
		}
	}
	rep, err = final.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
	if err != nil || !rep.OK() || rep.UnindexedPacks != 0 {
		t.Errorf("check after adoption: %v, unindexed %d%s", err, rep.UnindexedPacks, problemList(rep))
	}
}

// The work of a session whose index write failed is indexed by the next
// session that adopts packs, in the same process.
func TestFailedIndexWriteIsAdoptedNext(t *testing.T) {
	ctx := context.Background()
	be := backendtest.NewFaulty(memory.New())
	r := initRepo(t, be)
	data := random(4, 10000)
	id := saveBlob(t, r, data)
	be.FailSave(repo.IndexFile, 1)
	if _, err := endSession(r, nil); !errors.Is(err, backendtest.ErrInjected) {
		t.Fatalf("first session: %v, want the injected error", err)
	}
	startSession(t, r, repo.WriteOptions{AdoptPacks: true})
	if n := flush(t, r).Stats().AdoptedPacks; n != 1 {
		t.Errorf("%d packs adopted, want the failed session's one", n)
	}
	o := openRepo(t, be)
	if got, err := o.LoadBlob(ctx, id); err != nil || !bytes.Equal(got, data) {
		t.Errorf("blob after retried flush: %v", err)
	}
}

// SaveBlob's promise: after its session returns nil, every blob SaveBlob
// reported as stored is durable and indexed. A pack write that failed must
// therefore fail the session; it must not drop the blobs of that pack
// silently, nor leave them claimed so that the next session cannot store
// them.
func TestSessionAfterFailedPackWrite(t *testing.T) {
	ctx := context.Background()
	t.Run("failed session, then a new one", func(t *testing.T) {
		be := backendtest.NewFaulty(memory.New())
		r := initRepo(t, be)
		data := random(5, 10000)
		id := saveBlob(t, r, data)
		be.FailSave(repo.PackFile, 1)
		if _, err := endSession(r, nil); !errors.Is(err, backendtest.ErrInjected) {
			t.Fatalf("first session: %v, want the injected error", err)
		}
		if r.Index().Has(id) {
			t.Error("the blob of the failed pack write is in the index")
		}
		if stored, err := writer(t, r).SaveBlob(ctx, repo.DataBlob, id, data); err != nil || !stored {
			t.Fatalf("saving the blob again: stored %v, %v; want it stored", stored, err)
		}
		flush(t, r)
		if _, err := openRepo(t, be).LoadBlob(ctx, id); err != nil {
			t.Errorf("the second session returned nil, but the blob is lost: %v", err)
		}
	})
	t.Run("full pack fails to write while saving", func(t *testing.T) {
		oneCore(t) // the first blob then shares the pack that fails
		be := backendtest.NewFaulty(memory.New())
		r := initRepo(t, be)
		stored := []repo.ID{saveBlob(t, r, []byte("a blob whose SaveBlob call succeeded"))}
		be.FailSave(repo.PackFile, 1)
		for i := range repo.DefaultPackSize/(1<<20) + 4 {
			data := random(uint64(100+i), 1<<20)
			id := r.BlobID(data)
			ok, err := writer(t, r).SaveBlob(ctx, repo.DataBlob, id, data)
			if errors.Is(err, backendtest.ErrInjected) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				stored = append(stored, id)
			}
		}
		_, err := endSession(r, nil)
		if be.Saves(repo.PackFile) == 0 {
			t.Fatal("no pack write was attempted")
		}
		if err != nil {
			return // the loss is reported
		}
		for i, id := range stored {
			if _, err := r.LoadBlob(ctx, id); err != nil {
				t.Errorf("blob %d: SaveBlob reported it stored and the session returned nil, but: %v", i, err)
			}
		}
	})
}

// A SaveBlob whose context is cancelled while it waits for a pack write to
// start must not lose the blobs that earlier SaveBlob calls put in that
// pack, nor leave them reserved so that they can never be stored again.
func TestCancelledSaveBlobKeepsEarlierBlobs(t *testing.T) {
	oneCore(t)
	bg := context.Background()
	be := backendtest.NewHeldPacks(memory.New())
	r := initRepo(t, be)
	perPack := repo.DefaultPackSize / (1 << 20) // 1 MiB blobs that fill a pack
	blob := func(i int) ([]byte, repo.ID) {
		data := random(uint64(1000+i), 1<<20)
		return data, r.BlobID(data)
	}
	// Fill two packs: their writes start and hang, which is as many pack
	// writes as the repository runs at once.
	stored := map[int]repo.ID{}
	for i := range 2 * perPack {
		data, id := blob(i)
		if ok, err := writer(t, r).SaveBlob(bg, repo.DataBlob, id, data); err != nil || !ok {
			t.Fatalf("blob %d: %v, %v", i, ok, err)
		}
		stored[i] = id
	}
	for range 2 {
		select {
		case <-be.Started():
		case <-time.After(10 * time.Second):
			t.Fatal("pack writes did not start")
		}
	}
	// A third pack's worth: all but its last blob are accepted ...
	for i := 2 * perPack; i < 3*perPack-1; i++ {
		data, id := blob(i)
		if ok, err := writer(t, r).SaveBlob(bg, repo.DataBlob, id, data); err != nil || !ok {
			t.Fatalf("blob %d: %v, %v", i, ok, err)
		}
		stored[i] = id
	}
	// ... and its last blob's call waits for a pack write slot until its
	// context is cancelled.
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		data, id := blob(3*perPack - 1)
		_, err := writer(t, r).SaveBlob(ctx, repo.DataBlob, id, data)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Log("the last SaveBlob did not wait for a write slot")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SaveBlob does not return when its context is cancelled")
	}
	be.Release()
	go func() {
		for range be.Started() {
		}
	}()
	if _, err := endSession(r, nil); err != nil {
		t.Logf("session: %v (the loss is reported)", err)
		return
	}
	for i := 2 * perPack; i < 3*perPack-1; i++ {
		if _, err := r.LoadBlob(bg, stored[i]); err != nil {
			t.Errorf("blob %d: SaveBlob reported it stored and the session returned nil, but: %v", i, err)
			data, id := blob(i)
			if ok, err := writer(t, r).SaveBlob(bg, repo.DataBlob, id, data); err == nil && !ok {
				t.Errorf("blob %d: and SaveBlob refuses to store it again (it stays reserved)", i)
			}
			break
		}
	}
}

// A session's stats are its own: the packs and bytes of packs and index
// files it wrote, and the blobs it stored; a second session counts from
// zero.
func TestWriteStats(t *testing.T) {
	be := memory.New()
	r := initRepo(t, be)
	sizes := func() (n int, size int64) {
		for _, ft := range []repo.FileType{repo.PackFile, repo.IndexFile} {
			if err := be.List(context.Background(), ft, func(_ string, s int64) error { size += s; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		return len(names(t, be, repo.PackFile)), size
	}
	saveBlob(t, r, random(6, 5000))
	saveBlob(t, r, random(7, 5000))
	first := flush(t, r).Stats()
	packs, size := sizes()
	if first.Packs != packs || first.Bytes != size || first.Blobs != 2 {
		t.Errorf("first session's stats %+v, want %d packs, 2 blobs and %d bytes of packs and index files", first, packs, size)
	}
	saveBlob(t, r, random(8, 5000))
	second := flush(t, r).Stats()
	packs2, size2 := sizes()
	if second.Packs != packs2-packs || second.Bytes != size2-size || second.Blobs != 1 {
		t.Errorf("second session's stats %+v, want %d packs, 1 blob and %d bytes", second, packs2-packs, size2-size)
	}
}

// ExampleRepository_WriteSession shows the write protocol.
func ExampleRepository_WriteSession() {
	ctx := context.Background()
	r, err := repo.Init(ctx, memory.New(), []byte("password"), repo.InitOptions{
		KDF: fastKDF, Chunker: testChunker,
	})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	data := []byte("some file content")
	id := r.BlobID(data)
	var tree repo.ID
	written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		if _, err := w.SaveBlob(ctx, repo.DataBlob, id, data); err != nil {
			return err
		}
		tree, err = w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "f", Type: repo.NodeFile, Content: []repo.ID{id}}}})
		return err
	})
	if err != nil {
		panic(err)
	}
	// Only a finished session's proof saves a snapshot that refers to them.
	if err := written.SaveSnapshot(ctx, &repo.Snapshot{ID: "example", Tree: tree}); err != nil {
		panic(err)
	}
	got, _ := r.LoadBlob(ctx, id)
	fmt.Println(string(got), written.Stats().Blobs)
	// Output: some file content 2
}

// TestStreamedPacks runs the streaming path (repo.PackStreamer) with faults:
// what was saved reads back; a failed write fails the session, gives up the
// blobs of its pack (a later session stores them again) and leaves no
// stream open; a failed commit fails the session, indexes nothing and
// leaves no stream open.
func TestStreamedPacks(t *testing.T) {
	ctx := context.Background()
	oneCore(t)
	blobs := [][]byte{random(1, 100<<10), compressible(200 << 10), random(2, 300<<10), []byte("small")}

	t.Run("round trip", func(t *testing.T) {
		be := backendtest.NewStreaming(memory.New())
		r := initRepo(t, be)
		var ids []repo.ID
		for _, b := range blobs {
			ids = append(ids, saveBlob(t, r, b))
		}
		flush(t, r)
		o := openRepo(t, be)
		for i, id := range ids {
			if got, err := o.LoadBlob(ctx, id); err != nil || !bytes.Equal(got, blobs[i]) {
				t.Errorf("blob %d: %v", i, err)
			}
		}
		if rep, err := o.Check(ctx, repo.CheckOptions{ReadDataFraction: 1}); err != nil || !rep.OK() {
			t.Errorf("check: %v%s", err, problemList(rep))
		}
		if n := be.Open(); n != 0 {
			t.Errorf("%d streams left open", n)
		}
	})

	t.Run("a failed write is reported before the session ends", func(t *testing.T) {
		be := backendtest.NewStreaming(memory.New())
		r := initRepo(t, be)
		be.FailWritesPast(1)
		var second error
		_, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
			first := random(1, 10<<10)
			if stored, err := w.SaveBlob(ctx, repo.DataBlob, r.BlobID(first), first); !stored || err != nil {
				t.Fatalf("first save: %v, %v; want it queued to the pack", stored, err)
			}
			// The pack's writer fails the write and cancels the
			// session's context at once, before the pack ends.
			<-ctx.Done()
			next := random(2, 10<<10)
			_, second = w.SaveBlob(context.Background(), repo.DataBlob, r.BlobID(next), next)
			return nil
		})
		if !errors.Is(second, backendtest.ErrInjected) {
			t.Errorf("the save after the failed write: %v, want the injected error", second)
		}
		if !errors.Is(err, backendtest.ErrInjected) {
			t.Errorf("session: %v, want the injected error", err)
		}
		if n := be.Open(); n != 0 {
			t.Errorf("%d streams left open after the failed write", n)
		}
	})

	t.Run("write fails", func(t *testing.T) {
		be := backendtest.NewStreaming(memory.New())
		r := initRepo(t, be)
		be.FailWritesPast(250 << 10)
		// The pack is written in the background: the failed write is
		// reported by a later save, or by the session's end.
		for _, b := range blobs {
			id := r.BlobID(b)
			if _, err := writer(t, r).SaveBlob(ctx, repo.DataBlob, id, b); err != nil {
				if !errors.Is(err, backendtest.ErrInjected) {
					t.Fatalf("save: %v, want the injected error", err)
				}
				break
			}
		}
		// The failed pack took blobs with it that earlier saves reported
		// as stored: the session fails even if its function ignores the
		// error, so that no snapshot can name them.
		if _, err := endSession(r, nil); !errors.Is(err, backendtest.ErrInjected) {
			t.Fatalf("session after a failed pack write: %v, want the injected error", err)
		}
		if n := be.Open(); n != 0 {
			t.Errorf("%d streams left open after the failed write", n)
		}
		for i, b := range blobs {
			if r.Index().Has(r.BlobID(b)) {
				t.Errorf("blob %d is indexed after the failed session", i)
			}
		}
		be.FailWritesPast(0)
		for i, b := range blobs {
			id := r.BlobID(b)
			stored, err := writer(t, r).SaveBlob(ctx, repo.DataBlob, id, b)
			if err != nil || !stored {
				t.Fatalf("blob %d in a later session: stored %v, %v; want it stored again", i, stored, err)
			}
		}
		flush(t, r)
		for i, b := range blobs {
			if got, err := r.LoadBlob(ctx, r.BlobID(b)); err != nil || !bytes.Equal(got, b) {
				t.Errorf("blob %d: %v", i, err)
			}
		}
	})

	t.Run("commit fails", func(t *testing.T) {
		be := backendtest.NewStreaming(memory.New())
		r := initRepo(t, be)
		id := saveBlob(t, r, blobs[0])
		be.FailCommits(true)
		if _, err := endSession(r, nil); !errors.Is(err, backendtest.ErrInjected) {
			t.Fatalf("session: %v, want the injected error", err)
		}
		if n := be.Open(); n != 0 {
			t.Errorf("%d streams left open after the failed commit", n)
		}
		if _, ok := r.Index().Lookup(id); ok {
			t.Error("a blob whose pack was never stored is in the index")
		}
		if packs := names(t, be, repo.PackFile); len(packs) != 0 {
			t.Errorf("packs stored: %v", packs)
		}
	})
}

// TestStreamedPackWriteDoesNotHoldPacker checks that a streamed pack's
// write that waits (for the disk or the network) does not stop further
// blobs from being saved: the packer only queues them. Before, the caller
// that appended a blob wrote it to the stream itself while holding the
// one data packer, and every other saver waited for that write.
func TestStreamedPackWriteDoesNotHoldPacker(t *testing.T) {
	ctx := context.Background()
	be := &stalledStreams{Backend: backendtest.NewStreaming(memory.New()), entered: make(chan struct{}, 1), gate: make(chan struct{})}
	r := initRepo(t, be)
	blobs := [][]byte{random(1, 100<<10), random(2, 100<<10), compressible(200 << 10), []byte("small")}
	w := writer(t, r)
	var ids []repo.ID
	for i, b := range blobs {
		id := r.BlobID(b)
		if stored, err := w.SaveBlob(ctx, repo.DataBlob, id, b); err != nil || !stored {
			t.Fatalf("blob %d: stored %v, %v", i, stored, err)
		}
		ids = append(ids, id)
		if i == 0 {
			<-be.entered // the first blob's write has begun, and waits
		}
	}
	close(be.gate)
	flush(t, r)
	for i, id := range ids {
		if got, err := r.LoadBlob(ctx, id); err != nil || !bytes.Equal(got, blobs[i]) {
			t.Errorf("blob %d: %v", i, err)
		}
	}
}

// stalledStreams holds the first Write of every pack stream until gate is
// closed, and tells entered when such a write begins.
type stalledStreams struct {
	repo.Backend
	entered chan struct{}
	gate    chan struct{}
}

func (s *stalledStreams) Unwrap() repo.Backend { return s.Backend }

func (s *stalledStreams) NewPackStream(ctx context.Context, kind repo.PackKind) (repo.PackStream, error) {
	ps, _ := repo.Capability[repo.PackStreamer](s.Backend)
	st, err := ps.NewPackStream(ctx, kind)
	if err != nil {
		return nil, err
	}
	return &stalledStream{PackStream: st, s: s}, nil
}

type stalledStream struct {
	repo.PackStream
	s       *stalledStreams
	started bool
}

func (st *stalledStream) Write(p []byte) (int, error) {
	if !st.started {
		st.started = true
		select {
		case st.s.entered <- struct{}{}:
		default:
		}
		<-st.s.gate
	}
	return st.PackStream.Write(p)
}

// TestTreesInPacksOfTheirOwn checks that no pack mixes trees and data, with
// packs saved whole and streamed, and that streamed packs say their kind.
func TestTreesInPacksOfTheirOwn(t *testing.T) {
	ctx := context.Background()
	oneCore(t)
	for _, streamed := range []bool{false, true} {
		var be repo.Backend = memory.New()
		if streamed {
			be = backendtest.NewStreaming(be)
		}
		r := initRepo(t, be)
		for i := range 50 {
			saveBlob(t, r, random(uint64(i), 10<<10))
			if _, err := writer(t, r).SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: fmt.Sprint(i), Type: repo.NodeFile}}}); err != nil {
				t.Fatal(err)
			}
		}
		flush(t, r)
		kinds := map[repo.BlobType]int{}
		err := be.List(ctx, repo.PackFile, func(name string, size int64) error {
			id, err := repo.ParseID(name)
			if err != nil {
				return err
			}
			blobs, err := r.ReadPackHeader(ctx, id, size)
			if err != nil {
				return err
			}
			for _, b := range blobs[1:] {
				if b.Type != blobs[0].Type {
					t.Errorf("streamed %v: pack %s holds blobs of types %d and %d", streamed, id.Short(), blobs[0].Type, b.Type)
				}
			}
			kinds[blobs[0].Type]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if kinds[repo.DataBlob] != 1 || kinds[repo.TreeBlob] != 1 {
			t.Errorf("streamed %v: packs by the type of their blobs: %v, want one of each", streamed, kinds)
		}
		if s, ok := be.(*backendtest.Streaming); ok {
			if got := s.Kinds(); !slices.Equal(slices.Sorted(slices.Values(got)), []repo.PackKind{repo.DataPack, repo.TreePack}) {
				t.Errorf("streams were started for packs of kinds %v, want one data and one tree pack", got)
			}
		}
	}
}

// masked is a chunk of n bytes that compresses well except where the trial
// of SaveBlob looks: its first 4 KiB and the 4 KiB at its middle are random.
func masked(seed uint64, n int) []byte {
	b := compressible(n)
	copy(b[:4<<10], random(seed, 4<<10))
	copy(b[n/2-2<<10:], random(seed+1, 4<<10))
	return b
}

// TestSaveChunkHint: the chunks of one file after a chunk that compressed
// are compressed without the trial of samples, so a chunk whose samples
// look incompressible is still stored compressed; after a chunk that did
// not compress, the trial decides again. Blobs under 128 KiB are never
// tried, only compressed.
func TestSaveChunkHint(t *testing.T) {
	ctx := context.Background()
	r := initRepo(t, memory.New())
	w := writer(t, r)
	var hint repo.CompressHint
	steps := []struct {
		name       string
		data       []byte
		hint       *repo.CompressHint
		compressed bool
	}{
		{"masked, no hint: the trial says no", masked(1, 256<<10), nil, false},
		{"masked, a hint that knows nothing", masked(3, 256<<10), &hint, false},
		{"a chunk that compresses", compressible(256 << 10), &hint, true},
		{"masked, after it", masked(5, 256<<10), &hint, true},
		{"masked, again", masked(7, 300<<10), &hint, true},
		{"random: compressed for nothing, stored raw", random(9, 256<<10), &hint, false},
		{"masked, after the random chunk", masked(11, 256<<10), &hint, false},
		{"masked, under 128 KiB: compressed untried", masked(13, 100<<10), nil, true},
		{"random, under 128 KiB: stored raw", random(15, 100<<10), nil, false},
	}
	ids := make([]repo.ID, len(steps))
	for i, s := range steps {
		ids[i] = r.BlobID(s.data)
		if stored, err := w.SaveChunk(ctx, repo.DataBlob, ids[i], s.data, s.hint); err != nil || !stored {
			t.Fatalf("%s: SaveChunk = %v, %v; want stored", s.name, stored, err)
		}
	}
	flush(t, r)
	for i, s := range steps {
		b, ok := r.Index().Lookup(ids[i])
		if !ok {
			t.Fatalf("%s: not in the index", s.name)
		}
		if got := b.Compression != 0; got != s.compressed {
			t.Errorf("%s: stored compressed %v (%d bytes of %d), want %v", s.name, got, b.Length, b.RawLength, s.compressed)
		}
		got, err := r.LoadBlob(ctx, ids[i])
		if err != nil || !bytes.Equal(got, s.data) {
			t.Errorf("%s: load = %d bytes, %v; want the %d saved", s.name, len(got), err, len(s.data))
		}
	}
}
