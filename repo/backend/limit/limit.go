package limit

import (
	"context"
	"errors"
	"fmt"
	"math"

	"golang.org/x/time/rate"

	"github.com/nightjar-backup/nightjar/repo"
)

// waiter is a budget of bytes: rate.Limiter, or a test's counter.
type waiter interface {
	WaitN(ctx context.Context, n int) error
}

// budget is one direction's cap: its waiter and the most it takes at once.
type budget struct {
	w     waiter
	burst int
}

// newBudget returns the budget of bytesPerSecond, allowing bursts of one
// second's worth; nil for no cap.
func newBudget(bytesPerSecond int64) *budget {
	if bytesPerSecond <= 0 {
		return nil
	}
	burst := int(min(bytesPerSecond, math.MaxInt32))
	return &budget{w: rate.NewLimiter(rate.Limit(bytesPerSecond), burst), burst: burst}
}

// wait takes n bytes from the budget, a burst at a time; a nil budget
// takes nothing.
func (b *budget) wait(ctx context.Context, n int) error {
	if b == nil {
		return nil
	}
	for n > 0 {
		step := min(n, b.burst)
		if err := b.w.WaitN(ctx, step); err != nil {
			return fmt.Errorf("bandwidth limit: %w", err)
		}
		n -= step
	}
	return nil
}

// Backend caps the bandwidth of the backend it wraps. Every capability of
// that backend stays reachable (Unwrap); the two that move bytes,
// repo.PackStreamer and repo.BufferLoader, it implements itself.
type Backend struct {
	repo.Backend
	up, down *budget
}

var (
	_ repo.PackStreamer = (*Backend)(nil)
	_ repo.BufferLoader = (*Backend)(nil)
)

// Wrap returns be with at most upload bytes per second written and at most
// download bytes per second read; 0 or less is no cap. With neither cap it
// returns be itself, and so it does when be paces its own transfers
// (repo.TransferPacer), given the caps' waits: the bytes on the wire are
// then what is counted, not the calls.
func Wrap(be repo.Backend, upload, download int64) repo.Backend {
	if upload <= 0 && download <= 0 {
		return be
	}
	up, down := newBudget(upload), newBudget(download)
	if tp, ok := repo.Capability[repo.TransferPacer](be); ok {
		tp.PaceTransfers(up.waitFunc(), down.waitFunc())
		return be
	}
	return &Backend{Backend: be, up: up, down: down}
}

// waitFunc is the budget's wait for a repo.TransferPacer: nil for no cap.
func (b *budget) waitFunc() func(ctx context.Context, n int) error {
	if b == nil {
		return nil
	}
	return b.wait
}

// Unwrap returns the wrapped backend.
func (b *Backend) Unwrap() repo.Backend { return b.Backend }

// Save waits until the upload budget allows data, then saves it.
func (b *Backend) Save(ctx context.Context, h repo.Handle, data []byte) error {
	if err := b.up.wait(ctx, len(data)); err != nil {
		return err
	}
	return b.Backend.Save(ctx, h, data)
}

// Load loads, then waits until the download budget allows what was read:
// the length of an object read to its end is known only then.
func (b *Backend) Load(ctx context.Context, h repo.Handle, offset, length int64) ([]byte, error) {
	data, err := b.Backend.Load(ctx, h, offset, length)
	if err != nil {
		return nil, err
	}
	if err := b.down.wait(ctx, len(data)); err != nil {
		return nil, err
	}
	return data, nil
}

// LoadInto waits until the download budget allows len(buf), then reads
// through the wrapped backend's BufferLoader.
func (b *Backend) LoadInto(ctx context.Context, h repo.Handle, offset int64, buf []byte) error {
	bl, ok := repo.Capability[repo.BufferLoader](b.Backend)
	if !ok {
		return fmt.Errorf("load into a buffer: %w", errors.ErrUnsupported)
	}
	if err := b.down.wait(ctx, len(buf)); err != nil {
		return err
	}
	return bl.LoadInto(ctx, h, offset, buf)
}

// NewPackStream opens a pack stream of the wrapped backend whose writes
// wait for the upload budget.
func (b *Backend) NewPackStream(ctx context.Context, kind repo.PackKind) (repo.PackStream, error) {
	ps, ok := repo.Capability[repo.PackStreamer](b.Backend)
	if !ok {
		return nil, fmt.Errorf("pack stream: %w", errors.ErrUnsupported)
	}
	s, err := ps.NewPackStream(ctx, kind)
	if err != nil {
		return nil, err
	}
	return &stream{PackStream: s, ctx: ctx, up: b.up}, nil
}

// stream is a pack stream whose writes wait for the upload budget.
type stream struct {
	repo.PackStream
	ctx context.Context // the stream's, which its writes belong to
	up  *budget
}

func (s *stream) Write(p []byte) (int, error) {
	if err := s.up.wait(s.ctx, len(p)); err != nil {
		return 0, err
	}
	return s.PackStream.Write(p)
}
