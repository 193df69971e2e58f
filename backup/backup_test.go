package backup

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// A backup cancelled while packs are being written returns only once
// those writes have ended: its caller releases the repository's lock next,
// and may exit.
func TestCancelledBackupWaitsForPackWrites(t *testing.T) {
	src := t.TempDir()
	data := make([]byte, 3*repo.DefaultPackSize)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	be := backendtest.NewHeldPacks(memory.New())
	r := repotest.New(t, be)
	// Cleanups run last first: the held writes go on before Close waits
	// for them, also when the test fails early.
	t.Cleanup(be.Release)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Backup(ctx, r, Options{Paths: []string{src}})
		done <- err
	}()
	select {
	case <-be.Started():
	case <-time.After(20 * time.Second):
		t.Fatal("no pack write started")
	}
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Backup returned (%v) while a pack was being written", err)
	case <-time.After(300 * time.Millisecond):
	}
	be.Release()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled backup returned no error")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Backup does not return once the pack writes end")
	}
	if n := be.Active(); n != 0 {
		t.Errorf("%d pack writes still under way after Backup returned", n)
	}
}

// A full pack whose write is still under way when the archiver's own work
// has ended (its savers' context is cancelled as it returns) is finished
// under the write session's context: a backup with nothing wrong never
// fails with "context canceled" because a pack was slow.
func TestSlowPackWriteOutlivesTheArchiversContext(t *testing.T) {
	old := runtime.GOMAXPROCS(1) // one data packer: one full pack from the savers
	defer runtime.GOMAXPROCS(old)
	src := t.TempDir()
	data := make([]byte, repo.DefaultPackSize+repo.DefaultPackSize/4)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	be := backendtest.NewHeldPacks(memory.New())
	r := repotest.New(t, be)
	t.Cleanup(be.Release)
	done := make(chan error, 1)
	go func() {
		_, err := Backup(context.Background(), r, Options{Paths: []string{src}, Workers: 1})
		done <- err
	}()
	<-be.Started() // the savers' full pack, held
	<-be.Started() // a pack of the session's flush: the archiver has returned
	be.Release()
	for {
		select {
		case <-be.Started(): // the flush's further packs
		case err := <-done:
			if err != nil {
				t.Fatalf("a backup with nothing wrong failed: %v", err)
			}
			return
		}
	}
}

// A source below a symlinked folder (FreeBSD's /home -> /usr/home, macOS's
// /tmp -> /private/tmp) is saved under the path it was given, the symlink
// followed as a folder: the file is in the snapshot at that path.
func TestSourceBelowASymlinkedFolder(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "d", "f"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t, memory.New())
	source := filepath.Join(link, "d")
	res, err := Backup(context.Background(), r, Options{Paths: []string{source}, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Snapshot.Summary.Skipped) != 0 {
		t.Fatalf("skipped %v", res.Snapshot.Summary.Skipped)
	}
	parent, err := r.NodeAt(context.Background(), res.Snapshot.Tree, link)
	if err != nil {
		t.Fatalf("the symlinked folder above the source: %v", err)
	}
	if parent.Type != repo.NodeDir {
		t.Errorf("the folder above the source is stored as %s, want a folder", parent.Type)
	}
	file, err := r.NodeAt(context.Background(), res.Snapshot.Tree, filepath.Join(source, "f"))
	if err != nil {
		t.Fatalf("the file below the source: %v", err)
	}
	if file.Type != repo.NodeFile || file.Size != 6 {
		t.Errorf("the file is %s of %d bytes, want a file of 6", file.Type, file.Size)
	}
}
