package repo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

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
