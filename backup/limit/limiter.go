package limit

import (
	"context"
	"fmt"
	"io"
	"math"

	"golang.org/x/time/rate"
)

// Limiter is a shared budget of bytes per second; a nil *Limiter is
// unlimited. It is safe for concurrent use.
type Limiter struct {
	lim   *rate.Limiter
	burst int
}

// New returns a Limiter of bytesPerSecond that allows bursts of one second's
// worth, starting with a full burst; for bytesPerSecond <= 0 it returns nil,
// which is unlimited.
func New(bytesPerSecond int64) *Limiter {
	if bytesPerSecond <= 0 {
		return nil
	}
	burst := int(min(bytesPerSecond, math.MaxInt))
	return &Limiter{lim: rate.NewLimiter(rate.Limit(bytesPerSecond), burst), burst: burst}
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
		if werr := r.l.lim.WaitN(r.ctx, n); werr != nil {
			if r.ctx.Err() == nil {
				// n is at most the burst, so WaitN failed early because the
				// wait would outlast the context's deadline.
				werr = context.DeadlineExceeded
			}
			return 0, fmt.Errorf("wait for bandwidth: %w", werr)
		}
	}
	return n, err
}
