package limit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestNilLimiterIsUnlimited(t *testing.T) {
	for _, rate := range []int64{0, -1} {
		if l := New(rate); l != nil {
			t.Errorf("New(%d) = %v, want nil", rate, l)
		}
	}
	var l *Limiter
	r := bytes.NewReader([]byte("x"))
	if got := l.Reader(context.Background(), r); got != io.Reader(r) {
		t.Fatalf("nil Limiter's Reader = %T, want the reader itself", got)
	}
}

func TestReadReturnsAtMostOneBurst(t *testing.T) {
	r := New(10).Reader(context.Background(), zeros{})
	n, err := r.Read(make([]byte, 100))
	if n != 10 || err != nil {
		t.Fatalf("Read(100 bytes) = %d, %v; want 10, nil", n, err)
	}
}

func TestReadPassesEOF(t *testing.T) {
	got, err := io.ReadAll(New(1000).Reader(context.Background(), bytes.NewReader([]byte("nightjar"))))
	if err != nil || string(got) != "nightjar" {
		t.Fatalf("ReadAll = %q, %v; want %q, nil", got, err, "nightjar")
	}
}

// fakeClock is a Limiter's clock that never waits: a sleep moves the time
// to its end (sleeps that overlap in real life end at the latest of their
// ends, not at their sum), unless block makes it wait for the context.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	block  bool          // a sleep waits for its context to end
	slept  chan struct{} // closed at the first sleep; nil: not watched
	sleeps int
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now()} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleepUntil(ctx context.Context, end time.Time) error {
	c.mu.Lock()
	c.sleeps++
	if c.slept != nil && c.sleeps == 1 {
		close(c.slept)
	}
	block := c.block
	c.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if end.After(c.t) {
		c.t = end
	}
	return nil
}

// limiterOn returns New(rate) on c's time.
func limiterOn(rate int64, c *fakeClock) *Limiter {
	l := New(rate)
	l.clock = clock{now: c.now, sleepUntil: c.sleepUntil}
	return l
}

func TestReadStopsWithContext(t *testing.T) {
	tests := []struct {
		name string
		// drain takes the full burst first, so that the read tested must wait
		// a second for tokens.
		drain bool
		block bool // the wait lasts until the context ends
		ctx   func(c *fakeClock) (context.Context, context.CancelFunc)
		want  error
	}{
		{"cancelled before reading", false, false, func(*fakeClock) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"cancelled while waiting", true, true, func(c *fakeClock) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			c.slept = make(chan struct{})
			go func() {
				<-c.slept // the read waits for tokens: cancel it
				cancel()
			}()
			return ctx, cancel
		}, context.Canceled},
		{"deadline before tokens", true, false, func(c *fakeClock) (context.Context, context.CancelFunc) {
			// The read would wait a second; the deadline is in 200 ms.
			return context.WithDeadline(context.Background(), c.now().Add(200*time.Millisecond))
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClock()
			ctx, cancel := tt.ctx(c)
			defer cancel()
			r := limiterOn(1000, c).Reader(ctx, zeros{})
			buf := make([]byte, 1000)
			if tt.drain {
				if _, err := r.Read(buf); err != nil {
					t.Fatalf("first read: %v", err)
				}
			}
			c.block = tt.block
			n, err := r.Read(buf)
			if n != 0 || !errors.Is(err, tt.want) {
				t.Fatalf("Read = %d, %v; want 0, %v", n, err, tt.want)
			}
			if tt.name == "deadline before tokens" && c.sleeps != 0 {
				t.Fatalf("Read waited for tokens it could not get before the deadline")
			}
		})
	}
}

// TestSharedRate: readers sharing a Limiter together read no faster than
// its rate, and as fast: one 6 MiB stream and three concurrent 2 MiB
// streams at 2 MiB/s both take (6 MiB - 2 MiB burst) / (2 MiB/s) = 2 s of
// the limiter's clock, while three streams on limiters of their own take
// none (each fits its burst).
func TestSharedRate(t *testing.T) {
	const rate = 2 << 20
	elapsed := func(shared bool, sizes ...int64) time.Duration {
		c := newFakeClock()
		start := c.now()
		l := limiterOn(rate, c)
		var wg sync.WaitGroup
		for _, size := range sizes {
			own := l
			if !shared {
				own = limiterOn(rate, c)
			}
			wg.Go(func() {
				n, err := io.Copy(io.Discard, own.Reader(context.Background(), io.LimitReader(zeros{}, size)))
				if n != size || err != nil {
					t.Errorf("copied %d bytes, %v; want %d", n, err, size)
				}
			})
		}
		wg.Wait()
		return c.now().Sub(start)
	}
	near := func(d, want time.Duration) bool { return d >= want-time.Millisecond && d <= want+time.Millisecond }
	for _, tc := range []struct {
		name   string
		shared bool
		sizes  []int64
		want   time.Duration
	}{
		{"one 6 MiB stream", true, []int64{6 << 20}, 2 * time.Second},
		{"three 2 MiB streams sharing", true, []int64{2 << 20, 2 << 20, 2 << 20}, 2 * time.Second},
		{"three 2 MiB streams on limiters of their own", false, []int64{2 << 20, 2 << 20, 2 << 20}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := elapsed(tc.shared, tc.sizes...); !near(got, tc.want) {
				t.Errorf("took %v of the limiter's time, want %v", got, tc.want)
			}
		})
	}
}
