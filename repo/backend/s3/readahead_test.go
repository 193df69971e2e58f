package s3_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// The windows of these tests: small, so that a pack of a few hundred KiB
// spans several and a budget of three is soon full.
const (
	testWindow = 64 << 10
	testBudget = 3 * testWindow
)

// proxiedBackend returns a backend in a new bucket of a versitygw, reached
// through a counting proxy, with the test's read-ahead.
func proxiedBackend(t *testing.T) (*s3.Backend, *faultproxy.Proxy) {
	t.Helper()
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.MakeBucket(t, "readahead")
	p, err := faultproxy.Start("http://"+srv.Endpoint, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg := config(t, srv, "readahead", "repo")
	cfg.Endpoint = p.Addr()
	be, err := s3.Create(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	be.SetReadAhead(testWindow, testBudget)
	return be, p
}

// savePack stores size random bytes as a pack and returns them.
func savePack(t *testing.T, be *s3.Backend, name string, size int) []byte {
	t.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(uint64(size), uint64(len(name))))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := be.Save(context.Background(), repo.Handle{Type: repo.PackFile, Name: name}, data); err != nil {
		t.Fatal(err)
	}
	return data
}

func packName(c byte) string { return string(bytes.Repeat([]byte{c}, 64)) }

// gets returns the GETs the proxy saw since the last call, and resets.
func gets(p *faultproxy.Proxy) int64 {
	n := p.Counts().Requests[http.MethodGet]
	p.ResetCounts()
	return n
}

// Reads inside a window cost no request; a read across a window's end, or
// after it, fetches a new window from its own offset; a read near the
// object's end gets what is there; a read larger than a window goes
// through alone. Every read returns exactly the object's bytes.
func TestReadAheadWindows(t *testing.T) {
	be, p := proxiedBackend(t)
	be.SetReadAhead(testWindow, 8*testWindow) // room for every window of the test
	ctx := context.Background()
	const size = 300 << 10
	h := repo.Handle{Type: repo.PackFile, Name: packName('a')}
	data := savePack(t, be, h.Name, size)
	gets(p)

	for _, step := range []struct {
		name         string
		offset, n    int
		wantRequests int64
	}{
		{"first read fetches a window [0, 64K)", 0, 4 << 10, 1},
		{"inside the window", 10 << 10, 10 << 10, 0},
		{"up to the window's last byte", 50 << 10, 14 << 10, 0},
		{"across the window's end fetches [60K, 124K)", 60 << 10, 10 << 10, 1},
		{"inside the second window", 100 << 10, 24 << 10, 0},
		{"back in the first window", 1 << 10, 1 << 10, 0},
		{"after the windows", 200 << 10, 1 << 10, 1},
		{"near the end: a window of what is there", size - 10<<10, 5 << 10, 1},
		{"the object's last byte, from that window", size - 1, 1, 0},
		{"larger than a window: straight through", 0, 100 << 10, 1},
		{"a whole window's size at its start", 60 << 10, 64 << 10, 0},
	} {
		buf := make([]byte, step.n)
		if err := be.LoadInto(ctx, h, int64(step.offset), buf); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !bytes.Equal(buf, data[step.offset:step.offset+step.n]) {
			t.Fatalf("%s: bytes differ from the object's", step.name)
		}
		if got := gets(p); got != step.wantRequests {
			t.Errorf("%s: %d GETs, want %d", step.name, got, step.wantRequests)
		}
	}

	// Past the end: an error, whether a window holds the bytes before.
	buf := make([]byte, 2)
	if err := be.LoadInto(ctx, h, size-1, buf); err == nil {
		t.Error("a read running past the object's end succeeded")
	}
	if err := be.LoadInto(ctx, h, size+10, buf); err == nil {
		t.Error("a read starting past the object's end succeeded")
	}
	// Load with a length goes the same way.
	got, err := be.Load(ctx, h, 20<<10, 1<<10)
	if err != nil || !bytes.Equal(got, data[20<<10:21<<10]) {
		t.Errorf("load from a window: %v", err)
	}
}

// The windows never hold more than the budget; the least recently used is
// the one dropped.
func TestReadAheadBound(t *testing.T) {
	be, p := proxiedBackend(t)
	ctx := context.Background()
	names := []string{packName('a'), packName('b'), packName('c'), packName('d'), packName('e')}
	data := map[string][]byte{}
	for _, n := range names {
		data[n] = savePack(t, be, n, 200<<10)
	}
	gets(p)
	read := func(name string, offset int) {
		t.Helper()
		buf := make([]byte, 1<<10)
		if err := be.LoadInto(ctx, repo.Handle{Type: repo.PackFile, Name: name}, int64(offset), buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data[name][offset:offset+len(buf)]) {
			t.Fatalf("%s at %d: bytes differ from the object's", name[:1], offset)
		}
		if held := be.ReadAheadHeld(); held > testBudget {
			t.Fatalf("after reading %s at %d the windows hold %d bytes, more than the budget %d", name[:1], offset, held, testBudget)
		}
	}
	for _, n := range names {
		read(n, 0)
		read(n, 100<<10)
	}
	if got := gets(p); got != 10 {
		t.Errorf("ten reads in ten places: %d GETs, want 10", got)
	}
	if held := be.ReadAheadHeld(); held != testBudget {
		t.Errorf("the windows hold %d bytes after filling, want the budget %d", held, testBudget)
	}
	// The last three windows are e@100K, e@0, d@100K; d@0 was dropped.
	read(names[4], 0)
	read(names[3], 100<<10)
	if got := gets(p); got != 0 {
		t.Errorf("reads from the three newest windows: %d GETs, want 0", got)
	}
	read(names[3], 0)
	if got := gets(p); got != 1 {
		t.Errorf("a read from a dropped window: %d GETs, want 1", got)
	}
}

// Readers of a window being fetched wait for that fetch instead of making
// their own.
func TestReadAheadConcurrentReaders(t *testing.T) {
	be, p := proxiedBackend(t)
	ctx := context.Background()
	h := repo.Handle{Type: repo.PackFile, Name: packName('a')}
	data := savePack(t, be, h.Name, 200<<10)
	gets(p)

	release := make(chan struct{})
	held := make(chan struct{}, 1)
	p.SetRules(faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Times: 1, Fault: faultproxy.Delay, Release: release,
		OnFault: func(string, string) { held <- struct{}{} }})
	const readers = 8
	waiting := make(chan struct{}, readers)
	be.OnReadAheadWait(func() { waiting <- struct{}{} })

	errs := make(chan error, readers+1)
	read := func(offset int) {
		buf := make([]byte, 4<<10)
		err := be.LoadInto(ctx, h, int64(offset), buf)
		if err == nil && !bytes.Equal(buf, data[offset:offset+len(buf)]) {
			err = errors.New("bytes differ from the object's")
		}
		errs <- err
	}
	var releaseOnce sync.Once
	releaseFetch := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseFetch()
	go read(0)
	<-held
	for i := 1; i <= readers; i++ {
		go read(i * 6 << 10)
	}
	// Every reader waits for the held fetch; one that finishes first
	// made a request of its own.
	for waited := 0; waited < readers; {
		select {
		case <-waiting:
			waited++
		case err := <-errs:
			t.Fatalf("a reader finished while the window's fetch was held (%v): it did not wait for it", err)
		}
	}
	releaseFetch()
	for range readers + 1 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := p.Counts().Requests[http.MethodGet]; got != 1 {
		t.Errorf("%d readers of one window: %d GETs, want 1", readers+1, got)
	}
}

