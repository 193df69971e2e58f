package backup

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/memory"
)

// heldPackSaves holds every pack Save until gate is closed, and counts
// the Saves under way.
type heldPackSaves struct {
	repo.Backend
	gate    chan struct{}
	started chan struct{}
	active  atomic.Int32
}

func (h *heldPackSaves) Save(ctx context.Context, handle repo.Handle, data []byte) error {
	if handle.Type == repo.PackFile {
		h.active.Add(1)
		defer h.active.Add(-1)
		h.started <- struct{}{}
		<-h.gate
	}
	return h.Backend.Save(ctx, handle, data)
}

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
	be := &heldPackSaves{Backend: memory.New(), gate: make(chan struct{}), started: make(chan struct{}, 64)}
	r := testRepositoryOn(t, be)
	t.Cleanup(r.Close)
	// Cleanups run last first: the gate opens before Close waits for the
	// writes, also when the test fails early.
	release := sync.OnceFunc(func() { close(be.gate) })
	t.Cleanup(release)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Backup(ctx, r, Options{Paths: []string{src}})
		done <- err
	}()
	select {
	case <-be.started:
	case <-time.After(20 * time.Second):
		t.Fatal("no pack write started")
	}
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Backup returned (%v) while a pack was being written", err)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled backup returned no error")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Backup does not return once the pack writes end")
	}
	if n := be.active.Load(); n != 0 {
		t.Errorf("%d pack writes still under way after Backup returned", n)
	}
}
