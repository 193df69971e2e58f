package repo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// cacheTestRepo is a repository of index files of random blobs, opened
// again for each look at it with the index cache in a folder of its own.
type cacheTestRepo struct {
	t     *testing.T
	be    *memory.Backend
	root  string
	rng   *rand.Rand
	files map[string][]repo.IndexedBlob // index file name -> its blobs
}

func newCacheTestRepo(t *testing.T) *cacheTestRepo {
	repo.LowerIndexCacheMinBlobs(t, 100)
	c := &cacheTestRepo{t: t, be: memory.New(), root: t.TempDir(), rng: rand.New(rand.NewPCG(19, 19)), files: map[string][]repo.IndexedBlob{}}
	initRepo(t, c.be)
	for range 3 {
		c.addIndexFile(200)
	}
	return c
}

// addIndexFile stores an index file of n new blobs, as a backup does.
func (c *cacheTestRepo) addIndexFile(n int) string {
	c.t.Helper()
	r := c.open(nil)
	var pack repo.ID
	for i := range pack {
		pack[i] = byte(c.rng.Uint32())
	}
	blobs := make([]repo.IndexedBlob, n)
	for i := range blobs {
		var id repo.ID
		for j := range id {
			id[j] = byte(c.rng.Uint32())
		}
		blobs[i] = repo.IndexedBlob{PackedBlob: repo.PackedBlob{ID: id, Type: repo.DataBlob, Offset: uint32(i * 100), Length: 100, RawLength: 60}, Pack: pack}
	}
	name, err := r.SaveIndexFile(context.Background(), blobs)
	if err != nil {
		c.t.Fatal(err)
	}
	c.files[name] = blobs
	return name
}

