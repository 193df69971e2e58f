package repo_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// pinTime is the fake clock of the repositories of the pin tests.
var pinTime = time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)

// repoWithSnapshot makes a repository in be holding one empty snapshot and
// returns it with the snapshot's ID.
func repoWithSnapshot(t *testing.T, be repo.Backend) (*repo.Repository, string) {
	t.Helper()
	ctx := context.Background()
	r := initRepoWith(t, be, password, repo.InitOptions{Now: func() time.Time { return pinTime }})
	tree, err := writer(t, r).SaveTree(ctx, &repo.Tree{})
	if err != nil {
		t.Fatal(err)
	}
	flush(t, r)
	snap := &repo.Snapshot{ID: repo.NewSnapshotID(), Time: pinTime, Hostname: "h", Paths: []string{"/a"}, Tree: tree}
	if err := flush(t, r).SaveSnapshot(ctx, snap); err != nil {
		t.Fatal(err)
	}
	return r, snap.ID
}

func mustPins(t *testing.T, r *repo.Repository) map[string]*repo.Pin {
	t.Helper()
	pins, err := r.Pins(context.Background())
	if err != nil {
		t.Fatalf("pins: %v", err)
	}
	return pins
}

// A pin is stored, read back with who and when, updated by a second pin
// and removed by unpin, on every backend, and never touches the snapshot
// record.
func TestPinUnpin(t *testing.T) {
	ctx := context.Background()
	backends := []struct {
		name string
		new  func(t *testing.T) repo.Backend
	}{
		{"local", newLocal},
		{"memory", func(*testing.T) repo.Backend { return memory.New() }},
	}
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.new(t)
			r, id := repoWithSnapshot(t, be)
			record := load(t, be, repo.Handle{Type: repo.SnapshotFile, Name: id})
			if pins := mustPins(t, r); len(pins) != 0 {
				t.Fatalf("a new repository has pins: %v", pins)
			}

			p, err := r.Pin(ctx, id, "tax records 2026")
			if err != nil {
				t.Fatal(err)
			}
			host, _ := os.Hostname()
			want := repo.Pin{Snapshot: id, Reason: "tax records 2026", Hostname: host, Username: p.Username, Time: pinTime}
			if *p != want {
				t.Errorf("pin returned %+v, want %+v", *p, want)
			}
			// Read back through a second opening: the pin is in the repository.
			got := mustPins(t, openRepo(t, be))
			if len(got) != 1 || got[id] == nil || *got[id] != want {
				t.Fatalf("pins read back %v, want %s: %+v", got, id, want)
			}

			if _, err := r.Pin(ctx, id, "kept for the audit"); err != nil {
				t.Fatalf("second pin: %v", err)
			}
			got = mustPins(t, r)
			if len(got) != 1 || got[id].Reason != "kept for the audit" {
				t.Errorf("after a second pin: %v, want one pin with the new reason", got)
			}
			if ids, err := r.PinnedIDs(ctx); err != nil || !slices.Equal(ids, []string{id}) {
				t.Errorf("pinned IDs %v (%v), want [%s]", ids, err, id)
			}

			if err := r.Unpin(ctx, id); err != nil {
				t.Fatal(err)
			}
			if pins := mustPins(t, r); len(pins) != 0 {
				t.Errorf("pins after unpin: %v", pins)
			}
			if !bytes.Equal(load(t, be, repo.Handle{Type: repo.SnapshotFile, Name: id}), record) {
				t.Error("pinning changed the snapshot record")
			}
			if locks := names(t, be, repo.LockFile); len(locks) != 0 {
				t.Errorf("locks left behind: %v", locks)
			}
		})
	}
}

// Pins refused for bad input change nothing and say why.
func TestPinErrors(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r, id := repoWithSnapshot(t, be)
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"pin of a missing snapshot", func() error { _, err := r.Pin(ctx, "0123abcd", "x"); return err }, repo.ErrSnapshotNotFound},
		{"pin of an invalid ID", func() error { _, err := r.Pin(ctx, "../escape", "x"); return err }, repo.ErrSnapshotNotFound},
		{"pin of a prefix", func() error { _, err := r.Pin(ctx, id[:8], "x"); return err }, repo.ErrSnapshotNotFound},
		{"unpin of an unpinned snapshot", func() error { return r.Unpin(ctx, id) }, repo.ErrNotPinned},
		{"unpin of a missing snapshot", func() error { return r.Unpin(ctx, "0123abcd") }, repo.ErrNotPinned},
		{"unpin of an invalid ID", func() error { return r.Unpin(ctx, "../escape") }, repo.ErrNotPinned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.do(); !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
			if pins := names(t, be, repo.PinFile); len(pins) != 0 {
				t.Errorf("pin objects written: %v", pins)
			}
			if locks := names(t, be, repo.LockFile); len(locks) != 0 {
				t.Errorf("locks left behind: %v", locks)
			}
		})
	}
}

