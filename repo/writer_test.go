package repo_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// sessionEnding is one way a write session's function can return.
type sessionEnding struct {
	name string
	// end returns from the session's function; cancel cancels the
	// session's parent context.
	end     func(cancel context.CancelFunc) error
	wantErr error // nil: the session succeeds
	panics  bool
}

var errFromFn = errors.New("the function failed")

var sessionEndings = []sessionEnding{
	{name: "nil", end: func(context.CancelFunc) error { return nil }},
	{name: "error", end: func(context.CancelFunc) error { return errFromFn }, wantErr: errFromFn},
	{name: "panic", end: func(context.CancelFunc) error { panic(errFromFn) }, panics: true},
	{name: "cancelled context", end: func(cancel context.CancelFunc) error { cancel(); return nil }, wantErr: context.Canceled},
}

// runSession runs a session whose function does work and then ends as e
// says; it returns what the session returned, with a panic recovered.
func runSession(r *repo.Repository, e sessionEnding, work func(ctx context.Context, w *repo.Writer)) (written *repo.Written, err error, panicked any) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer func() { panicked = recover() }()
	written, err = r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		work(ctx, w)
		return e.end(cancel)
	})
	return written, err, nil
}

// On every return path a session waits for the pack writes under way: when
// it returns, none is running. On success every blob is indexed; on
// failure none of the session's blobs is, and its Writer refuses work.
func TestWriteSessionEndsEveryPackWrite(t *testing.T) {
	onePacker(t)
	for _, e := range sessionEndings {
		t.Run(e.name, func(t *testing.T) {
			mem := memory.New()
			be := backendtest.NewHeldPacks(mem)
			r := initRepo(t, be)
			var ids []repo.ID
			var writer *repo.Writer
			written, err, panicked := runSession(r, e, func(ctx context.Context, w *repo.Writer) {
				writer = w
				// A pack's worth of blobs and one more: the full pack's
				// write starts and is held.
				for i := range repo.DefaultPackSize/(1<<20) + 1 {
					data := random(uint64(3000+i), 1<<20)
					id := r.BlobID(data)
					if _, err := w.SaveBlob(ctx, repo.DataBlob, id, data); err != nil {
						t.Errorf("save blob %d: %v", i, err)
					}
					ids = append(ids, id)
				}
				<-be.Started()
				// The held write goes on only once the function has
				// returned: the session must wait for it.
				returned := make(chan struct{})
				go func() { <-returned; be.Release() }()
				defer close(returned)
			})
			if n := be.Active(); n != 0 {
				t.Errorf("%d pack writes under way after the session returned", n)
			}
			if e.panics != (panicked != nil) {
				t.Errorf("panic %v, want one: %v", panicked, e.panics)
			}
			succeeds := e.wantErr == nil && !e.panics
			if !e.panics && !errors.Is(err, e.wantErr) || succeeds != (written != nil) {
				t.Fatalf("session returned %v, %v; want error %v", written, err, e.wantErr)
			}
			indexed := 0
			for _, id := range ids {
				if r.Index().Has(id) {
					indexed++
				}
			}
			if succeeds && indexed != len(ids) {
				t.Errorf("%d of %d blobs indexed after a successful session", indexed, len(ids))
			} else if !succeeds && indexed != 0 {
				t.Errorf("%d blobs of the failed session are indexed", indexed)
			}
			if _, err := writer.SaveBlob(context.Background(), repo.DataBlob, r.BlobID([]byte("late")), []byte("late")); !errors.Is(err, repo.ErrSessionClosed) {
				t.Errorf("SaveBlob after the session: %v, want ErrSessionClosed", err)
			}
		})
	}
}

// A partly written pack streamed into a temporary file is either committed
// (success) or thrown away: no session leaves anything in tmp/.
func TestWriteSessionLeavesNothingInTmp(t *testing.T) {
	for _, e := range sessionEndings {
		t.Run(e.name, func(t *testing.T) {
			dir := t.TempDir()
			be, err := local.Create(dir)
			if err != nil {
				t.Fatal(err)
			}
			r := initRepo(t, be)
			tmpFiles := func() int {
				entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
				if err != nil {
					t.Fatal(err)
				}
				return len(entries)
			}
			_, err, _ = runSession(r, e, func(ctx context.Context, w *repo.Writer) {
				for i := range 3 {
					data := random(uint64(4000+i), 10<<10)
					if _, err := w.SaveBlob(ctx, repo.DataBlob, r.BlobID(data), data); err != nil {
						t.Errorf("save blob %d: %v", i, err)
					}
				}
				if tmpFiles() == 0 {
					t.Error("no pack is being streamed into tmp/: the test proves nothing")
				}
			})
			if !e.panics && !errors.Is(err, e.wantErr) {
				t.Errorf("session: %v, want %v", err, e.wantErr)
			}
			if n := tmpFiles(); n != 0 {
				t.Errorf("%d files left in tmp/", n)
			}
		})
	}
}

