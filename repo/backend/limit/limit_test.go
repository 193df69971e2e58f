package limit_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/limit"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// counter is a budget that records what it is asked for and never waits,
// or fails with err when set.
type counter struct {
	mu    sync.Mutex
	waits []int
	err   error
}

func (c *counter) WaitN(_ context.Context, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, n)
	return c.err
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sum int
	for _, n := range c.waits {
		sum += n
	}
	return sum
}

func newLocal(t *testing.T) repo.Backend {
	t.Helper()
	be, err := local.Create(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	return be
}

// Every byte written (Save, pack streams) is taken from the upload budget
// and every byte read (Load, LoadInto) from the download budget, in steps
// no larger than a burst.
func TestEveryByteIsCountedOnce(t *testing.T) {
	ctx := context.Background()
	const burst = 1000
	up, down := &counter{}, &counter{}
	be := limit.WrapCounted(newLocal(t), up, down, burst)
	data := bytes.Repeat([]byte("nightjar"), 437) // 3496 bytes: three bursts and a part
	h := repo.Handle{Type: repo.SnapshotFile, Name: "s1"}

	if err := be.Save(ctx, h, data); err != nil {
		t.Fatal(err)
	}
	if want := []int{1000, 1000, 1000, 496}; !slices.Equal(up.waits, want) {
		t.Errorf("save took %v from the upload budget, want %v", up.waits, want)
	}
	if len(down.waits) != 0 {
		t.Errorf("save took %v from the download budget", down.waits)
	}

	got, err := be.Load(ctx, h, 10, -1)
	if err != nil || !bytes.Equal(got, data[10:]) {
		t.Fatalf("load: %v", err)
	}
	if down.total() != len(data)-10 {
		t.Errorf("load of %d bytes took %d from the download budget", len(data)-10, down.total())
	}

	bl, ok := repo.Capability[repo.BufferLoader](be)
	if !ok {
		t.Fatal("the wrapper lost BufferLoader")
	}
	buf := make([]byte, 100)
	if err := bl.LoadInto(ctx, h, 5, buf); err != nil || !bytes.Equal(buf, data[5:105]) {
		t.Fatalf("load into: %v", err)
	}
	if down.total() != len(data)-10+100 {
		t.Errorf("load into 100 bytes: download budget total %d, want %d", down.total(), len(data)-10+100)
	}

	ps, ok := repo.Capability[repo.PackStreamer](be)
	if !ok {
		t.Fatal("the wrapper lost PackStreamer")
	}
	s, err := ps.NewPackStream(ctx, repo.DataPack)
	if err != nil {
		t.Fatal(err)
	}
	before := up.total()
	for range 3 {
		if _, err := s.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	name := "0123456789abcdef"
	if err := s.Commit(ctx, name); err != nil {
		t.Fatal(err)
	}
	if n := up.total() - before; n != 3*len(data) {
		t.Errorf("pack stream of %d bytes took %d from the upload budget", 3*len(data), n)
	}
	if size, err := be.Stat(ctx, repo.Handle{Type: repo.PackFile, Name: name}); err != nil || size != int64(3*len(data)) {
		t.Errorf("streamed pack: size %d, %v", size, err)
	}
}

// When the budget fails (the context ended while waiting), nothing is
// written.
func TestSaveThatCannotWaitWritesNothing(t *testing.T) {
	ctx := context.Background()
	mem := memory.New()
	up := &counter{err: context.Canceled}
	be := limit.WrapCounted(mem, up, nil, 1000)
	h := repo.Handle{Type: repo.SnapshotFile, Name: "s1"}
	if err := be.Save(ctx, h, []byte("data")); !errors.Is(err, context.Canceled) {
		t.Fatalf("save: %v, want context.Canceled", err)
	}
	if _, err := mem.Stat(ctx, h); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("a save refused by the budget stored the object: %v", err)
	}
}

// The wrapper keeps every capability of what it wraps, and the ones it
// intercepts fail with errors.ErrUnsupported where the wrapped backend
// lacks them.
func TestCapabilitiesSurvive(t *testing.T) {
	be := limit.Wrap(newLocal(t), 1<<20, 1<<20)
	if _, ok := repo.Capability[repo.ProcessLocker](be); !ok {
		t.Error("ProcessLocker lost")
	}
	if _, ok := repo.Capability[repo.ObjectTimer](be); !ok {
		t.Error("ObjectTimer lost")
	}
	if _, ok := repo.Capability[io.Closer](be); !ok {
		t.Error("io.Closer lost")
	}
	onMemory := limit.Wrap(memory.New(), 1<<20, 0)
	ps, _ := repo.Capability[repo.PackStreamer](onMemory)
	if _, err := ps.NewPackStream(context.Background(), repo.DataPack); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("pack stream on memory: %v, want ErrUnsupported", err)
	}
	if be := memory.New(); limit.Wrap(be, 0, 0) != repo.Backend(be) {
		t.Error("without caps Wrap wrapped")
	}
}

// pacer is a backend in memory that paces its own transfers: it keeps the
// waits Wrap hands it.
type pacer struct {
	repo.Backend
	up, down func(ctx context.Context, n int) error
}

func (p *pacer) PaceTransfers(up, down func(ctx context.Context, n int) error) {
	p.up, p.down = up, down
}

// A backend that paces its transfers at the wire is given the caps' waits
// and is not wrapped: its calls are not charged as well.
func TestPacerGetsTheWaits(t *testing.T) {
	be := &pacer{Backend: memory.New()}
	if got := limit.Wrap(be, 1<<20, 0); got != repo.Backend(be) {
		t.Fatalf("Wrap of a pacer returned %T, want the pacer itself", got)
	}
	if be.up == nil || be.down != nil {
		t.Fatalf("pacer given up %v, down %v; want an upload wait only", be.up != nil, be.down != nil)
	}
	if err := be.up(context.Background(), 1<<20); err != nil {
		t.Errorf("upload wait for a burst: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := be.up(ctx, 1<<20); err == nil {
		t.Error("upload wait with a cancelled context succeeded")
	}
}

// The wrapped backends keep the guarantees of every backend.
func TestConforms(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) repo.Backend { return limit.Wrap(newLocal(t), 1<<30, 1<<30) })
}
