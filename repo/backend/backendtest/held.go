package backendtest

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/nightjar-backup/nightjar/repo"
)

// HeldPacks wraps a Backend and holds every pack Save until Release, so
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

// Save holds pack files until Release and passes everything to the wrapped
// backend.
func (h *HeldPacks) Save(ctx context.Context, handle repo.Handle, data []byte) error {
	if handle.Type == repo.PackFile {
		h.active.Add(1)
		defer h.active.Add(-1)
		h.started <- struct{}{}
		<-h.gate
	}
	return h.Backend.Save(ctx, handle, data)
}