// Pin and unpin take the shared lock: while a forget holds the exclusive
// lock they fail at once as busy and change nothing, so that a forget
// that read the pins after taking its lock has seen every pin there is.
func TestPinLocksOutForget(t *testing.T) {
	ctx := context.Background()
	be := newLocal(t)
	r, unpinned := repoWithSnapshot(t, be)
	// A second snapshot, pinned before the forget begins.
	tree, err := writer(t, r).SaveTree(ctx, &repo.Tree{})
	if err != nil {
		t.Fatal(err)
	}
	flush(t, r)
	pinned := repo.NewSnapshotID()
	if err := flush(t, r).SaveSnapshot(ctx, &repo.Snapshot{ID: pinned, Time: pinTime, Tree: tree}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Pin(ctx, pinned, "before"); err != nil {
		t.Fatal(err)
	}

	forget := mustLock(t, openRepo(t, be), true, "forget")
	if _, err := r.Pin(ctx, unpinned, "during"); !errors.Is(err, repo.ErrBusy) {
		t.Errorf("pin beside an exclusive lock: %v, want ErrBusy", err)
	}
	if err := r.Unpin(ctx, pinned); !errors.Is(err, repo.ErrBusy) {
		t.Errorf("unpin beside an exclusive lock: %v, want ErrBusy", err)
	}
	if ids, err := r.PinnedIDs(ctx); err != nil || !slices.Equal(ids, []string{pinned}) {
		t.Errorf("pins seen by the forget: %v (%v), want only the earlier pin %s", ids, err, pinned)
	}
	if err := forget.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Pin(ctx, unpinned, "after"); err != nil {
		t.Errorf("pin once the forget is done: %v", err)
	}
	// Shared with a backup or a check: both go on.
	backup := mustLock(t, r, false, "backup")
	defer backup.Unlock()
	if err := r.Unpin(ctx, unpinned); err != nil {
		t.Errorf("unpin beside a shared lock: %v", err)
	}
}

// A pin object on disk is private, sealed and bound to its name.
func TestPinObject(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	be, err := local.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, id := repoWithSnapshot(t, be)
	if _, err := r.Pin(ctx, id, "a reason that must not show"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "pins", id)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("pin file mode %v, want 0600", fi.Mode().Perm())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("nightjar pin 1\n")) || bytes.Contains(data, []byte("must not show")) {
		t.Errorf("pin object is not a sealed pin: %q", data)
	}

	// The same bytes under another snapshot's name are not a pin of it:
	// reading them fails, check reports it, yet the name still pins.
	other := repo.NewSnapshotID()
	store(t, be, repo.Handle{Type: repo.PinFile, Name: other}, data)
	if _, err := r.Pins(ctx); !errors.Is(err, repo.ErrIntegrity) {
		t.Errorf("pins with a moved pin object: %v, want ErrIntegrity", err)
	}
	if ids, err := r.PinnedIDs(ctx); err != nil || !slices.Contains(ids, other) {
		t.Errorf("pinned IDs %v (%v) leave out the damaged pin %s", ids, err, other)
	}
	rep, err := r.Check(ctx, repo.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if findProblem(rep, "pin "+other) == nil || len(rep.Problems) != 1 {
		t.Errorf("check of a damaged pin: %s", problemList(rep))
	}
}

// A pin whose snapshot is gone is a warning of check, not damage.
func TestCheckDanglingPin(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r, id := repoWithSnapshot(t, be)
	if _, err := r.Pin(ctx, id, "x"); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Check(ctx, repo.CheckOptions{})
	if err != nil || !rep.OK() || len(rep.DanglingPins) != 0 {
		t.Fatalf("check of a pinned snapshot: %v %v%s", err, rep.DanglingPins, problemList(rep))
	}
	if err := be.Remove(ctx, repo.Handle{Type: repo.SnapshotFile, Name: id}); err != nil {
		t.Fatal(err)
	}
	rep, err = r.Check(ctx, repo.CheckOptions{})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v%s", err, problemList(rep))
	}
	if !slices.Equal(rep.DanglingPins, []string{id}) {
		t.Errorf("dangling pins %v, want [%s]", rep.DanglingPins, id)
	}
	// Unpin clears it although the snapshot is gone.
	if err := r.Unpin(ctx, id); err != nil {
		t.Errorf("unpin of a pin whose snapshot is gone: %v", err)
	}
}

// Repositories made before pins existed have no pins folder: they open,
// list no pins without writing anything, and take a pin.
func TestPinsOfGoldenRepositories(t *testing.T) {
	ctx := context.Background()
	for i, dir := range goldenDirs {
		version := i + 1
		t.Run(filepath.Base(dir), func(t *testing.T) {
			be, err := local.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			r, err := repo.Open(ctx, be, repo.OpenOptions{Password: pw(goldenPassword)})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if pins, err := r.Pins(ctx); err != nil || len(pins) != 0 {
				t.Errorf("pins of the golden repository: %v (%v), want none", pins, err)
			}
			if _, err := os.Stat(filepath.Join(dir, "pins")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("listing pins made a pins folder: %v", err)
			}

			copyDir := t.TempDir()
			if err := os.CopyFS(copyDir, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			be, err = local.Open(copyDir)
			if err != nil {
				t.Fatal(err)
			}
			r, err = repo.Open(ctx, be, repo.OpenOptions{Password: pw(goldenPassword)})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if _, err := r.Pin(ctx, goldenSnapshot(version), "golden"); err != nil {
				t.Fatalf("pin in a repository made before pins: %v", err)
			}
			if pins := mustPins(t, r); len(pins) != 1 || pins[goldenSnapshot(version)] == nil {
				t.Errorf("pins %v, want the golden snapshot's", pins)
			}
			if snaps, err := r.Snapshots(ctx); err != nil || len(snaps) != 1 {
				t.Errorf("snapshots after the pin: %v (%v)", snaps, err)
			}
		})
	}
}