// open opens the repository with the index cache (unless warnings is
// nil: then without) and loads the index, collecting the warnings.
func (c *cacheTestRepo) open(warnings *[]string) *repo.Repository {
	c.t.Helper()
	r, err := repo.Open(context.Background(), c.be, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(r.Close)
	if warnings != nil {
		r.UseIndexCache(c.root, func(format string, args ...any) { *warnings = append(*warnings, fmt.Sprintf(format, args...)) })
	}
	if err := r.LoadIndex(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	return r
}

// wantIndex fails unless r finds every blob of the index files there are,
// where they are, and no other.
func (c *cacheTestRepo) wantIndex(r *repo.Repository) {
	c.t.Helper()
	n := 0
	for _, blobs := range c.files {
		for _, b := range blobs {
			if got, ok := r.Index().Lookup(b.ID); !ok || got != b {
				c.t.Fatalf("lookup of %s: %v %v, want %v", b.ID.Short(), got, ok, b)
			}
			n++
		}
	}
	if r.Index().Len() != n {
		c.t.Fatalf("index holds %d blobs, want %d", r.Index().Len(), n)
	}
}

// wantCache fails unless r answers from a cache covering covered files.
func (c *cacheTestRepo) wantCache(r *repo.Repository, covered int) {
	c.t.Helper()
	if used, n := r.IndexFromCache(); !used || n != covered {
		c.t.Fatalf("index from cache %v covering %d files, want true covering %d", used, n, covered)
	}
}

// wantWarning fails unless warnings is one warning that says what.
func (c *cacheTestRepo) wantWarning(warnings []string, what string) {
	c.t.Helper()
	if len(warnings) != 1 || !strings.Contains(warnings[0], what) {
		c.t.Fatalf("warnings %q, want one that says %q", warnings, what)
	}
}

func (c *cacheTestRepo) wantNoWarning(warnings []string) {
	c.t.Helper()
	if len(warnings) > 0 {
		c.t.Fatalf("warnings: %q", warnings)
	}
}

// A big index is cached at the first open, which answers from the cache
// it built, as the next opens do, with an index file written since read
// beside it; a removed index file makes the open build it again from every
// file.
func TestIndexCacheFollowsTheIndexFiles(t *testing.T) {
	c := newCacheTestRepo(t)
	var warnings []string
	r := c.open(&warnings)
	c.wantCache(r, 3)
	c.wantIndex(r)
	if _, err := os.Stat(r.IndexCachePath(c.root)); err != nil {
		t.Fatalf("no cache after the first open: %v", err)
	}
	r = c.open(&warnings)
	c.wantCache(r, 3)
	c.wantIndex(r)

	added := c.addIndexFile(5) // a backup's
	r = c.open(&warnings)
	c.wantCache(r, 3) // the new file is small: read beside the cache
	c.wantIndex(r)

	c.addIndexFile(300) // more than a sixteenth of the cache: folded in
	r = c.open(&warnings)
	c.wantCache(r, 3)
	c.wantIndex(r)
	r = c.open(&warnings)
	c.wantCache(r, 5)
	c.wantIndex(r)

	// A prune replaced an index file: the cache may place blobs in packs
	// that are gone, and is not used.
	if err := c.be.Remove(context.Background(), repo.Handle{Type: repo.IndexFile, Name: added}); err != nil {
		t.Fatal(err)
	}
	delete(c.files, added)
	c.wantNoWarning(warnings)
	r = c.open(&warnings)
	c.wantCache(r, 4) // built again: the stale one covered 5
	c.wantIndex(r)
	c.wantWarning(warnings, "is stale")
	warnings = nil
	r = c.open(&warnings)
	c.wantCache(r, 4)
	c.wantIndex(r)
	c.wantNoWarning(warnings)
}

// A changed byte in the cache file's header is told at the open, which
// builds the cache again from the files and answers from the new one.
func TestIndexCacheDamagedIsRebuilt(t *testing.T) {
	c := newCacheTestRepo(t)
	var warnings []string
	r := c.open(&warnings)
	path := r.IndexCachePath(c.root)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-20] ^= 1 // in the sealed header
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r = c.open(&warnings)
	c.wantWarning(warnings, "is not usable")
	c.wantCache(r, 3)
	c.wantIndex(r)
	if now, err := os.ReadFile(path); err != nil || bytes.Equal(now, data) {
		t.Fatalf("the damaged cache was not replaced: %v", err)
	}
	warnings = nil
	r = c.open(&warnings)
	c.wantCache(r, 3)
	c.wantIndex(r)
	c.wantNoWarning(warnings)
}

// Without UseIndexCache (nightjar --no-cache) no cache is written; below
// the threshold a stale one is removed.
func TestIndexCacheOnlyWhenAskedAndBig(t *testing.T) {
	c := newCacheTestRepo(t)
	r := c.open(nil)
	c.wantIndex(r)
	if _, err := os.Stat(filepath.Join(c.root, r.ID())); !os.IsNotExist(err) {
		t.Fatalf("a cache folder without UseIndexCache: %v", err)
	}
	var warnings []string
	r = c.open(&warnings)
	if _, err := os.Stat(r.IndexCachePath(c.root)); err != nil {
		t.Fatalf("no cache of 600 blobs with a threshold of 100: %v", err)
	}
	// A prune shrank the index below the threshold: the cache, stale, goes.
	repo.LowerIndexCacheMinBlobs(t, 601)
	for name, blobs := range c.files {
		if len(blobs) == 200 { // one the cache covers
			if err := c.be.Remove(context.Background(), repo.Handle{Type: repo.IndexFile, Name: name}); err != nil {
				t.Fatal(err)
			}
			delete(c.files, name)
			break
		}
	}
	r = c.open(&warnings)
	c.wantIndex(r)
	if _, err := os.Stat(r.IndexCachePath(c.root)); !os.IsNotExist(err) {
		t.Fatalf("a stale cache kept for an index below the threshold: %v", err)
	}
	c.wantWarning(warnings, "is stale")
}

// A block of the cache changed after the open: a read of a blob in it
// fails naming the damaged block (not only "not found"), the cache file is
// removed, and the next open rebuilds it.
func TestIndexCacheDamagedBlockNamedAndRemoved(t *testing.T) {
	c := newCacheTestRepo(t)
	var warnings []string
	c.open(&warnings)
	r := c.open(&warnings)
	c.wantCache(r, 3)
	path := r.IndexCachePath(c.root)
	first := repo.ID{}
	for i := range first {
		first[i] = 0xff
	}
	for _, blobs := range c.files {
		for _, b := range blobs {
			if bytes.Compare(b.ID[:], first[:]) < 0 {
				first = b.ID
			}
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff}, 64); err != nil { // inside block 0
		t.Fatal(err)
	}
	f.Close()
	_, err = r.LoadBlob(context.Background(), first)
	if !errors.Is(err, repo.ErrNotFound) || !strings.Contains(err.Error(), "index cache block 0 damaged") || !strings.Contains(err.Error(), path) {
		t.Fatalf("read of a blob in a damaged block: %v, want not found naming block 0 and %s", err, path)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the damaged cache is still there: %v", err)
	}
	r = c.open(&warnings)
	c.wantIndex(r)
	r = c.open(&warnings)
	c.wantCache(r, 3)
	c.wantIndex(r)
	c.wantNoWarning(warnings)
}

// A load into an index that already holds blobs writes no cache: those
// blobs need not be in the index files the cache would say it covers.
func TestIndexCacheNotWrittenByALoadIntoAFullIndex(t *testing.T) {
	c := newCacheTestRepo(t)
	var warnings []string
	r := c.open(&warnings)
	path := r.IndexCachePath(c.root)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := r.LoadIndex(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a load into a full index wrote a cache: %v", err)
	}
	c.wantIndex(r)
	c.wantNoWarning(warnings)
}

// A big index with a damaged index file writes no cache, and says why.
func TestIndexCacheNotWrittenTold(t *testing.T) {
	c := newCacheTestRepo(t)
	if err := c.be.Save(context.Background(), repo.Handle{Type: repo.IndexFile, Name: strings.Repeat("ab", 32)}, []byte("not an index file")); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	r := c.open(&warnings)
	if _, err := os.Stat(r.IndexCachePath(c.root)); !os.IsNotExist(err) {
		t.Fatalf("a cache was written: %v", err)
	}
	c.wantWarning(warnings, "1 index files are damaged")
}

// sortDir makes the cache build's sorter spill a run every perRun records
// into a folder of the test's ($TMPDIR), and returns the folder.
func sortDir(t *testing.T, perRun int) string {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	repo.LowerIndexCacheSortBudget(t, perRun)
	return dir
}

// filesIn lists the files in dir.
func filesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Join(dir, e.Name()))
	}
	return names
}