// A snapshot is saved only through the proof of a finished session, and
// only when its tree is stored: not with a made-up proof, nor naming a tree
// of a session that failed.
func TestSnapshotNeedsAFinishedSession(t *testing.T) {
	ctx := context.Background()
	r := initRepo(t, memory.New())
	var failedTree repo.ID
	_, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		id, err := w.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: "lost", Type: repo.NodeFile}}})
		failedTree = id
		if err != nil {
			return err
		}
		return errFromFn
	})
	if !errors.Is(err, errFromFn) {
		t.Fatalf("session: %v", err)
	}
	var goodTree repo.ID
	written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
		goodTree, err = w.SaveTree(ctx, &repo.Tree{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var none *repo.Written
	tests := []struct {
		name    string
		proof   *repo.Written
		tree    repo.ID
		wantErr bool
	}{
		{"no proof", none, goodTree, true},
		{"made-up proof", &repo.Written{}, goodTree, true},
		{"tree of a failed session", written, failedTree, true},
		{"tree of a finished session", written, goodTree, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &repo.Snapshot{ID: repo.NewSnapshotID(), Tree: tt.tree}
			err := tt.proof.SaveSnapshot(ctx, s)
			if (err != nil) != tt.wantErr {
				t.Errorf("SaveSnapshot: %v, want an error: %v", err, tt.wantErr)
			}
			if ok, _ := r.HasSnapshot(ctx, s.ID); ok == tt.wantErr {
				t.Errorf("snapshot saved: %v, want %v", ok, !tt.wantErr)
			}
		})
	}
}

// sealedBlob returns blob id's index entry in r and its sealed bytes, as
// its pack holds them.
func sealedBlob(t *testing.T, be repo.Backend, r *repo.Repository, id repo.ID) (repo.IndexedBlob, []byte) {
	t.Helper()
	b, ok := r.Index().Lookup(id)
	if !ok {
		t.Fatalf("blob %s is not indexed", id.Short())
	}
	sealed, err := be.Load(context.Background(), repo.Handle{Type: repo.PackFile, Name: b.Pack.String()}, int64(b.Offset), int64(b.Length))
	if err != nil {
		t.Fatal(err)
	}
	return b, sealed
}

