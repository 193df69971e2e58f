//go:build !windows

package restore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/restore"
)

// storageDown is a backend whose loads of the packs in data fail, after
// the first ok of them, as a storage fails after its retries (an S3
// server down). It hides the wrapped backend's capabilities, so that every
// read of pack data is a Load it sees.
type storageDown struct {
	repo.Backend
	data   map[string]bool
	ok     int64
	loads  atomic.Int64
	failed atomic.Int64
}

var errStorageDown = fmt.Errorf("injected: %w", repo.ErrStorageUnavailable)

func (b *storageDown) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	if h.Type == repo.PackFile && b.data[h.Name] && b.loads.Add(1) > b.ok {
		b.failed.Add(1)
		return nil, fmt.Errorf("load %s: %w", h, errStorageDown)
	}
	return b.Backend.Load(ctx, h, offset, length)
}

// openStorageDown opens the builder's repository again through a
// storageDown whose failing packs are those of the chunks of the files
// and the trees of the folders in failing; plan wraps
// it in a backend that takes read plans, as object storage does, so that
// big files are read by pack jobs.
func openStorageDown(t *testing.T, b *builder, failing []repo.Node, ok int64, plan bool) (*repo.Repository, *storageDown) {
	t.Helper()
	down := &storageDown{Backend: b.faulty, data: map[string]bool{}, ok: ok}
	var be repo.Backend = down
	if plan {
		be = &planningBackend{Backend: down}
	}
	ctx := context.Background()
	r, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range failing {
		ids := n.Content
		if n.Subtree != nil {
			ids = []repo.ID{*n.Subtree}
		}
		for _, id := range ids {
			loc, found := r.Index().Lookup(id)
			if !found {
				t.Fatalf("a blob of %s is not in the index", n.Name)
			}
			down.data[loc.Pack.String()] = true
		}
	}
	return r, down
}

// The storage failing after its retries is no damage, and every later
// read would fail alike after the same retries: the restore stops at the
// first such read, reads nothing more but what was under way, removes the
// files it was writing, and returns the failure with what it restored;
// no entry is counted as damaged. One worker, so that the reads under way
// are the failing one alone: the read of its run and the repository's
// read of its first blob alone (LoadBlobsInOrder), two loads.
func TestRestoreStopsWhenTheStorageFails(t *testing.T) {
	const (
		chunk = 4 << 10 // small: only the number of chunks matters
		ok    = 3       // files read before the storage fails
	)
	for _, tc := range []struct {
		name string
		// each stores the snapshot's i-th entry; it returns the entry and
		// the files or folders whose packs fail.
		each    func(b *builder, i int) (entry, failing repo.Node)
		okLoads int64 // loads of the failing packs that succeed
		plan    bool  // object storage: big files are read by pack jobs
		// walkFails: the walk meets the failure, and the files it queued
		// before it that the worker had not read yet are not restored.
		walkFails bool
	}{
		{name: "small files", okLoads: ok, each: func(b *builder, i int) (repo.Node, repo.Node) {
			f := b.file(fmt.Sprintf("/f%02d", i), randomBytes(uint64(i), chunk))
			return f, f
		}},
		{name: "pack jobs", okLoads: ok, plan: true, each: func(b *builder, i int) (repo.Node, repo.Node) {
			var chunks [][]byte
			for c := range bigChunks {
				chunks = append(chunks, randomBytes(uint64(i*bigChunks+c), chunk))
			}
			f := b.file(fmt.Sprintf("/f%02d", i), chunks...)
			// A pack of its own, a pack job of its own.
			if _, err := b.endSession(); err != nil {
				b.t.Fatal(err)
			}
			return f, f
		}},
		// The root's tree and those of the first ok folders are read.
		{name: "folders", okLoads: 1 + ok, walkFails: true, each: func(b *builder, i int) (repo.Node, repo.Node) {
			name := fmt.Sprintf("d%02d", i)
			d := b.dir(name, b.file("/"+name+"/f", randomBytes(uint64(i), chunk)))
			return d, d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t)
			var entries, failing []repo.Node
			for i := range 12 {
				e, f := tc.each(b, i)
				entries, failing = append(entries, e), append(failing, f)
			}
			s := b.snapshot(entries...)
			r, down := openStorageDown(t, b, failing, tc.okLoads, tc.plan)
			target := filepath.Join(t.TempDir(), "target")
			res, err := restore.Run(context.Background(), r, s, restore.Options{Target: target, Workers: 1, Verify: true})
			var damaged *restore.DamagedError
			if !errors.Is(err, repo.ErrStorageUnavailable) || !errors.Is(err, errStorageDown) || errors.As(err, &damaged) {
				t.Errorf("restore returns %v, want the storage's failure, not damage", err)
			}
			if got := down.failed.Load(); got > 2 {
				t.Errorf("%d loads failed, want at most 2: the restore read on after the storage failed", got)
			}
			if res == nil {
				t.Fatal("no result: what was restored before the failure is not told")
			}
			if res.Damaged != 0 || len(res.Skipped) != 0 {
				t.Errorf("result counts %d entries as damaged, skips %v: the storage's failure is no damage", res.Damaged, res.Skipped)
			}
			var files int64
			for rel, content := range tree(t, target) {
				if content != "dir" {
					files++
					sameContent(t, b, target, rel)
					continue
				}
				// What is in place stays, in folders with their metadata.
				fi, err := os.Lstat(filepath.Join(target, rel))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != 0o750 || !fi.ModTime().Equal(mtime) {
					t.Errorf("folder %s has mode %v and mtime %v, want 0750 and %v", rel, fi.Mode().Perm(), fi.ModTime(), mtime)
				}
			}
			if files != res.Files || res.Files > ok || (res.Files != ok && !tc.walkFails) {
				t.Errorf("result says %d files restored, the target holds %d; want the %d read before the failure", res.Files, files, ok)
			}
			noTemps(t, target)
		})
	}
}