// The open that builds the cache holds a bounded number of entries in
// memory, whatever the number of blobs: with a sort of 50 records in
// memory, the 600 entries read are on disk in runs, but for at most 50,
// when the merge starts; afterwards no run is left.
func TestIndexCacheBuildSpills(t *testing.T) {
	c := newCacheTestRepo(t)
	tmp := sortDir(t, 50)
	runs := -1
	repo.OnIndexCacheBuildSorted(t, func() { runs = len(filesIn(t, tmp)) })
	var warnings []string
	r := c.open(&warnings)
	if runs < (600-50)/50 {
		t.Fatalf("%d runs on disk before the merge, want at least %d: more than 50 records were held", runs, (600-50)/50)
	}
	c.wantCache(r, 3)
	c.wantIndex(r)
	c.wantNoWarning(warnings)
	assertNoFiles(t, tmp)
}

// failingIndexLoad is a backend on which loading the index file named
// fails, as a lost connection fails it.
type failingIndexLoad struct {
	*memory.Backend
	name string
}

var errLostConnection = errors.New("connection lost")

func (b failingIndexLoad) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.IndexFile && h.Name == b.name {
		return nil, errLostConnection
	}
	return b.Backend.Load(ctx, h, offset, length)
}

// A build stopped half-way, while the index files are read (the third
// fails to load, after two went into the sort's runs on disk) or when
// every entry is in the runs (the command interrupted), fails the load
// and leaves no cache, no temporary cache file and no run.
func TestIndexCacheBuildInterrupted(t *testing.T) {
	c := newCacheTestRepo(t)
	c.addIndexFile(200)
	tmp := sortDir(t, 50)
	third := names(t, c.be, repo.IndexFile)[2]
	openWith := func(be repo.Backend) (*repo.Repository, *[]string) {
		r, err := repo.Open(context.Background(), be, repo.OpenOptions{Password: pw(password)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		var warnings []string
		r.UseIndexCache(c.root, func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) })
		return r, &warnings
	}

	r, warnings := openWith(failingIndexLoad{c.be, third})
	if err := r.LoadIndex(context.Background()); !errors.Is(err, errLostConnection) {
		t.Fatalf("load with an index file that fails to load: %v, want the failure", err)
	}
	assertNoFiles(t, filepath.Dir(r.IndexCachePath(c.root)))
	assertNoFiles(t, tmp)
	c.wantNoWarning(*warnings)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := 0
	repo.OnIndexCacheBuildSorted(t, func() {
		runs = len(filesIn(t, tmp))
		cancel()
	})
	r, warnings = openWith(c.be)
	if err := r.LoadIndex(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("load interrupted: %v, want context canceled", err)
	}
	if runs < (800-50)/50 {
		t.Fatalf("%d runs on disk when the build was interrupted, want at least %d", runs, (800-50)/50)
	}
	assertNoFiles(t, filepath.Dir(r.IndexCachePath(c.root)))
	assertNoFiles(t, tmp)
	c.wantNoWarning(*warnings)
}

