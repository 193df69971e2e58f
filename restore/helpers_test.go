package restore_test

import (
	"bytes"
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/restore"
)

// mtime is the modification time of every entry the tests store.
var mtime = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)

// builder makes snapshots by hand, so that a test decides every chunk,
// hole, hard link and name.
type builder struct {
	t       *testing.T
	r       *repo.Repository
	faulty  *backendtest.Faulty
	want    map[string][]byte // restored path (relative) -> content, for files
	session *openSession      // the write session files and folders are stored in
}

// openSession is a write session kept open across the builder's calls:
// its function waits until end is closed.
type openSession struct {
	w      *repo.Writer
	end    chan struct{}
	result chan error
	proof  *repo.Written
}

// writer returns the Writer of the builder's open session, opening one that
// ends at the latest with the test.
func (b *builder) writer() *repo.Writer {
	b.t.Helper()
	if b.session != nil {
		return b.session.w
	}
	s := &openSession{end: make(chan struct{}), result: make(chan error, 1)}
	ready := make(chan *repo.Writer, 1)
	go func() {
		written, err := b.r.WriteSession(context.Background(), repo.WriteOptions{}, func(_ context.Context, w *repo.Writer) error {
			ready <- w
			<-s.end
			return nil
		})
		s.proof = written
		s.result <- err
	}()
	select {
	case s.w = <-ready:
	case err := <-s.result:
		b.t.Fatalf("write session: %v", err)
	}
	b.session = s
	b.t.Cleanup(func() {
		if b.session == s {
			b.endSession()
		}
	})
	return s.w
}

// endSession ends the open session and returns its proof.
func (b *builder) endSession() (*repo.Written, error) {
	s := b.session
	b.session = nil
	close(s.end)
	err := <-s.result
	return s.proof, err
}

func newBuilder(t *testing.T) *builder {
	t.Helper()
	faulty := backendtest.NewFaulty(memory.New())
	r := repotest.NewWithChunks(t, faulty, repo.ChunkerParams{Min: 64 << 10, Avg: 256 << 10, Max: 1 << 20})
	return &builder{t: t, r: r, faulty: faulty, want: map[string][]byte{}}
}

// randomBytes returns n bytes of a seeded pseudo-random stream (never a
// whole chunk of zeros).
func randomBytes(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32() | 1)
	}
	return b
}

// file stores a file of the given chunks; p is its path in the snapshot,
// for the content the test expects.
func (b *builder) file(p string, chunks ...[]byte) repo.Node {
	b.t.Helper()
	n := repo.Node{Name: filepath.Base(p), Type: repo.NodeFile, Mode: 0o640, MTime: mtime}
	var content []byte
	for _, c := range chunks {
		id := b.r.BlobID(c)
		if _, err := b.writer().SaveBlob(context.Background(), repo.DataBlob, id, c); err != nil {
			b.t.Fatal(err)
		}
		n.Content = append(n.Content, id)
		content = append(content, c...)
	}
	n.Size = uint64(len(content))
	b.want[strings.TrimPrefix(p, "/")] = content
	return n
}

// dir stores a folder of nodes, which must be in name order.
func (b *builder) dir(name string, nodes ...repo.Node) repo.Node {
	b.t.Helper()
	id, err := b.writer().SaveTree(context.Background(), &repo.Tree{Nodes: nodes})
	if err != nil {
		b.t.Fatal(err)
	}
	return repo.Node{Name: name, Type: repo.NodeDir, Mode: 0o750, MTime: mtime, Subtree: &id}
}

// snapshot stores a snapshot whose root holds nodes (in name order).
func (b *builder) snapshot(nodes ...repo.Node) *repo.Snapshot {
	b.t.Helper()
	root := b.dir("", nodes...)
	ctx := context.Background()
	written, err := b.endSession()
	if err != nil {
		b.t.Fatal(err)
	}
	s := &repo.Snapshot{ID: repo.NewSnapshotID(), Time: mtime, Tree: *root.Subtree}
	if err := written.SaveSnapshot(ctx, s); err != nil {
		b.t.Fatal(err)
	}
	return s
}

// linked makes n one of links names of one inode.
func linked(n repo.Node, ino uint64, links uint64) repo.Node {
	n.Device, n.Inode, n.Links = 1, ino, links
	return n
}

// faultFS is the OS with a hook called before every operation: an error
// from it is the operation's result. op is the FS method ("Mkdir",
// "Rename", which RenameExclusive reports too, ...) or "Open" for
// OpenBeneath (name is root/name), "WriteAt" for a write to a file being
// restored (at offset off, n bytes), "Truncate" (to off), "Read" for a
// read of verify.
type faultFS struct {
	restore.OS
	hook hook
	// unnamed lets the OS create files with no name where it can (on
	// Linux: CreateUnnamed, reported as "CreateUnnamed", and LinkUnnamed
	// as "LinkUnnamed"); without it a faultFS refuses them, as a file
	// system without O_TMPFILE does, and files get temporary names.
	unnamed bool
}

// hook decides the result of an operation of a faultFS.
type hook func(op, name string, off int64, n int) error

func (f *faultFS) fault(op, name string, off int64, n int) error {
	if f.hook == nil {
		return nil
	}
	return f.hook(op, name, off, n)
}

