package s3_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// With the bandwidth caps' waits handed over (PaceTransfers), a body goes
// out only as its wait allows, a whole PUT and the parts of a multipart
// upload alike: while the upload wait holds, the server has been sent no
// more than was allowed (a pack is not sent at line speed once written,
// as a cap on the calls let it); every byte sent and read is taken from
// its wait, with the request's signing overhead: at least what the
// server got and sent.
func TestPacedTransfers(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	for _, c := range []struct {
		name string
		size int
	}{{"one PUT", 4 << 20}, {"multipart", multipartSize}} {
		t.Run(c.name, func(t *testing.T) {
			s3.SetPartSize(t, smallPart)
			pacedRoundTrip(t, srv, c.size)
		})
	}
}

// pacedRoundTrip saves size bytes through a proxy with the upload wait
// held after 1 MiB, then loads them, and checks what went through.
func pacedRoundTrip(t *testing.T, srv *s3test.Server, size int) {
	proxy, err := faultproxy.Start("http://"+srv.Endpoint, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	loc, err := s3.ParseLocation(proxy.URL() + "/paced-" + strconv.Itoa(size) + "/repo")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	be, err := s3.Create(ctx, s3.Config{Location: loc, BucketLookup: "path"})
	if err != nil {
		t.Fatal(err)
	}
	const allowed = 1 << 20
	var mu sync.Mutex
	var up, down int
	held, release := make(chan struct{}), make(chan struct{})
	var hold sync.Once
	be.PaceTransfers(func(ctx context.Context, n int) error {
		mu.Lock()
		over := up+n > allowed
		up += n
		mu.Unlock()
		if over {
			hold.Do(func() { close(held) })
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}, func(_ context.Context, n int) error {
		mu.Lock()
		down += n
		mu.Unlock()
		return nil
	})

	data := backendtest.RandomBytes(6, size)
	h := repo.Handle{Type: repo.PackFile, Name: strings.Repeat("6c", 32)}
	proxy.ResetCounts()
	saved := make(chan error, 1)
	go func() { saved <- be.Save(ctx, h, data) }()
	select {
	case <-held:
	case err := <-saved:
		t.Fatalf("save ended (%v) without waiting past the %d bytes allowed", err, allowed)
	}
	// The save is held: nothing past what was allowed can have gone out.
	if sent := proxy.Counts().BytesIn; sent > allowed+16<<10 {
		t.Errorf("%d bytes sent while the upload wait held after %d", sent, allowed)
	}
	close(release)
	if err := <-saved; err != nil {
		t.Fatal(err)
	}
	got, err := be.Load(ctx, h, 0, -1)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("load: %d bytes, %v; want the %d saved", len(got), err, len(data))
	}
	mu.Lock()
	defer mu.Unlock()
	if wire := proxy.Counts(); int64(up) < wire.BytesIn || int64(down) < wire.BytesOut {
		t.Errorf("waits took %d bytes up and %d down; the server got %d and sent %d", up, down, wire.BytesIn, wire.BytesOut)
	}
	if up < size || up > size+size/50 || down < size || down > size+size/50 {
		t.Errorf("waits took %d bytes up and %d down, want %d each and a little signing and answers", up, down, size)
	}
}