// unindexedRepo opens the repository in be without loading its index, so
// that its sessions store again what the repository has.
func unindexedRepo(t *testing.T, be repo.Backend) *repo.Repository {
	t.Helper()
	r, err := repo.Open(context.Background(), be, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// sealedCopyRepos are the kinds of repository a sealed copy is made in.
var sealedCopyRepos = []struct {
	name     string
	insecure bool
}{
	{"encrypted", false},
	{"unencrypted", true},
}

// A blob stored with SaveSealedBlob lands in a new pack with its sealed
// bytes unchanged (no new nonce, no new compression) and the header entry
// of the original, and that pack's blob opens, decompresses and verifies
// to the original plaintext: a seal is bound to the blob's ID only.
func TestSaveSealedBlobCopiesTheSealAsItIs(t *testing.T) {
	onePacker(t)
	ctx := context.Background()
	blobs := []struct {
		name       string
		typ        repo.BlobType
		data       []byte
		compressed bool
	}{
		{"incompressible data", repo.DataBlob, random(1, 100<<10), false},
		{"compressible data", repo.DataBlob, compressible(100 << 10), true},
		{"small tree", repo.TreeBlob, []byte(`{"nodes":[]}`), false},
	}
	for _, kind := range sealedCopyRepos {
		for _, blob := range blobs {
			t.Run(kind.name+"/"+blob.name, func(t *testing.T) {
				be := memory.New()
				r := initRepoWith(t, be, password, repo.InitOptions{Insecure: kind.insecure})
				id := saveBlobOfType(t, r, blob.typ, blob.data)
				// A neighbour, so that a copy's pack is never the
				// original's (unencrypted, a pack of the blob alone
				// would be the same bytes, and so the same pack).
				saveBlobOfType(t, r, blob.typ, random(9, 1000))
				flush(t, r)
				orig, sealed := sealedBlob(t, be, openRepo(t, be), id)
				if got := orig.Compression != 0; got != blob.compressed {
					t.Fatalf("original stored compressed: %v, want %v", got, blob.compressed)
				}
				dst := unindexedRepo(t, be)
				before := names(t, be, repo.PackFile)
				stored, err := writer(t, dst).SaveSealedBlob(ctx, orig.PackedBlob, sealed)
				if err != nil || !stored {
					t.Fatalf("SaveSealedBlob = %v, %v; want stored", stored, err)
				}
				flush(t, dst)
				pack := onlyNewPack(t, be, before)
				data := load(t, be, repo.Handle{Type: repo.PackFile, Name: pack.String()})
				header, err := dst.ReadPackHeader(ctx, pack, int64(len(data)))
				if err != nil || len(header) != 1 {
					t.Fatalf("new pack's header %+v, %v; want one blob", header, err)
				}
				h := header[0]
				if h.ID != id || h.Type != blob.typ || h.Compression != orig.Compression || h.RawLength != orig.RawLength || h.Length != orig.Length {
					t.Errorf("new header entry %+v, want the original's %+v", h, orig.PackedBlob)
				}
				if !bytes.Equal(data[h.Offset:h.Offset+h.Length], sealed) {
					t.Error("the copy's sealed bytes differ from the original's")
				}
				opened := 0
				err = dst.SplitPack(pack, data, func(b repo.PackedBlob, plain []byte, err error) {
					opened++
					if err != nil || !bytes.Equal(plain, blob.data) {
						t.Errorf("the copy opens with %v to %d bytes, want the %d saved", err, len(plain), len(blob.data))
					}
				})
				if err != nil || opened != 1 {
					t.Errorf("SplitPack of the new pack: %v, %d blobs", err, opened)
				}
			})
		}
	}
}

// SaveSealedBlob refuses bytes that do not open as the blob they are said
// to be, with ErrIntegrity naming the blob: nothing is stored, and the ID
// is free again, so the intact bytes store afterwards in the same session.
func TestSaveSealedBlobRefusesWhatDoesNotOpen(t *testing.T) {
	onePacker(t)
	ctx := context.Background()
	other := repo.ID{1, 2, 3}
	damages := []struct {
		name   string
		damage func(b *repo.PackedBlob, sealed []byte) []byte
	}{
		{"a flipped byte", func(_ *repo.PackedBlob, s []byte) []byte { return flipped(s, len(s)/2) }},
		{"the last byte cut off", func(_ *repo.PackedBlob, s []byte) []byte { return s[:len(s)-1] }},
		{"nothing left", func(_ *repo.PackedBlob, s []byte) []byte { return nil }},
		{"another blob's ID", func(b *repo.PackedBlob, s []byte) []byte { b.ID = other; return s }},
		{"a raw length that does not match", func(b *repo.PackedBlob, s []byte) []byte { b.RawLength++; return s }},
		{"an unknown type", func(b *repo.PackedBlob, s []byte) []byte { b.Type = 9; return s }},
		{"an unknown compression", func(b *repo.PackedBlob, s []byte) []byte { b.Compression = 7; return s }},
	}
	for _, kind := range sealedCopyRepos {
		for _, d := range damages {
			t.Run(kind.name+"/"+d.name, func(t *testing.T) {
				be := memory.New()
				r := initRepoWith(t, be, password, repo.InitOptions{Insecure: kind.insecure})
				id := saveBlob(t, r, random(2, 20<<10))
				saveBlob(t, r, random(3, 1000)) // a neighbour, as above
				flush(t, r)
				orig, sealed := sealedBlob(t, be, openRepo(t, be), id)
				b := orig.PackedBlob
				bad := d.damage(&b, append([]byte(nil), sealed...))
				dst := unindexedRepo(t, be)
				before := names(t, be, repo.PackFile)
				w := writer(t, dst)
				stored, err := w.SaveSealedBlob(ctx, b, bad)
				if stored || !errors.Is(err, repo.ErrIntegrity) || !strings.Contains(err.Error(), b.ID.Short()) {
					t.Fatalf("SaveSealedBlob of damaged bytes = %v, %v; want ErrIntegrity naming blob %s", stored, err, b.ID.Short())
				}
				if b.ID == id {
					if stored, err := w.SaveSealedBlob(ctx, orig.PackedBlob, sealed); err != nil || !stored {
						t.Fatalf("SaveSealedBlob of the intact bytes after the damaged = %v, %v; want stored", stored, err)
					}
				}
				flush(t, dst)
				added := len(names(t, be, repo.PackFile)) - len(before)
				if want := map[bool]int{true: 1, false: 0}[b.ID == id]; added != want {
					t.Errorf("%d packs written, want %d (the intact copy only)", added, want)
				}
			})
		}
	}
}

// manyCores runs the test with GOMAXPROCS at least 4, so that a writer
// that kept a data packer per core would have several on any machine.
// Tests using it must not run in parallel.
func manyCores(t *testing.T) {
	old := runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0)))
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// packBackends are the two ways a pack is written: buffered whole in
// memory and saved at the end, or streamed to the backend as blobs come.
var packBackends = []struct {
	name string
	new  func() repo.Backend
}{
	{"buffered", func() repo.Backend { return memory.New() }},
	{"streamed", func() repo.Backend { return backendtest.NewStreaming(memory.New()) }},
}

