package repo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
)

// afterList wraps a Backend and runs a function once, right after the
// first List of a chosen type returns: a step of whoever lists is done, and
// the next not begun.
type afterList struct {
	repo.Backend
	mu   sync.Mutex
	typ  repo.FileType
	then func()
}

func (a *afterList) List(ctx context.Context, t repo.FileType, fn func(string, int64) error) error {
	err := a.Backend.List(ctx, t, fn)
	a.mu.Lock()
	then := a.then
	if t == a.typ {
		a.then = nil
	} else {
		then = nil
	}
	a.mu.Unlock()
	if then != nil {
		then()
	}
	return err
}

func (a *afterList) Unwrap() repo.Backend { return a.Backend }

// backupInto writes what a backup writes, in its order (a pack, the index
// file that lists it, then the snapshot that uses it), through its own
// Repository on be.
func backupInto(t *testing.T, be repo.Backend, seed uint64) {
	t.Helper()
	ctx := context.Background()
	w := openRepo(t, be)
	data := random(seed, 64<<10)
	var root repo.ID
	written, err := w.WriteSession(ctx, repo.WriteOptions{}, func(ctx context.Context, wr *repo.Writer) error {
		id := w.BlobID(data)
		if _, err := wr.SaveBlob(ctx, repo.DataBlob, id, data); err != nil {
			return err
		}
		var err error
		root, err = wr.SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{{Name: fmt.Sprintf("new-%d.bin", seed), Type: repo.NodeFile,
			Mode: 0o644, Size: uint64(len(data)), Content: []repo.ID{id}}}})
		return err
	})
	if err != nil {
		t.Fatalf("backup beside check: %v", err)
	}
	snap := &repo.Snapshot{ID: repo.NewSnapshotID(), Time: time.Now(), Paths: []string{"/new"}, Tree: root, ProgramVersion: "test"}
	if err := written.SaveSnapshot(ctx, snap); err != nil {
		t.Fatalf("backup beside check: %v", err)
	}
}

// TestCheckBesideBackup runs a whole backup between two steps of check,
// after each of its listings in turn, and wants check clean (issue 16,
// item 5: check read the index before it listed the snapshots, and
// reported the blobs of a snapshot saved meanwhile missing from the index).
func TestCheckBesideBackup(t *testing.T) {
	for _, typ := range []repo.FileType{repo.SnapshotFile, repo.IndexFile, repo.PackFile} {
		for _, readData := range []float64{0, 1} {
			t.Run(fmt.Sprintf("after listing %s, read data %v", typ, readData), func(t *testing.T) {
				f := newFixture(t)
				ran := false
				hooked := &afterList{Backend: f.be, typ: typ, then: func() {
					backupInto(t, f.be, 7)
					ran = true
				}}
				r, err := repo.Open(context.Background(), hooked, repo.OpenOptions{Password: pw(password)})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				rep, err := r.Check(context.Background(), repo.CheckOptions{ReadDataFraction: readData})
				if err != nil {
					t.Fatal(err)
				}
				if !ran {
					t.Fatalf("check never listed %s: the backup did not run beside it", typ)
				}
				if !rep.OK() {
					t.Errorf("check beside a backup found problems:\n%s", problemList(rep))
				}
				// The backup's snapshot is sound: a check after it sees it.
				after := f.check(t, 1)
				if !after.OK() || after.Snapshots != 2 {
					t.Errorf("check after the backup: %d snapshots, problems:\n%s", after.Snapshots, problemList(after))
				}
			})
		}
	}
}

// TestCheckRereadsIndexBeforeMissing gives check a snapshot whose index
// file it did not read (storage that lists a new file late) and wants the
// blob found by reading the index files again, not reported missing.
func TestCheckRereadsIndexBeforeMissing(t *testing.T) {
	f := newFixture(t)
	late := &lateIndex{Backend: f.be}
	backupInto(t, f.be, 9)
	var all []string
	if err := f.be.List(context.Background(), repo.IndexFile, func(name string, _ int64) error {
		all = append(all, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	late.hidden = all[len(all)-1:] // hidden from the first listing only
	if len(all) < 2 {
		t.Fatalf("want several index files, have %d", len(all))
	}
	r, err := repo.Open(context.Background(), late, repo.OpenOptions{Password: pw(password)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := r.Check(context.Background(), repo.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if late.listed < 2 {
		t.Fatalf("check listed the index files %d times, want it to list them again before reporting a blob missing", late.listed)
	}
	if !rep.OK() {
		t.Errorf("check reported problems of an index file listed late:\n%s", problemList(rep))
	}
}

// lateIndex hides some index files from the first listing of the index.
type lateIndex struct {
	repo.Backend
	hidden []string
	listed int
}

func (l *lateIndex) List(ctx context.Context, t repo.FileType, fn func(string, int64) error) error {
	if t != repo.IndexFile {
		return l.Backend.List(ctx, t, fn)
	}
	l.listed++
	first := l.listed == 1
	return l.Backend.List(ctx, t, func(name string, size int64) error {
		for _, h := range l.hidden {
			if first && h == name {
				return nil
			}
		}
		return fn(name, size)
	})
}

func (l *lateIndex) Unwrap() repo.Backend { return l.Backend }
