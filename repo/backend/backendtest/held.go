package backendtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nightjar-backup/nightjar/repo"
)

// HeldPacks wraps a Backend and holds every pack Save (and every Commit of
// a stream of the wrapped backend's repo.PackStreamer) until Release, so
// that a test can act while pack writes are under way. It tells Started
// when such a Save begins and counts the ones under way. Safe for
// concurrent use.
type HeldPacks struct {
	repo.Backend
	started chan struct{}
	gate    chan struct{}
	release sync.Once
	active  atomic.Int32
}

// NewHeldPacks wraps be.
func NewHeldPacks(be repo.Backend) *HeldPacks {
	return &HeldPacks{Backend: be, started: make(chan struct{}, 64), gate: make(chan struct{})}
}

// Started receives once for every pack Save that begins (buffered: a test
// that does not read it holds up at most 64).
func (h *HeldPacks) Started() <-chan struct{} { return h.started }

// Release lets every held and later pack Save go on; calling it again does
// nothing.
func (h *HeldPacks) Release() { h.release.Do(func() { close(h.gate) }) }

// Active is the number of pack Saves under way.
func (h *HeldPacks) Active() int { return int(h.active.Load()) }

// Unwrap returns the wrapped backend.
func (h *HeldPacks) Unwrap() repo.Backend { return h.Backend }

// hold waits for Release, counted as a pack write under way until done is
// called.
func (h *HeldPacks) hold() (done func()) {
	h.active.Add(1)
	h.started <- struct{}{}
	<-h.gate
	return func() { h.active.Add(-1) }
}

// Save holds pack files until Release and passes everything to the wrapped
// backend.
func (h *HeldPacks) Save(ctx context.Context, handle repo.Handle, data []byte) error {
	if handle.Type == repo.PackFile {
		defer h.hold()()
	}
	return h.Backend.Save(ctx, handle, data)
}

// NewPackStream starts a stream of the wrapped backend's repo.PackStreamer
// whose Commit is held like a pack Save; it fails with
// errors.ErrUnsupported when the wrapped backend cannot stream.
func (h *HeldPacks) NewPackStream(ctx context.Context, kind repo.PackKind) (repo.PackStream, error) {
	ps, ok := repo.Capability[repo.PackStreamer](h.Backend)
	if !ok {
		return nil, fmt.Errorf("%s cannot stream packs: %w", h.Location(), errors.ErrUnsupported)
	}
	s, err := ps.NewPackStream(ctx, kind)
	if err != nil {
		return nil, err
	}
	return &heldStream{PackStream: s, h: h}, nil
}

type heldStream struct {
	repo.PackStream
	h *HeldPacks
}

func (s *heldStream) Commit(ctx context.Context, name string) error {
	defer s.h.hold()()
	return s.PackStream.Commit(ctx, name)
}