// A fetch that fails is not kept: a reader that waited for it reads on its
// own, and the next read of the window asks the server again.
func TestReadAheadErrorNotCached(t *testing.T) {
	be, p := proxiedBackend(t)
	h := repo.Handle{Type: repo.PackFile, Name: packName('a')}
	data := savePack(t, be, h.Name, 200<<10)
	gets(p)

	buf := make([]byte, 1<<10)
	secondErr := waitOnFailedFetch(t, be, p, h, 1<<10, 2<<10, buf)
	if err := secondErr; err != nil {
		t.Fatalf("the waiting read after the fetch failed: %v", err)
	}
	if !bytes.Equal(buf, data[2<<10:3<<10]) {
		t.Error("the waiting read: bytes differ from the object's")
	}
	if got := gets(p); got != 2 {
		t.Errorf("a failed fetch and the waiting reader's own read: %d GETs, want 2", got)
	}
	if err := be.LoadInto(context.Background(), h, 0, make([]byte, 1<<10)); err != nil {
		t.Fatal(err)
	}
	if got := gets(p); got != 1 {
		t.Errorf("a read after a failed fetch: %d GETs, want 1 (a window fetched anew)", got)
	}
}

// A pack removed through the backend is gone from the windows too: a read
// is ErrNotFound; one saved again is read anew.
func TestReadAheadRemoved(t *testing.T) {
	be, p := proxiedBackend(t)
	ctx := context.Background()
	h := repo.Handle{Type: repo.PackFile, Name: packName('a')}
	data := savePack(t, be, h.Name, 100<<10)
	buf := make([]byte, 1<<10)
	if err := be.LoadInto(ctx, h, 0, buf); err != nil {
		t.Fatal(err)
	}
	if err := be.Remove(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := be.LoadInto(ctx, h, 1<<10, buf); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("a read of a removed pack: %v, want ErrNotFound", err)
	}
	if _, err := be.Load(ctx, h, 0, 10); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("a load of a removed pack: %v, want ErrNotFound", err)
	}
	if held := be.ReadAheadHeld(); held != 0 {
		t.Errorf("the windows hold %d bytes after the only pack was removed and not found, want 0", held)
	}
	// The same name with other bytes (a test's liberty: packs are named by
	// their hash) is read from the server, not from an old window.
	other := savePack(t, be, h.Name, 90<<10)
	if bytes.Equal(other[:1<<10], data[:1<<10]) {
		t.Fatal("the test's second pack starts as the first")
	}
	gets(p)
	if err := be.LoadInto(ctx, h, 0, buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, other[:1<<10]) {
		t.Error("a read after saving the pack again returned the old bytes")
	}
}

