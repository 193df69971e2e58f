package limit

import (
	"context"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a shared budget of bytes per second; a nil *Limiter is
// unlimited. It is safe for concurrent use.
type Limiter struct {
	lim   *rate.Limiter
	burst int
	clock clock
	// mu makes reading the clock and reserving one step, so that the
	// reservations reach the bucket in the order of their times (the
	// bucket counts time going back as time to earn tokens again).
	mu sync.Mutex
}

// clock is the time a Limiter reads and waits on: the real one, or a
// test's, so that its rate is tested without waiting.
type clock struct {
	now        func() time.Time
	sleepUntil func(ctx context.Context, t time.Time) error
}

var realClock = clock{now: time.Now, sleepUntil: func(ctx context.Context, until time.Time) error {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}}

// New returns a Limiter of bytesPerSecond that allows bursts of one second's
// worth, starting with a full burst; for bytesPerSecond <= 0 it returns nil,
// which is unlimited.
func New(bytesPerSecond int64) *Limiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	burst := int(min(bytesPerSecond, math.MaxInt))
	return &Limiter{lim: rate.NewLimiter(rate.Limit(bytesPerSecond), burst), burst: burst, clock: realClock}
}

// Reader returns a reader of r that waits, before returning bytes, until l
// allows them. Every reader of one Limiter draws on the same budget. A read
// returns at most one burst of bytes. When ctx is done, Read returns no data
// and an error wrapping ctx.Err(); when waiting would outlast ctx's deadline,
// it does so at once, with context.DeadlineExceeded.
// For a nil l, Reader returns r.
func (l *Limiter) Reader(ctx context.Context, r io.Reader) io.Reader {
	if l == nil {
		return r
	}
	return &reader{ctx: ctx, r: r, l: l}
}

// reader is the io.Reader returned by Limiter.Reader.
type reader struct {
	ctx context.Context
	r   io.Reader
	l   *Limiter
}

// Read reads at most one burst from the underlying reader and waits for the
// bytes read.
func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, fmt.Errorf("wait for bandwidth: %w", err)
	}
	if len(p) > r.l.burst {
		p = p[:r.l.burst]
	}
	n, err := r.r.Read(p)
	if n > 0 {
		if werr := r.l.wait(r.ctx, n); werr != nil {
			return 0, fmt.Errorf("wait for bandwidth: %w", werr)
		}
	}
	return n, err
}

// wait takes n bytes of the budget (n is at most the burst) and waits
// until they are allowed. When the wait would outlast ctx's deadline it
// fails at once with context.DeadlineExceeded, giving the bytes back.
func (l *Limiter) wait(ctx context.Context, n int) error {
	l.mu.Lock()
	now := l.clock.now()
	res := l.lim.ReserveN(now, n)
	l.mu.Unlock()
	if !res.OK() {
		return fmt.Errorf("%d bytes exceed the burst of %d", n, l.burst)
	}
	delay := res.DelayFrom(now)
	if deadline, ok := ctx.Deadline(); ok && now.Add(delay).After(deadline) {
		res.CancelAt(now)
		return context.DeadlineExceeded
	}
	if delay <= 0 {
		return nil
	}
	if err := l.clock.sleepUntil(ctx, now.Add(delay)); err != nil {
		res.Cancel()
		return err
	}
	return nil
}
