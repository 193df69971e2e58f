package limit_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/limit"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// A ranged read takes its bytes from the download budget as they are read,
// a burst at most at a time, each byte once: the stream is paced while it
// runs, not charged up front or after.
func TestRangedReadIsPacedAsItGoes(t *testing.T) {
	ctx := context.Background()
	const burst = 1000
	down := &counter{}
	be := limit.WrapCounted(newLocal(t), nil, down, burst)
	data := bytes.Repeat([]byte("nightjar"), 1000) // 8000 bytes
	h := repo.Handle{Type: repo.PackFile, Name: "0123456789abcdef"}
	if err := be.Save(ctx, h, data); err != nil {
		t.Fatal(err)
	}
	ro, ok := repo.Capability[repo.RangeOpener](be)
	if !ok {
		t.Fatal("the wrapper has no RangeOpener")
	}
	rc, err := ro.OpenRange(ctx, h, 100, 7500)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if down.total() != 0 {
		t.Fatalf("opening the read took %d bytes from the budget before any was read", down.total())
	}
	first := make([]byte, 300)
	if _, err := io.ReadFull(rc, first); err != nil {
		t.Fatal(err)
	}
	if down.total() != 300 {
		t.Errorf("after 300 bytes read the budget gave %d", down.total())
	}
	rest, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(first, rest...), data[100:7600]) {
		t.Fatal("the limited read returned other bytes")
	}
	if down.total() != 7500 {
		t.Errorf("a read of 7500 bytes took %d from the download budget", down.total())
	}
	for _, n := range down.waits {
		if n > burst {
			t.Errorf("a wait of %d bytes, more than a burst of %d", n, burst)
		}
	}
}

// A stream whose budget fails (the context ended while it waited) fails
// with that error; where the wrapped backend has no ranged reads, the
// wrapper says so with errors.ErrUnsupported.
func TestRangedReadThatCannotWaitFails(t *testing.T) {
	ctx := context.Background()
	down := &counter{err: context.Canceled}
	be := limit.WrapCounted(newLocal(t), nil, down, 1000)
	h := repo.Handle{Type: repo.PackFile, Name: "0123456789abcdef"}
	if err := be.Save(ctx, h, make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	ro, _ := repo.Capability[repo.RangeOpener](be)
	rc, err := ro.OpenRange(ctx, h, 0, 5000)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadAll(rc); !errors.Is(err, context.Canceled) {
		t.Errorf("read past a failed budget: %v, want context.Canceled", err)
	}

	noRanges := limit.Wrap(unranged{memory.New()}, 0, 1<<20)
	ro, ok := repo.Capability[repo.RangeOpener](noRanges)
	if !ok {
		t.Fatal("the wrapper has no RangeOpener")
	}
	if _, err := ro.OpenRange(ctx, h, 0, 1); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("ranged read over a backend without them: %v, want ErrUnsupported", err)
	}
}

// unranged is a backend without any capability.
type unranged struct{ repo.Backend }
