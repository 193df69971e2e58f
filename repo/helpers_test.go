package repo_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"lukechampine.com/blake3"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// fastKDF keeps key derivation cheap in tests.
var fastKDF = repo.KDFParams{Algorithm: "argon2id", Time: 1, MemoryKiB: 64, Threads: 1}

// testChunker are valid chunker sizes for repositories made in tests.
var testChunker = repo.ChunkerParams{Min: 64 << 10, Avg: 256 << 10, Max: 1 << 20}

const password = "correct horse battery staple"

// pw returns a password callback that gives s.
func pw(s string) func() ([]byte, error) {
	return func() ([]byte, error) { return []byte(s), nil }
}

// initRepo creates an encrypted repository in be, protected by password.
func initRepo(t testing.TB, be repo.Backend) *repo.Repository {
	t.Helper()
	return initRepoWith(t, be, password, repo.InitOptions{})
}

func initRepoWith(t testing.TB, be repo.Backend, pass string, opts repo.InitOptions) *repo.Repository {
	t.Helper()
	if opts.KDF.Algorithm == "" {
		opts.KDF = fastKDF
	}
	if opts.Chunker == (repo.ChunkerParams{}) {
		opts.Chunker = testChunker
	}
	r, err := repo.Init(context.Background(), be, []byte(pass), opts)
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// openRepo opens the repository in be with password and loads its index.
func openRepo(t testing.TB, be repo.Backend) *repo.Repository {
	t.Helper()
	r, err := repo.Open(context.Background(), be, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(r.Close)
	if err := r.LoadIndex(context.Background()); err != nil {
		t.Fatalf("load index: %v", err)
	}
	return r
}

// oneCore runs the test on one core (GOMAXPROCS 1) until it ends, so that
// code that saves blobs from a worker per core (a backup's savers) saves
// them from one, and which blobs share a pack is fixed by the order of the
// calls. Tests using it must not run in parallel.
func oneCore(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// saveBlob stores a data blob and returns its ID.
func saveBlob(t testing.TB, r *repo.Repository, data []byte) repo.ID {
	t.Helper()
	return saveBlobOfType(t, r, repo.DataBlob, data)
}

// saveBlobOfType stores a blob of type bt and returns its ID.
func saveBlobOfType(t testing.TB, r *repo.Repository, bt repo.BlobType, data []byte) repo.ID {
	t.Helper()
	id := r.BlobID(data)
	if _, err := writer(t, r).SaveBlob(context.Background(), bt, id, data); err != nil {
		t.Fatalf("save blob: %v", err)
	}
	return id
}

// openSession is a write session that a test keeps open across calls: its
// function waits until end is closed (with endErr as its result).
type openSession struct {
	w      *repo.Writer
	end    chan struct{}
	endErr error
	result chan sessionResult
}

type sessionResult struct {
	written *repo.Written
	err     error
}

// sessions holds the open session of each test repository.
var sessions sync.Map // *repo.Repository -> *openSession

// writer returns the Writer of r's open session, opening one (that ends
// at the latest when the test does) if there is none.
func writer(t testing.TB, r *repo.Repository) *repo.Writer {
	t.Helper()
	if s, ok := sessions.Load(r); ok {
		return s.(*openSession).w
	}
	return startSession(t, r, repo.WriteOptions{}).w
}

// startSession opens a write session on r and keeps it open.
func startSession(t testing.TB, r *repo.Repository, opts repo.WriteOptions) *openSession {
	t.Helper()
	s := &openSession{end: make(chan struct{}), result: make(chan sessionResult, 1)}
	ready := make(chan *repo.Writer, 1)
	go func() {
		written, err := r.WriteSession(context.Background(), opts, func(_ context.Context, w *repo.Writer) error {
			ready <- w
			<-s.end
			return s.endErr
		})
		s.result <- sessionResult{written, err}
	}()
	select {
	case s.w = <-ready:
	case res := <-s.result:
		t.Fatalf("write session: %v", res.err)
	}
	sessions.Store(r, s)
	// Before r.Close, which waits for sessions (cleanups run last first).
	t.Cleanup(func() {
		if sessions.CompareAndDelete(r, s) {
			close(s.end)
			<-s.result
		}
	})
	return s
}

// endSession ends r's open session, with fnErr as its function's result,
// and returns what WriteSession returned. Without an open session it runs
// an empty one.
func endSession(r *repo.Repository, fnErr error) (*repo.Written, error) {
	v, ok := sessions.LoadAndDelete(r)
	if !ok {
		return r.WriteSession(context.Background(), repo.WriteOptions{}, func(context.Context, *repo.Writer) error { return fnErr })
	}
	s := v.(*openSession)
	s.endErr = fnErr
	close(s.end)
	res := <-s.result
	return res.written, res.err
}

// flush ends r's open session successfully and returns its proof.
func flush(t testing.TB, r *repo.Repository) *repo.Written {
	t.Helper()
	written, err := endSession(r, nil)
	if err != nil {
		t.Fatalf("flush: %v", err)
	}
	return written
}

// names lists the objects of type ft.
func names(t testing.TB, be repo.Backend, ft repo.FileType) []string {
	t.Helper()
	var out []string
	if err := be.List(context.Background(), ft, func(name string, _ int64) error {
		out = append(out, name)
		return nil
	}); err != nil {
		t.Fatalf("list %s: %v", ft, err)
	}
	return out
}

func load(t testing.TB, be repo.Backend, h repo.Handle) []byte {
	t.Helper()
	data, err := be.Load(context.Background(), h, 0, -1)
	if err != nil {
		t.Fatalf("load %s: %v", h, err)
	}
	return data
}

func store(t testing.TB, be repo.Backend, h repo.Handle, data []byte) {
	t.Helper()
	if err := be.Save(context.Background(), h, data); err != nil {
		t.Fatalf("save %s: %v", h, err)
	}
}

// flipped returns a copy of data with the lowest bit of byte at inverted.
func flipped(data []byte, at int) []byte {
	out := bytes.Clone(data)
	out[at] ^= 1
	return out
}

// spread returns about n positions spread over [0, size), always with the
// first and last byte.
func spread(size, n int) []int {
	if size <= n {
		out := make([]int, size)
		for i := range out {
			out[i] = i
		}
		return out
	}
	var out []int
	for i := 0; i < n; i++ {
		out = append(out, i*(size-1)/(n-1))
	}
	return out
}

// compressible returns n bytes of text that zstd shrinks well.
func compressible(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of a very repetitive text file that compresses well\n", i%100)
	}
	return b.Bytes()[:n]
}

var random = backendtest.RandomBytes

// fixture is an encrypted repository holding one snapshot of
//
//	/src/a.txt      one compressible blob, alone in pack "a"
//	/src/dir/b.bin  two incompressible blobs, in pack "bc"
//	/src/dir/c.txt  one blob, in pack "bc" after b.bin's
//	/src/dir/link   a symlink
//
// with the trees in pack "meta"; each pack has its own index file.
type fixture struct {
	be      *memory.Backend
	snap    *repo.Snapshot
	packs   map[string]repo.ID   // "a", "bc", "meta"
	content map[string][]repo.ID // path -> its blobs
	data    map[string][]byte    // path -> its content
	root    repo.ID
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	oneCore(t)
	ctx := context.Background()
	f := &fixture{
		be:      memory.New(),
		packs:   map[string]repo.ID{},
		content: map[string][]repo.ID{},
		data: map[string][]byte{
			"/src/a.txt":     compressible(200 << 10),
			"/src/dir/b.bin": random(1, 300<<10),
			"/src/dir/c.txt": []byte("a small file\n"),
		},
	}
	r := initRepo(t, f.be)
	saveFile := func(path string, parts int) {
		data := f.data[path]
		step := (len(data) + parts - 1) / parts
		for off := 0; off < len(data); off += step {
			f.content[path] = append(f.content[path], saveBlob(t, r, data[off:min(off+step, len(data))]))
		}
	}
	packOf := func(id repo.ID) repo.ID {
		b, ok := r.Index().Lookup(id)
		if !ok {
			t.Fatalf("blob %s not indexed after flush", id.Short())
		}
		return b.Pack
	}
	saveFile("/src/a.txt", 1)
	flush(t, r)
	f.packs["a"] = packOf(f.content["/src/a.txt"][0])
	saveFile("/src/dir/b.bin", 2)
	saveFile("/src/dir/c.txt", 1)
	flush(t, r)
	f.packs["bc"] = packOf(f.content["/src/dir/b.bin"][0])
	if packOf(f.content["/src/dir/c.txt"][0]) != f.packs["bc"] {
		t.Fatal("b.bin and c.txt are not in one pack")
	}

	mtime := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	file := func(name string) repo.Node {
		p := "/src/" + name
		return repo.Node{Name: strings.TrimPrefix(name, "dir/"), Type: repo.NodeFile, Mode: 0o644,
			Size: uint64(len(f.data[p])), MTime: mtime, Content: f.content[p]}
	}
	saveTree := func(tree *repo.Tree) repo.ID {
		id, err := writer(t, r).SaveTree(ctx, tree)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	dir := saveTree(&repo.Tree{Nodes: []repo.Node{
		file("dir/b.bin"), file("dir/c.txt"),
		{Name: "link", Type: repo.NodeSymlink, Mode: 0o777, MTime: mtime, LinkTarget: "b.bin"},
	}})
	src := saveTree(&repo.Tree{Nodes: []repo.Node{
		file("a.txt"),
		{Name: "dir", Type: repo.NodeDir, Mode: 0o755, MTime: mtime, Subtree: &dir},
	}})
	f.root = saveTree(&repo.Tree{Nodes: []repo.Node{{Name: "src", Type: repo.NodeDir, Mode: 0o755, MTime: mtime, Subtree: &src}}})
	written := flush(t, r)
	f.packs["meta"] = packOf(f.root)

	f.snap = &repo.Snapshot{
		ID: repo.NewSnapshotID(), Time: mtime, Hostname: "host", Username: "user",
		Paths: []string{"/src"}, Tree: f.root, ProgramVersion: "test",
	}
	if err := written.SaveSnapshot(ctx, f.snap); err != nil {
		t.Fatal(err)
	}
	return f
}

// pack returns the handle of one of the fixture's packs.
func (f *fixture) pack(name string) repo.Handle {
	return repo.Handle{Type: repo.PackFile, Name: f.packs[name].String()}
}

// open opens the fixture's repository anew, without loading the index.
func (f *fixture) open(t *testing.T) *repo.Repository {
	t.Helper()
	r, err := repo.Open(context.Background(), f.be, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

// check opens the repository anew and checks it.
func (f *fixture) check(t *testing.T, fraction float64) *repo.CheckReport {
	t.Helper()
	rep, err := f.open(t).Check(context.Background(), repo.CheckOptions{ReadDataFraction: fraction})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return rep
}

// findProblem returns the problem about object, or nil.
func findProblem(rep *repo.CheckReport, object string) *repo.Problem {
	for i := range rep.Problems {
		if rep.Problems[i].Object == object {
			return &rep.Problems[i]
		}
	}
	return nil
}

// affects reports whether p lists path of snapshot as affected.
func affects(p *repo.Problem, snapshot, path string) bool {
	for _, a := range p.Affected {
		if a.Snapshot == snapshot && a.Path == path {
			return true
		}
	}
	return false
}

// affectedPaths lists every (snapshot, path) that any problem names.
func affectedPaths(rep *repo.CheckReport) map[string]bool {
	out := map[string]bool{}
	for _, p := range rep.Problems {
		for _, a := range p.Affected {
			out[a.Path] = true
		}
	}
	return out
}

func problemList(rep *repo.CheckReport) string {
	var b strings.Builder
	for _, p := range rep.Problems {
		fmt.Fprintf(&b, "\n  %s: %s (affects %v)", p.Object, p.Error, p.Affected)
	}
	return b.String()
}

// isAny reports whether err wraps one of targets.
func isAny(err error, targets ...error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// blake3Hex is the name of a content-addressed file holding data.
func blake3Hex(data []byte) string {
	sum := blake3.Sum256(data)
	return hex.EncodeToString(sum[:])
}
