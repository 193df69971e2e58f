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

func TestReadStopsWithContext(t *testing.T) {
	tests := []struct {
		name string
		// drain takes the full burst first, so that the read tested must wait
		// a second for tokens.
		drain bool
		ctx   func() (context.Context, context.CancelFunc)
		want  error
	}{
		{"cancelled before reading", false, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
		{"cancelled while waiting", true, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline before tokens", true, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		}, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			r := New(1000).Reader(ctx, zeros{})
			buf := make([]byte, 1000)
			if tt.drain {
				if _, err := r.Read(buf); err != nil {
					t.Fatalf("first read: %v", err)
				}
			}
			start := time.Now()
			n, err := r.Read(buf)
			if n != 0 || !errors.Is(err, tt.want) {
				t.Fatalf("Read = %d, %v; want 0, %v", n, err, tt.want)
			}
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Fatalf("Read returned after %v, want well before the second it would wait", d)
			}
		})
	}
}

// TestSharedRate checks in real time that readers sharing a Limiter together
// read no faster than its rate: one 6 MiB stream and three concurrent 2 MiB
// streams at 2 MiB/s both take (6 MiB - 2 MiB burst) / (2 MiB/s) = 2 s.
func TestSharedRate(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 4 s of real time")
	}
	const rate = 2 << 20
	const want = 2 * time.Second
	timeReaders := func(sizes ...int64) time.Duration {
		l := New(rate)
		start := time.Now()
		var wg sync.WaitGroup
		for _, size := range sizes {
			wg.Go(func() {
				n, err := io.Copy(io.Discard, l.Reader(context.Background(), io.LimitReader(zeros{}, size)))
				if n != size || err != nil {
					t.Errorf("copied %d bytes, %v; want %d", n, err, size)
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	one := timeReaders(6 << 20)
	three := timeReaders(2<<20, 2<<20, 2<<20)
	t.Logf("one 6 MiB stream: %v; three 2 MiB streams: %v; expected %v", one, three, want)
	within := func(d, ref time.Duration) bool {
		return d >= ref*3/4 && d <= ref*5/4
	}
	if !within(one, want) || !within(three, want) {
		t.Errorf("durations %v and %v, want each within 25%% of %v", one, three, want)
	}
	if !within(one, three) || !within(three, one) {
		t.Errorf("durations %v and %v, want each within 25%% of the other", one, three)
	}
}
