//go:build !windows

// These tests restore FIFOs and symlinks and read inodes and modes back
// (syscall.Stat_t): they are the unix restore's; Windows' rules are tested
// in winpath_test.go.

package restore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/restore"
)

// Sizes of the big file: more than 32 chunks (restored in parts, side by
// side) and more than 16 MiB (restored with direct I/O where the file
// system takes it).
const (
	bigChunk  = 512 << 10
	bigChunks = 40
)

// bigFile stores a file of bigChunks chunks at p, the chunk at hole a
// chunk of zeros (-1: none).
func bigFile(b *builder, p string, hole int) repo.Node {
	var chunks [][]byte
	for i := range bigChunks {
		if i == hole {
			chunks = append(chunks, make([]byte, bigChunk))
			continue
		}
		chunks = append(chunks, randomBytes(uint64(i), bigChunk))
	}
	return b.file(p, chunks...)
}

// sample stores the snapshot most tests restore:
//
//	/big (multi-part file with a hole), /d/ (folder) holding /d/f and
//	/d/g (hard links of one inode), /fifo, /link -> d/f, /small
func sample(b *builder) *repo.Snapshot {
	d := b.dir("d",
		linked(b.file("/d/f", []byte("linked content")), 7, 2),
		linked(b.file("/d/g", []byte("linked content")), 7, 2),
	)
	return b.snapshot(
		bigFile(b, "/big", 5),
		d,
		repo.Node{Name: "fifo", Type: repo.NodeFIFO, Mode: 0o600, MTime: mtime},
		repo.Node{Name: "link", Type: repo.NodeSymlink, LinkTarget: "d/f", MTime: mtime},
		b.file("/small", []byte("small file")),
	)
}

func run(t *testing.T, b *builder, s *repo.Snapshot, opts restore.Options) (*restore.Result, error) {
	t.Helper()
	if opts.Target == "" {
		opts.Target = filepath.Join(t.TempDir(), "target")
	}
	return restore.Run(context.Background(), b.r, s, opts)
}