// A build whose merge fails (a run cut in the middle of a record, as a
// full disk leaves it) or hands back fewer entries than were read (a run
// cut by a whole record) writes no cache and no temporary file, says so,
// and the open answers from the index files read into memory.
func TestIndexCacheBuildFailsCleanly(t *testing.T) {
	for _, cut := range []int{repo.IndexCacheBuildRecordSize / 2, repo.IndexCacheBuildRecordSize} {
		t.Run(fmt.Sprintf("cut %d bytes", cut), func(t *testing.T) {
			c := newCacheTestRepo(t)
			tmp := sortDir(t, 50)
			repo.OnIndexCacheBuildSorted(t, func() {
				run := filesIn(t, tmp)[0]
				st, err := os.Stat(run)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(run, st.Size()-int64(cut)); err != nil {
					t.Fatal(err)
				}
			})
			var warnings []string
			r := c.open(&warnings)
			c.wantWarning(warnings, "not written")
			if used, _ := r.IndexFromCache(); used {
				t.Fatal("the index answers from a cache")
			}
			c.wantIndex(r)
			assertNoFiles(t, filepath.Dir(r.IndexCachePath(c.root)))
			assertNoFiles(t, tmp)
		})
	}
}

// assertNoFiles fails unless dir is missing or empty.
func assertNoFiles(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return
	}
	if names := filesIn(t, dir); len(names) > 0 {
		t.Fatalf("%s holds %v, want nothing", dir, names)
	}
}