func (f *faultFS) Mkdir(root, name string, perm fs.FileMode) error {
	if err := f.fault("Mkdir", filepath.Join(root, name), 0, 0); err != nil {
		return err
	}
	return f.OS.Mkdir(root, name, perm)
}

func (f *faultFS) CreateExclusive(root, name string) (restore.File, error) {
	file, err := f.create("CreateExclusive", root, name, f.OS.CreateExclusive)
	if err != nil {
		return nil, err
	}
	return file, nil
}

// create makes root/name with the OS's create after the hook for op, and
// wraps the file made.
func (f *faultFS) create(op, root, name string, create func(root, name string) (restore.File, error)) (*faultFile, error) {
	full := filepath.Join(root, name)
	if err := f.fault(op, full, 0, 0); err != nil {
		return nil, err
	}
	file, err := create(root, name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: full}, nil
}

func (f *faultFS) OpenDirect(root, name string, file restore.File) restore.File {
	d := f.OS.OpenDirect(root, name, file.(interface{ wrapped() restore.File }).wrapped())
	if d == nil {
		return nil
	}
	return &faultFile{File: d, fs: f, name: filepath.Join(root, name)}
}

func (f *faultFS) OpenBeneath(root, name string) (restore.ReadFile, error) {
	full := filepath.Join(root, name)
	if err := f.fault("Open", full, 0, 0); err != nil {
		return nil, err
	}
	file, err := f.OS.OpenBeneath(root, name)
	if err != nil {
		return nil, err
	}
	return &faultReader{ReadFile: file, fs: f, name: full}, nil
}

func (f *faultFS) Rename(root, oldname, newname string) error {
	if err := f.fault("Rename", filepath.Join(root, newname), 0, 0); err != nil {
		return err
	}
	return f.OS.Rename(root, oldname, newname)
}

func (f *faultFS) Symlink(root, target, name string) error {
	if err := f.fault("Symlink", filepath.Join(root, name), 0, 0); err != nil {
		return err
	}
	return f.OS.Symlink(root, target, name)
}

func (f *faultFS) Link(root, oldname, newname string) error {
	if err := f.fault("Link", filepath.Join(root, newname), 0, 0); err != nil {
		return err
	}
	return f.OS.Link(root, oldname, newname)
}

func (f *faultFS) Chmod(root, name string, mode uint32) error {
	if err := f.fault("Chmod", filepath.Join(root, name), 0, 0); err != nil {
		return err
	}
	return f.OS.Chmod(root, name, mode)
}

// faultFile is a File of a faultFS. It hides the optional methods of the
// File it wraps, so that a faultFS sets metadata by name, through its own
// methods (and those of the FS that wraps it) as on a platform whose File
// cannot: the tests of the program's own path restore through restore.OS.
type faultFile struct {
	restore.File
	fs   *faultFS
	name string
}

// wrapped is the File that f wraps.
func (f *faultFile) wrapped() restore.File { return f.File }

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.fault("WriteAt", f.name, off, len(p)); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.fault("Truncate", f.name, size, 0); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

type faultReader struct {
	restore.ReadFile
	fs   *faultFS
	name string
	off  int64
}

func (r *faultReader) Read(p []byte) (int, error) {
	if err := r.fs.fault("Read", r.name, r.off, len(p)); err != nil {
		return 0, err
	}
	n, err := r.ReadFile.Read(p)
	r.off += int64(n)
	return n, err
}

// nth returns a hook that fails the nth call of op (counting from 1) that
// match accepts (nil: every call) with err, and lets every other call
// through.
func nth(op string, nth int, err error, match func(name string, off int64, n int) bool) hook {
	var mu sync.Mutex
	seen := 0
	return func(o, name string, off int64, n int) error {
		if o != op || (match != nil && !match(name, off, n)) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		seen++
		if seen == nth {
			return err
		}
		return nil
	}
}

// isTemp tells whether a name is one of restore's temporary names.
func isTemp(name string) bool { return strings.HasPrefix(filepath.Base(name), ".nightjar-restore-") }

// tree returns every path below dir (relative) with its content for files
// and "dir" or "-> target" for the others.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		switch {
		case d.IsDir():
			got[rel] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			got[rel] = "-> " + target
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[rel] = string(data)
		default:
			got[rel] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// noTemps fails the test if a temporary file is left below dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	for p := range tree(t, dir) {
		if isTemp(p) {
			t.Errorf("temporary file %s is left behind", p)
		}
	}
}

// skipReason returns the reason p was skipped, or "".
func skipReason(res *restore.Result, p string) string {
	if res == nil {
		return ""
	}
	for _, s := range res.Skipped {
		if s.Path == p {
			return s.Reason
		}
	}
	return ""
}

// sameContent compares a restored file with what the builder stored.
func sameContent(t *testing.T, b *builder, target, rel string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(target, rel))
	if err != nil {
		t.Errorf("%s: %v", rel, err)
		return
	}
	if !bytes.Equal(got, b.want[rel]) {
		t.Errorf("%s: restored %d bytes that differ from the %d stored", rel, len(got), len(b.want[rel]))
	}
}