// packSizes returns the size of every pack in be.
func packSizes(t *testing.T, be repo.Backend) map[repo.ID]int64 {
	t.Helper()
	sizes := map[repo.ID]int64{}
	err := be.List(context.Background(), repo.PackFile, func(name string, size int64) error {
		id, err := repo.ParseID(name)
		sizes[id] = size
		return err
	})
	if err != nil {
		t.Fatalf("list packs: %v", err)
	}
	return sizes
}

// testPackSize is the size at which the packs of the tests below fill:
// the smallest a repository allows, so that filling a few is quick.
const testPackSize = 1 << 20

// Goroutines that save blobs at once share one data packer: a session
// that stores about 2.5 packs' worth ends with two full data packs and
// one partly filled, not with a partly filled pack per core.
func TestConcurrentSavesLeaveOnePartlyFilledPack(t *testing.T) {
	manyCores(t)
	const goroutines, each, size = 4, 10, 64 << 10 // 2.5 packs
	for _, kind := range packBackends {
		t.Run(kind.name, func(t *testing.T) {
			be := kind.new()
			r := initRepo(t, be)
			r.SetPackSize(testPackSize)
			_, err := r.WriteSession(context.Background(), repo.WriteOptions{}, func(ctx context.Context, w *repo.Writer) error {
				g, ctx := errgroup.WithContext(ctx)
				for n := range goroutines {
					g.Go(func() error {
						for i := range each {
							data := random(uint64(5000+n*each+i), size)
							if _, err := w.SaveBlob(ctx, repo.DataBlob, r.BlobID(data), data); err != nil {
								return err
							}
						}
						return nil
					})
				}
				return g.Wait()
			})
			if err != nil {
				t.Fatalf("session: %v", err)
			}
			sizes := packSizes(t, be)
			partly := 0
			for _, size := range sizes {
				if size < testPackSize {
					partly++
				}
			}
			if len(sizes) != 3 || partly != 1 {
				t.Errorf("%d packs of which %d partly filled (sizes %v); want 3 packs, 1 partly filled", len(sizes), partly, sizes)
			}
		})
	}
}

// The chunks of a file that one goroutine saves one after another lie one
// after another in the packs: in the first pack from offset 0 without a
// gap, the next chunk at the start of the next pack once a pack is full,
// and no pack taken up again once the next has begun. Restoring the file
// then reads each pack once, front to back.
func TestOneGoroutinesBlobsLieInOrder(t *testing.T) {
	manyCores(t)
	const chunks, chunkSize = 100, 25 << 10 // 2.4 packs
	for _, kind := range packBackends {
		t.Run(kind.name, func(t *testing.T) {
			be := kind.new()
			r := initRepo(t, be)
			r.SetPackSize(testPackSize)
			ids := make([]repo.ID, chunks)
			w := writer(t, r)
			for i := range ids {
				data := random(uint64(7000+i), chunkSize)
				ids[i] = r.BlobID(data)
				if _, err := w.SaveBlob(context.Background(), repo.DataBlob, ids[i], data); err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
			}
			flush(t, r)
			sizes := packSizes(t, be)
			var packs []repo.ID // in the order the chunks reach them
			var end uint32      // where the previous chunk ends in its pack
			for i, id := range ids {
				b, ok := r.Index().Lookup(id)
				if !ok {
					t.Fatalf("chunk %d is not indexed", i)
				}
				if len(packs) == 0 || b.Pack != packs[len(packs)-1] {
					if slices.Contains(packs, b.Pack) {
						t.Fatalf("chunk %d goes back to pack %d of %d", i, slices.Index(packs, b.Pack)+1, len(packs))
					}
					if len(packs) > 0 && sizes[packs[len(packs)-1]] < testPackSize {
						t.Errorf("chunk %d starts pack %d while pack %d holds only %d bytes", i, len(packs)+1, len(packs), sizes[packs[len(packs)-1]])
					}
					packs, end = append(packs, b.Pack), 0
				}
				if b.Offset != end {
					t.Errorf("chunk %d at offset %d of pack %d, want %d (right after chunk %d)", i, b.Offset, len(packs), end, i-1)
				}
				end = b.Offset + b.Length
			}
			if len(packs) != 3 || len(sizes) != 3 {
				t.Errorf("the chunks lie in %d packs (%d in all), want 3", len(packs), len(sizes))
			}
		})
	}
}