// A cache folder that cannot be written is told, before any index
// file is sorted (no run is written), and the index is read into memory.
func TestIndexCacheFolderNotWritable(t *testing.T) {
	c := newCacheTestRepo(t)
	tmp := sortDir(t, 50)
	repo.OnIndexCacheBuildSorted(t, func() { t.Error("the index files were sorted for a cache that cannot be written") })
	c.root = filepath.Join(t.TempDir(), "a file")
	if err := os.WriteFile(c.root, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	r := c.open(&warnings)
	// The first says the cache cannot be opened (not a directory).
	if len(warnings) != 2 || !strings.Contains(warnings[1], "not written") {
		t.Fatalf("warnings %q, want the open's and one that says the cache is not written", warnings)
	}
	c.wantIndex(r)
	assertNoFiles(t, tmp)
}

// Two opens building the cache at once (A held with its entries sorted
// while B builds, renames and answers from its cache) both answer from a
// cache, every blob where it is, and leave one cache file and no run.
func TestIndexCacheTwoStreamingBuilders(t *testing.T) {
	c := newCacheTestRepo(t)
	tmp := sortDir(t, 50)
	aHeld, releaseA := make(chan struct{}), make(chan struct{})
	var builds atomic.Int32
	repo.OnIndexCacheBuildSorted(t, func() {
		if builds.Add(1) == 1 {
			close(aHeld)
			<-releaseA
		}
	})
	var warningsA, warningsB []string
	doneA := make(chan *repo.Repository, 1)
	go func() {
		r, err := repo.Open(context.Background(), c.be, repo.OpenOptions{Password: pw(password)})
		if err != nil {
			close(aHeld)
			doneA <- nil
			return
		}
		r.UseIndexCache(c.root, func(format string, args ...any) { warningsA = append(warningsA, fmt.Sprintf(format, args...)) })
		if err := r.LoadIndex(context.Background()); err != nil {
			t.Errorf("builder A: %v", err)
		}
		doneA <- r
	}()
	<-aHeld
	rB := c.open(&warningsB)
	close(releaseA)
	rA := <-doneA
	if rA == nil {
		t.Fatal("builder A did not open the repository")
	}
	defer rA.Close()
	for _, r := range []*repo.Repository{rA, rB} {
		c.wantCache(r, 3)
		c.wantIndex(r)
	}
	c.wantNoWarning(warningsA)
	c.wantNoWarning(warningsB)
	if got := filesIn(t, filepath.Dir(rA.IndexCachePath(c.root))); len(got) != 1 || filepath.Base(got[0]) != "index.cache" {
		t.Fatalf("cache folder holds %v, want only index.cache", got)
	}
	assertNoFiles(t, tmp)
}

// A cache damaged on disk in one of its blocks (not its header) is not
// opened: the next open reads the index files and writes the cache again,
// so that no lookup answers "not found" for the damaged block's blobs. A
// repair of snapshots, which judges losses by lookups, then finds nothing
// to repair, and file content reads back. (With a lazily checked block,
// the repair replaced the snapshot by an empty one and forgot it.)
func TestIndexCacheDamagedBlockIsNotTrusted(t *testing.T) {
	f := newFixture(t)
	repo.LowerIndexCacheMinBlobs(t, 1)
	root := t.TempDir()
	ctx := context.Background()
	open := func() (*repo.Repository, []string) {
		var warnings []string
		r := f.open(t)
		r.UseIndexCache(root, func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) })
		if err := r.LoadIndex(ctx); err != nil {
			t.Fatal(err)
		}
		return r, warnings
	}
	r, _ := open()
	if used, _ := r.IndexFromCache(); !used {
		t.Fatal("the first open answers from no cache")
	}
	path := r.IndexCachePath(root)
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Byte 64 lies in block 0, past the magic.
	if _, err := fh.WriteAt([]byte{0xff}, 64); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	r, warnings := open()
	if len(warnings) == 0 {
		t.Error("no warning about the damaged cache")
	}
	var buf repo.BlobBuffer
	if err := r.LoadBlobsInOrder(ctx, f.content["/src/a.txt"], &buf, func(int, []byte) error { return nil }); err != nil {
		t.Errorf("read a file's content after the damaged cache: %v", err)
	}
	res, err := r.RepairSnapshots(ctx, repo.RepairSnapshotsOptions{Forget: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range res.Repaired {
		t.Errorf("snapshot %s repaired as %s (forgotten %v): %+v", rs.Original, rs.Repaired, rs.Forgotten, rs.Removed)
	}
}