// A window stops where the next window of its pack starts: the bytes held
// are not fetched again.
func TestReadAheadNoOverlap(t *testing.T) {
	be, p := proxiedBackend(t)
	ctx := context.Background()
	h := repo.Handle{Type: repo.PackFile, Name: packName('a')}
	data := savePack(t, be, h.Name, 200<<10)
	gets(p)
	for _, offset := range []int{100 << 10, 60 << 10, 99 << 10} {
		buf := make([]byte, 1<<10)
		if err := be.LoadInto(ctx, h, int64(offset), buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, data[offset:offset+len(buf)]) {
			t.Fatalf("at %d: bytes differ from the object's", offset)
		}
	}
	c := p.Counts()
	if c.Requests[http.MethodGet] != 2 || c.BytesOut != 104<<10 {
		t.Errorf("windows at 100K and then 60K: %d GETs of %d bytes, want 2 of %d ([100K, 164K) and [60K, 100K))", c.Requests[http.MethodGet], c.BytesOut, 104<<10)
	}
	if held := be.ReadAheadHeld(); held != 104<<10 {
		t.Errorf("the windows hold %d bytes, want %d", held, 104<<10)
	}
}

// waitOnFailedFetch holds the first GET of a pack's data at the proxy,
// started by a read of firstLen bytes of h at 0, starts a second read into
// buf at offset that must wait for that fetch (the read-ahead's onWait
// says so), then ends the first read's context so that the fetch fails;
// it returns the second read's error once the first has ended.
func waitOnFailedFetch(t *testing.T, be *s3.Backend, p *faultproxy.Proxy, h repo.Handle, firstLen int, offset int64, buf []byte) error {
	t.Helper()
	release := make(chan struct{})
	defer close(release)
	held := make(chan struct{}, 1)
	p.SetRules(faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Times: 1, Fault: faultproxy.Delay, Release: release,
		OnFault: func(string, string) { held <- struct{}{} }})
	waiting := make(chan struct{}, 1)
	be.OnReadAheadWait(func() { waiting <- struct{}{} })
	firstCtx, cancelFirst := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() { firstErr <- be.LoadInto(firstCtx, h, 0, make([]byte, firstLen)) }()
	<-held
	secondErr := make(chan error, 1)
	go func() { secondErr <- be.LoadInto(context.Background(), h, offset, buf) }()
	select {
	case <-waiting:
	case err := <-secondErr:
		t.Fatalf("the second read finished while the first's fetch was held (%v): it did not wait for it", err)
	}
	cancelFirst()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("the fetching read whose context ended: %v, want context.Canceled", err)
	}
	return <-secondErr
}