// A snapshot comes back whole: content (holes and parts included),
// folders, hard links as one inode, symlinks, FIFOs, modes and times, and
// verify reads every file back.
func TestRestoreEverything(t *testing.T) {
	b := newBuilder(t)
	s := sample(b)
	target := filepath.Join(t.TempDir(), "target")
	res, err := run(t, b, s, restore.Options{Target: target, Verify: true, FS: &faultFS{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 || res.Files != 4 || res.Dirs != 1 || res.Others != 2 || res.Verified != 4 {
		t.Errorf("result %+v, want 4 files (3 written, 1 linked), 1 folder, 2 others, 4 verified, nothing skipped", res)
	}
	for _, rel := range []string{"big", "small", "d/f", "d/g"} {
		sameContent(t, b, target, rel)
	}
	var f, g, big syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(target, "d/f"), &f); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Lstat(filepath.Join(target, "d/g"), &g); err != nil {
		t.Fatal(err)
	}
	if f.Ino != g.Ino || f.Nlink != 2 {
		t.Errorf("d/f and d/g are inodes %d and %d (%d links), want one inode with 2 links", f.Ino, g.Ino, f.Nlink)
	}
	if err := syscall.Stat(filepath.Join(target, "big"), &big); err != nil {
		t.Fatal(err)
	}
	if big.Blocks*512 > int64(len(b.want["big"])-bigChunk/2) {
		t.Errorf("big takes %d bytes on disk for %d bytes of content with a hole of %d: the hole was written", big.Blocks*512, len(b.want["big"]), bigChunk)
	}
	if link, err := os.Readlink(filepath.Join(target, "link")); err != nil || link != "d/f" {
		t.Errorf("link reads %q (%v), want d/f", link, err)
	}
	if fi, err := os.Lstat(filepath.Join(target, "fifo")); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("fifo is %v (%v), want a FIFO", fi, err)
	}
	for rel, mode := range map[string]os.FileMode{"small": 0o640, "d": 0o750} {
		fi, err := os.Lstat(filepath.Join(target, rel))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode || !fi.ModTime().Equal(mtime) {
			t.Errorf("%s has mode %v and mtime %v, want %v and %v", rel, fi.Mode().Perm(), fi.ModTime(), mode, mtime)
		}
	}
	noTemps(t, target)
}

// The data blobs restore reads are the data blobs the walker reports.
type recordingRepo struct {
	*repo.Repository
	read map[repo.ID]bool
}

func (r *recordingRepo) LoadBlobsInOrder(ctx context.Context, ids []repo.ID, buf *repo.BlobBuffer, fn func(int, []byte) error) error {
	return r.Repository.LoadBlobsInOrder(ctx, ids, buf, func(i int, plain []byte) error {
		r.read[ids[i]] = true
		return fn(i, plain)
	})
}

func TestRestoreReadsWhatTheWalkerReports(t *testing.T) {
	b := newBuilder(t)
	s := sample(b)
	rec := &recordingRepo{Repository: b.r, read: map[repo.ID]bool{}}
	if _, err := restore.Run(context.Background(), rec, s, restore.Options{Target: t.TempDir(), Workers: 1}); err != nil {
		t.Fatal(err)
	}
	reported := map[repo.ID]bool{}
	err := b.r.Walk(context.Background(), s.Tree, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
		for _, id := range e.Node.Content {
			reported[id] = true
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec.read, reported) {
		t.Errorf("restore read %d data blobs, the walker reports %d", len(rec.read), len(reported))
	}
}

// A file whose write, truncation or rename fails is skipped with the
// error as its reason, leaves no temporary file, and takes nothing else
// with it.
func TestRestoreFileFaults(t *testing.T) {
	const lastPart = 32 * bigChunk // where big's second part starts
	tests := []struct {
		name   string
		hook   hook
		failed string // the path skipped; "": the first file created
		reason string
	}{
		{"EIO mid-way through a big file", nth("WriteAt", 3, syscall.EIO, func(_ string, off int64, _ int) bool { return off > 0 }), "/big", "input/output error"},
		{"ENOSPC in the last part of a big file", nth("WriteAt", 1, syscall.ENOSPC, func(_ string, off int64, _ int) bool { return off >= lastPart }), "/big", "no space left on device"},
		{"ENOSPC in a small file", nth("WriteAt", 1, syscall.ENOSPC, func(_ string, _ int64, n int) bool { return n == len("small file") }), "/small", "no space left on device"},
		// Only a file with a hole is truncated to its size: big.
		{"truncate fails", nth("Truncate", 1, syscall.EIO, nil), "/big", "input/output error"},
		{"rename fails", nth("Rename", 1, syscall.EACCES, func(name string, _ int64, _ int) bool { return filepath.Base(name) == "small" }), "/small", "permission denied"},
		{"cannot create", nth("CreateExclusive", 1, syscall.EDQUOT, nil), "", "disk quota exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(t)
			s := sample(b)
			target := filepath.Join(t.TempDir(), "target")
			fsys := &faultFS{hook: tt.hook}
			res, err := run(t, b, s, restore.Options{Target: target, FS: fsys})
			if err != nil {
				t.Fatalf("a local fault fails the restore: %v", err)
			}
			noTemps(t, target)
			if len(res.Skipped) != 1 {
				t.Fatalf("skipped %v, want one file", res.Skipped)
			}
			failed := tt.failed
			if failed == "" {
				// The first file created is whichever a worker took first.
				failed = res.Skipped[0].Path
			}
			if r := skipReason(res, failed); !strings.Contains(r, tt.reason) {
				t.Errorf("%s skipped with %q, want a reason with %q (skipped: %v)", failed, r, tt.reason, res.Skipped)
			}
			if _, err := os.Lstat(filepath.Join(target, failed)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists after its restore failed (%v)", failed, err)
			}
			for _, rel := range []string{"big", "small", "d/f", "d/g"} {
				if "/"+rel != failed {
					sameContent(t, b, target, rel)
				}
			}
		})
	}
}

// A folder that cannot be created is skipped, and so is everything below
// it; the rest is restored.
func TestRestoreFolderThatCannotBeCreated(t *testing.T) {
	b := newBuilder(t)
	s := sample(b)
	target := filepath.Join(t.TempDir(), "target")
	fsys := &faultFS{hook: nth("Mkdir", 1, syscall.EACCES, func(name string, _ int64, _ int) bool { return filepath.Base(name) == "d" })}
	res, err := run(t, b, s, restore.Options{Target: target, FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if r := skipReason(res, "/d"); !strings.Contains(r, "permission denied") {
		t.Errorf("/d skipped with %q, want permission denied (skipped: %v)", r, res.Skipped)
	}
	got := tree(t, target)
	if _, ok := got["d"]; ok {
		t.Error("the folder that could not be created exists")
	}
	for _, rel := range []string{"big", "small"} {
		sameContent(t, b, target, rel)
	}
	if res.Files != 2 {
		t.Errorf("%d files restored, want big and small", res.Files)
	}
}

// When the first name of a hard-linked inode fails, the second is
// restored as a file of its own.
func TestRestoreHardLinkWhoseFirstNameFailed(t *testing.T) {
	b := newBuilder(t)
	s := sample(b)
	target := filepath.Join(t.TempDir(), "target")
	fsys := &faultFS{hook: nth("Rename", 1, syscall.EIO, func(name string, _ int64, _ int) bool { return filepath.Base(name) == "f" })}
	res, err := run(t, b, s, restore.Options{Target: target, FS: fsys})
	if err != nil {
		t.Fatal(err)
	}
	if r := skipReason(res, "/d/f"); !strings.Contains(r, "input/output error") {
		t.Errorf("/d/f skipped with %q (skipped: %v)", r, res.Skipped)
	}
	sameContent(t, b, target, "d/g")
	noTemps(t, target)
}

// Damage to the repository, or a read the backend fails, costs only what
// it touches: the entry it hits is named with its reason, everything else
// is restored bit-exact, every folder made gets its metadata, no temporary
// file is left, and the restore ends with a DamagedError that wraps the
// damage.
func TestRestoreDamagedBlob(t *testing.T) {
	tests := []struct {
		name   string
		damage func(b *builder, s *repo.Snapshot)
		want   error
		named  string // the entry lost; "": whichever the failed read hit
		reason string
	}{
		{"the backend cannot read a pack", func(b *builder, _ *repo.Snapshot) {
			// The pack of the small file's chunk; it may hold chunks of
			// the big file too.
			pb, ok := b.r.Index().Lookup(b.r.BlobID([]byte("small file")))
			if !ok {
				b.t.Fatal("the small file's chunk is not in the index")
			}
			b.faulty.FailObject(repo.Handle{Type: repo.PackFile, Name: pb.Pack.String()})
		}, backendtest.ErrInjected, "", ""},
		{"a chunk of a small file", func(b *builder, _ *repo.Snapshot) { damageBlob(b, b.r.BlobID([]byte("small file"))) }, repo.ErrIntegrity, "/small", "damaged"},
		{"a chunk in the middle of a big file", func(b *builder, _ *repo.Snapshot) { damageBlob(b, b.r.BlobID(randomBytes(20, bigChunk))) }, repo.ErrIntegrity, "/big", "damaged"},
		{"a folder's tree", func(b *builder, s *repo.Snapshot) {
			tr, err := b.r.LoadTree(context.Background(), s.Tree)
			if err != nil {
				b.t.Fatal(err)
			}
			damageBlob(b, *tr.Nodes[1].Subtree)
		}, repo.ErrIntegrity, "/d", "folder's content cannot be read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(t)
			s := sample(b)
			tt.damage(b, s)
			target := filepath.Join(t.TempDir(), "target")
			res, err := run(t, b, s, restore.Options{Target: target})
			if !errors.Is(err, tt.want) {
				t.Errorf("restore returns %v, want %v", err, tt.want)
			}
			var damaged *restore.DamagedError
			if !errors.As(err, &damaged) || res == nil || damaged.Entries != res.Damaged || res.Damaged == 0 {
				t.Fatalf("restore returns %v with %+v, want a DamagedError counting the entries lost", err, res)
			}
			if tt.named != "" {
				if r := skipReason(res, tt.named); !strings.Contains(r, tt.reason) {
					t.Errorf("%s skipped with %q, want a reason with %q (skipped: %v)", tt.named, r, tt.reason, res.Skipped)
				}
				if len(res.Skipped) != 1 {
					t.Errorf("skipped %v, want only %s", res.Skipped, tt.named)
				}
			}
			restoredBeside(t, b, res, target)
			noTemps(t, target)
		})
	}
}

// restoredBeside checks that every file the builder stored is restored
// bit-exact unless it, or a folder above it, is skipped (and then that it
// is not there), and that the folder d, where it was made, has its mode
// and time from the snapshot.
func restoredBeside(t *testing.T, b *builder, res *restore.Result, target string) {
	t.Helper()
	lost := func(rel string) bool {
		for p := "/" + rel; p != "/"; p = filepath.Dir(p) {
			if skipReason(res, p) != "" {
				return true
			}
		}
		return false
	}
	for rel := range b.want {
		if !lost(rel) {
			sameContent(t, b, target, rel)
			continue
		}
		if _, err := os.Lstat(filepath.Join(target, rel)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, which was not restored, is in the target (%v)", rel, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(target, "d")); err == nil && (fi.Mode().Perm() != 0o750 || !fi.ModTime().Equal(mtime)) {
		t.Errorf("d has mode %v and mtime %v, want 0750 and %v", fi.Mode().Perm(), fi.ModTime(), mtime)
	}
}

// A data pack that is gone costs the files whose data it held, and only
// them: the files after them are restored and verified, the folder that
// held a lost file gets its metadata, and the lost file is named.
func TestRestoreGoesOnPastAMissingPack(t *testing.T) {
	b := newBuilder(t)
	lost := b.file("/d/lost", randomBytes(99, 1000))
	lostPack := func() string {
		loc, ok := b.r.Index().Lookup(lost.Content[0])
		if !ok {
			t.Fatal("the lost file's chunk is not in the index")
		}
		return loc.Pack.String()
	}
	// Its chunk alone in a pack of its own.
	if _, err := b.endSession(); err != nil {
		t.Fatal(err)
	}
	delete(b.want, "d/lost")
	d := b.dir("d",
		linked(b.file("/d/f", []byte("linked content")), 7, 2),
		linked(b.file("/d/g", []byte("linked content")), 7, 2),
		lost,
	)
	s := b.snapshot(bigFile(b, "/big", 5), d, b.file("/small", []byte("small file")))
	if err := b.faulty.Remove(context.Background(), repo.Handle{Type: repo.PackFile, Name: lostPack()}); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "target")
	res, err := run(t, b, s, restore.Options{Target: target, Verify: true})
	var damaged *restore.DamagedError
	if !errors.As(err, &damaged) || !errors.Is(err, repo.ErrNotFound) || errors.Is(err, context.Canceled) {
		t.Fatalf("restore returns %v, want the missing pack as damage", err)
	}
	if r := skipReason(res, "/d/lost"); !strings.Contains(r, "not found") {
		t.Errorf("/d/lost skipped with %q, want the missing pack (skipped: %v)", r, res.Skipped)
	}
	if len(res.Skipped) != 1 || res.Damaged != 1 || res.FilesSkipped != 1 || res.BytesSkipped != 1000 {
		t.Errorf("result %+v, want only /d/lost skipped (1000 bytes), as damage", res)
	}
	if res.Files != 4 || res.Verified != 4 {
		t.Errorf("%d files restored, %d verified; want big, small, d/f and d/g", res.Files, res.Verified)
	}
	restoredBeside(t, b, res, target)
	noTemps(t, target)
}

// A file whose content is shorter than its node says is damage: the
// restore fails and the file is not left behind.
func TestRestoreContentShorterThanTheSnapshotSays(t *testing.T) {
	b := newBuilder(t)
	liar := b.file("/liar", []byte("twelve bytes"))
	liar.Size++
	s := b.snapshot(liar)
	target := t.TempDir()
	_, err := run(t, b, s, restore.Options{Target: target})
	if !errors.Is(err, repo.ErrIntegrity) {
		t.Errorf("restore returns %v, want damage", err)
	}
	if got := tree(t, target); len(got) != 0 {
		t.Errorf("the target holds %q after the failed restore", got)
	}
}

// A restore cancelled in the middle of writing stops with the
// cancellation and leaves no temporary file.
func TestRestoreCancelledMidFile(t *testing.T) {
	b := newBuilder(t)
	s := sample(b)
	target := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var writes atomic.Int32
	// The second write past offset 0 (only big has such) cancels.
	fsys := &faultFS{hook: func(op, _ string, off int64, _ int) error {
		if op == "WriteAt" && off > 0 && writes.Add(1) == 2 {
			cancel()
		}
		return nil
	}}
	_, err := restore.Run(ctx, b.r, s, restore.Options{Target: target, FS: fsys})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("restore returns %v, want the cancellation", err)
	}
	noTemps(t, target)
	if _, err := os.Lstat(filepath.Join(target, "big")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("big, whose writing was cancelled, is in place (%v)", err)
	}
}

// damageBlob makes every later load of blob id's pack see one byte of the
// blob flipped.
func damageBlob(b *builder, id repo.ID) {
	b.t.Helper()
	loc, ok := b.r.Index().Lookup(id)
	if !ok {
		b.t.Fatalf("blob %s is not in the index", id.Short())
	}
	at := int64(loc.Offset) + int64(loc.Length)/2
	pack := loc.Pack.String()
	b.faulty.CorruptLoads(repo.PackFile, func(h repo.Handle, offset int64, data []byte) {
		if h.Name == pack && at >= offset && at < offset+int64(len(data)) {
			data[at-offset] ^= 1
		}
	})
}

// Nothing is written outside the target: not through a symlink in the
// target where a folder or a file goes, not through names in a crafted
// snapshot. Verify reads back only what was restored: not the files of a
// folder that was refused, even where the symlink in its way leads to the
// snapshot's very content.
func TestRestoreStaysInsideTheTarget(t *testing.T) {
	b := newBuilder(t)
	sub := b.dir("sub", b.file("/sub/x", []byte("x")))
	evil := b.file("/evil", []byte("evil"))
	// Names in byte order, as trees keep them; the first three are crafted.
	s := b.snapshot(
		repo.Node{Name: "..", Type: repo.NodeDir, Subtree: sub.Subtree, MTime: mtime},
		named(evil, "../escaped"),
		named(evil, "a/b"),
		b.file("/file", []byte("file content")),
		sub,
	)
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "file"), []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	// What the snapshot holds at /sub/x, to the nanosecond of its mtime.
	if err := os.WriteFile(filepath.Join(outside, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(outside, "x"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(base, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(target, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "file"), filepath.Join(target, "file")); err != nil {
		t.Fatal(err)
	}
	// In this order: the restores with overwrite replace the symlink at
	// /file.
	for _, c := range []struct {
		name              string
		overwrite, verify bool
	}{
		{"keep", false, false},
		{"keep and verify", false, true},
		{"overwrite", true, false},
		{"overwrite and verify", true, true},
	} {
		overwrite := c.overwrite
		res, err := run(t, b, s, restore.Options{Target: target, Overwrite: overwrite, Verify: c.verify})
		if err != nil {
			if res != nil {
				t.Errorf("%s: verify failures %v", c.name, res.VerifyFailures)
			}
			t.Fatalf("%s: %v", c.name, err)
		}
		for p, want := range map[string]string{
			`/"../escaped"`: "unsafe name", `/".."`: "unsafe name", `/"a/b"`: "unsafe name",
			"/sub": "a symlink is in the way of a folder: not followed",
		} {
			if r := skipReason(res, p); !strings.Contains(r, want) {
				t.Errorf("%s: %s skipped with %q, want %q", c.name, p, r, want)
			}
		}
		wantOutside := map[string]string{"file": "precious", "x": "x"}
		if got := tree(t, outside); !reflect.DeepEqual(got, wantOutside) {
			t.Errorf("%s: outside the target is now %q, want %q", c.name, got, wantOutside)
		}
		if got := tree(t, base); got["escaped"] != "" || got["a"] != "" {
			t.Errorf("%s: a crafted name wrote beside the target: %q", c.name, got)
		}
		link, _ := os.Readlink(filepath.Join(target, "file"))
		if overwrite {
			if r := skipReason(res, "/file"); r != "" {
				t.Errorf("with --overwrite the symlink at /file is not replaced: %s", r)
			}
			sameContent(t, b, target, "file")
		} else if link == "" || !strings.Contains(skipReason(res, "/file"), "exists") {
			t.Errorf("without --overwrite the symlink at /file is replaced or not reported (%v)", res.Skipped)
		}
		if c.verify && res.Verified != res.Files {
			t.Errorf("%s: verified %d files, restored %d", c.name, res.Verified, res.Files)
		}
		noTemps(t, target)
	}
}

// named returns n called name.
func named(n repo.Node, name string) repo.Node {
	n.Name = name
	return n
}

// An existing file is kept unless Overwrite; a folder is never replaced.
func TestRestoreOverwrite(t *testing.T) {
	for _, overwrite := range []bool{false, true} {
		t.Run(map[bool]string{false: "keep", true: "overwrite"}[overwrite], func(t *testing.T) {
			b := newBuilder(t)
			s := b.snapshot(b.file("/dir", []byte("a file")), b.file("/file", []byte("new")))
			target := t.TempDir()
			if err := os.Mkdir(filepath.Join(target, "dir"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(target, "file"), []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := run(t, b, s, restore.Options{Target: target, Overwrite: overwrite})
			if err != nil {
				t.Fatal(err)
			}
			if r := skipReason(res, "/dir"); r != "a folder is in the way: not replaced" {
				t.Errorf("/dir skipped with %q", r)
			}
			want := map[string]string{"dir": "dir", "file": "old"}
			if overwrite {
				want["file"] = "new"
			} else if r := skipReason(res, "/file"); r != "exists (use --overwrite to replace it)" {
				t.Errorf("/file skipped with %q", r)
			}
			if got := tree(t, target); !reflect.DeepEqual(got, want) {
				t.Errorf("target holds %q, want %q", got, want)
			}
		})
	}
}

// Include and exclude select what is restored and verified: the folders
// leading to an included path are made, an excluded folder is left out
// whole.
func TestRestoreIncludeExclude(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude []string
		want             []string
	}{
		{"include a file deep down", []string{"/d/f"}, nil, []string{"d", "d/f"}},
		{"include a file deeper down", []string{"/e/e2/x"}, nil, []string{"e", "e/e2", "e/e2/x"}},
		{"exclude a folder", nil, []string{"/d"}, []string{"big", "e", "e/e2", "e/e2/x", "e/empty", "fifo", "link", "small"}},
		{"include a folder, exclude a file in it", []string{"/d"}, []string{"g"}, []string{"d", "d/f"}},
		// Only the folders on the paths restored are made, as restic
		// does: not one below which the pattern could match but nothing
		// does.
		{"include by pattern", []string{"*ll"}, nil, []string{"small"}},
		{"include nothing there", []string{"/e/e2/nothing"}, nil, nil},
		{"include an empty folder", []string{"/e/empty"}, nil, []string{"e", "e/empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(t)
			s := sampleWithE(b)
			target := t.TempDir()
			opts := restore.Options{Target: target, Verify: true}
			if tt.include != nil {
				m, err := filter.Compile(tt.include)
				if err != nil {
					t.Fatal(err)
				}
				opts.Include = m
			}
			if tt.exclude != nil {
				m, err := filter.Compile(tt.exclude)
				if err != nil {
					t.Fatal(err)
				}
				opts.Exclude = m
			}
			res, err := run(t, b, s, opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for p := range tree(t, target) {
				got = append(got, p)
			}
			slices.Sort(got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("restored %q, want %q", got, tt.want)
			}
			files := 0
			for _, p := range tt.want {
				if _, ok := b.want[p]; ok {
					files++
				}
			}
			if res.Verified != int64(files) {
				t.Errorf("verified %d files, want %d", res.Verified, files)
			}
			if res.Dirs != int64(len(tt.want)-files-nonFiles(tt.want)) {
				t.Errorf("%d folders counted for %q", res.Dirs, tt.want)
			}
			// The folders made have their metadata from the snapshot.
			for _, p := range tt.want {
				fi, err := os.Lstat(filepath.Join(target, p))
				if err != nil || !fi.IsDir() {
					continue
				}
				if fi.Mode().Perm() != 0o750 || !fi.ModTime().Equal(mtime) {
					t.Errorf("folder %s has mode %v and mtime %v, want 0750 and %v", p, fi.Mode().Perm(), fi.ModTime(), mtime)
				}
			}
		})
	}
}

// nonFiles counts the entries of sampleWithE among paths that are neither
// regular files nor folders.
func nonFiles(paths []string) int {
	n := 0
	for _, p := range paths {
		if p == "fifo" || p == "link" {
			n++
		}
	}
	return n
}

// sampleWithE is sample with a folder /e more: /e/e2/x, and /e/empty, an
// empty folder.
func sampleWithE(b *builder) *repo.Snapshot {
	d := b.dir("d",
		linked(b.file("/d/f", []byte("linked content")), 7, 2),
		linked(b.file("/d/g", []byte("linked content")), 7, 2),
	)
	e := b.dir("e",
		b.dir("e2", b.file("/e/e2/x", []byte("x"))),
		b.dir("empty"),
	)
	return b.snapshot(
		bigFile(b, "/big", 5),
		d,
		e,
		repo.Node{Name: "fifo", Type: repo.NodeFIFO, Mode: 0o600, MTime: mtime},
		repo.Node{Name: "link", Type: repo.NodeSymlink, LinkTarget: "d/f", MTime: mtime},
		b.file("/small", []byte("small file")),
	)
}

// Verify reports a file that reads back differently, and fails.
func TestVerifyFindsADifference(t *testing.T) {
	b := newBuilder(t)
	s := sample(b)
	fsys := &faultFS{hook: nth("Read", 1, syscall.EIO, func(name string, _ int64, _ int) bool { return filepath.Base(name) == "small" })}
	res, err := run(t, b, s, restore.Options{Verify: true, FS: fsys})
	if !errors.Is(err, restore.ErrVerifyFailed) {
		t.Fatalf("restore returns %v, want ErrVerifyFailed", err)
	}
	if len(res.VerifyFailures) != 1 || res.VerifyFailures[0].Path != "/small" || res.Verified != 3 {
		t.Errorf("verify failures %v, %d verified; want /small only, 3 verified", res.VerifyFailures, res.Verified)
	}
}

// A symlink swapped in for an entry just before its mode is set is not
// followed: what it points to, outside the target, keeps its mode, and
// the other entries get theirs as usual.
func TestRestoreChmodDoesNotFollowASwappedSymlink(t *testing.T) {
	tests := []struct {
		name string
		// victim says whether the Chmod of name is the one to swap.
		victim func(target, name string) bool
		// swap makes outside (a file or a folder of mode 0700) and puts
		// a symlink to it at name.
		swap func(name, outside string) error
		// kept are the entries whose modes must be restored as usual.
		kept map[string]os.FileMode
	}{
		{
			"a file's temporary name, to a file outside",
			func(target, name string) bool { return isTemp(name) && filepath.Dir(name) == target }, // small's
			func(name, outside string) error {
				return errors.Join(os.WriteFile(outside, []byte("outside"), 0o700), os.Remove(name), os.Symlink(outside, name))
			},
			map[string]os.FileMode{"d": 0o750, "d/f": 0o640},
		},
		{
			"a folder, to a folder outside",
			func(target, name string) bool { return name == filepath.Join(target, "d") },
			func(name, outside string) error {
				return errors.Join(os.Mkdir(outside, 0o700), os.Rename(name, outside+".moved"), os.Symlink(outside, name))
			},
			map[string]os.FileMode{"small": 0o640},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(t)
			s := b.snapshot(b.dir("d", b.file("/d/f", []byte("in d"))), b.file("/small", []byte("small file")))
			base := t.TempDir()
			target, outside := filepath.Join(base, "target"), filepath.Join(base, "outside")
			var swapped atomic.Bool
			fsys := &faultFS{hook: func(op, name string, _ int64, _ int) error {
				if op == "Chmod" && tt.victim(target, name) && swapped.CompareAndSwap(false, true) {
					if err := tt.swap(name, outside); err != nil {
						t.Errorf("swap %s for a symlink: %v", name, err)
					}
				}
				return nil
			}}
			if _, err := run(t, b, s, restore.Options{Target: target, FS: fsys}); err != nil {
				t.Fatal(err)
			}
			if !swapped.Load() {
				t.Fatal("no entry was swapped for a symlink")
			}
			if fi, err := os.Stat(outside); err != nil {
				t.Error(err)
			} else if fi.Mode().Perm() != 0o700 {
				t.Errorf("outside the target has mode %v, want -rwx------: the symlink was followed", fi.Mode().Perm())
			}
			for rel, want := range tt.kept {
				if fi, err := os.Lstat(filepath.Join(target, rel)); err != nil {
					t.Error(err)
				} else if fi.Mode().Perm() != want {
					t.Errorf("%s has mode %v, want %v", rel, fi.Mode().Perm(), want)
				}
			}
		})
	}
}

// Verify reads no file through a symlink in the target: a folder the
// restore made, swapped for a symlink to a copy of itself just before it
// is read back, makes its files fail verify instead of passing.
func TestVerifyDoesNotReadThroughASymlink(t *testing.T) {
	b := newBuilder(t)
	s := sample(b)
	base := t.TempDir()
	target, moved := filepath.Join(base, "target"), filepath.Join(base, "moved")
	d := filepath.Join(target, "d")
	var swapped atomic.Bool
	fsys := &faultFS{hook: func(op, name string, _ int64, _ int) error {
		if op == "Open" && filepath.Dir(name) == d && swapped.CompareAndSwap(false, true) {
			if err := errors.Join(os.Rename(d, moved), os.Symlink(moved, d)); err != nil {
				t.Errorf("swap %s for a symlink: %v", d, err)
			}
		}
		return nil
	}}
	res, err := run(t, b, s, restore.Options{Target: target, Verify: true, FS: fsys})
	if !errors.Is(err, restore.ErrVerifyFailed) {
		t.Fatalf("restore returns %v, want ErrVerifyFailed", err)
	}
	var failed []string
	for _, f := range res.VerifyFailures {
		failed = append(failed, f.Path)
	}
	if want := []string{"/d/f", "/d/g"}; !reflect.DeepEqual(failed, want) || res.Verified != 2 {
		t.Errorf("verify failures %v, %d verified; want %q, 2 verified (big and small)", res.VerifyFailures, res.Verified, want)
	}
}

// failingRepo fails every load of blob fail, and the walker holds at path
// hold until that failure has been returned.
type failingRepo struct {
	*repo.Repository
	fail   repo.ID
	hold   string
	failed chan struct{}
	once   sync.Once
}

var errLoad = errors.New("injected load failure")

func (r *failingRepo) LoadBlobsInOrder(ctx context.Context, ids []repo.ID, buf *repo.BlobBuffer, fn func(int, []byte) error) error {
	for i, id := range ids {
		if id == r.fail {
			// The blobs before it are handed over first, as a read of
			// them would.
			if err := r.Repository.LoadBlobsInOrder(ctx, ids[:i], buf, fn); err != nil {
				return err
			}
			r.once.Do(func() { close(r.failed) })
			return errLoad
		}
	}
	return r.Repository.LoadBlobsInOrder(ctx, ids, buf, fn)
}

func (r *failingRepo) Walk(ctx context.Context, root repo.ID, opts repo.WalkOptions, v repo.WalkVisitor) error {
	node := v.Node
	v.Node = func(e *repo.WalkEntry) error {
		if e.Path == r.hold {
			<-r.failed
		}
		return node(e)
	}
	return r.Repository.Walk(ctx, root, opts, v)
}

// A failure a file worker meets cancels nothing: the files queued after it
// are restored, and the restore returns the failure as damage, never as a
// cancellation.
func TestRestoreReturnsTheWorkersFailure(t *testing.T) {
	b := newBuilder(t)
	s := b.snapshot(b.file("/a", []byte("fails to load")), b.file("/z", []byte("queued after the failure")))
	r := &failingRepo{Repository: b.r, fail: b.r.BlobID([]byte("fails to load")), hold: "/z", failed: make(chan struct{})}
	target := t.TempDir()
	res, err := restore.Run(context.Background(), r, s, restore.Options{Target: target})
	var damaged *restore.DamagedError
	if !errors.Is(err, errLoad) || !errors.As(err, &damaged) || errors.Is(err, context.Canceled) {
		t.Errorf("restore returns %v, want the failure to load /a as damage", err)
	}
	if res == nil || !strings.Contains(skipReason(res, "/a"), errLoad.Error()) {
		t.Fatalf("result %+v, want /a named with its failure", res)
	}
	sameContent(t, b, target, "z")
}
