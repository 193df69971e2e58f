package s3

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/nightjar-backup/nightjar/repo"
)

// The repository reads a blob with a ranged read of its own; on S3 each
// is a GET, and a restore of a thousand small files makes a thousand. The
// blobs of one file, and the trees of one snapshot, sit next to each other
// in a pack in the order they are read, so a read of a pack that misses
// fetches a window from its offset on and later reads inside the window
// are served from memory. Packs never change once saved (their name is
// their hash); a window is dropped all the same when this backend saves
// or removes its pack.
const (
	// readAheadWindow is how much a missed read of a pack fetches: half a
	// pack of the default size, so that reading a pack through costs two
	// or three GETs where it cost one per blob.
	readAheadWindow = 8 << 20
	// readAheadBudget bounds the bytes the windows hold, those being
	// fetched included: eight windows.
	readAheadBudget = 64 << 20
)

// readAhead is a bounded cache of windows of pack objects, the least
// recently used dropped first. Safe for concurrent use.
type readAhead struct {
	window, budget int64

	mu    sync.Mutex
	used  int64                  // bytes held or reserved by windows
	byKey map[string][]*raWindow // windows of each object, ready or being fetched
	lru   list.List              // ready windows, most recently used first
	// onWait, when set, is called as a reader starts to wait for another's
	// fetch: tests learn of it without waiting for time to pass.
	onWait func()
	// plan holds the spans of each object that a plan (plan.go) says will
	// be read and that no window holds yet, by offset.
	plan map[string][]planSpan
	// spansFetched counts the planned spans fetched, spansDeferred the
	// planned reads that went to the server alone for want of room,
	// spansDropped the spans dropped for room before their last read.
	spansFetched, spansDeferred, spansDropped int
}

// raWindow is the bytes of one object from offset on. While being fetched
// it reserves its full size and done is open; when done is closed, data
// holds what the server returned, or err why it did not.
type raWindow struct {
	key     string
	offset  int64
	data    []byte
	err     error
	done    chan struct{}
	reserve int64         // bytes counted in used for this window: asked for, then got
	elem    *list.Element // in lru once ready; nil while fetched or after being dropped
	dropped bool          // no longer in byKey: not to be put in lru
	planned bool          // a planned span: dropped once pending reaches 0
	pending int           // planned reads of it not yet served
	waiters int           // reads that found it while it was fetched
}

func newReadAhead(window, budget int64) *readAhead {
	return &readAhead{window: window, budget: budget, byKey: make(map[string][]*raWindow)}
}

// fetchFunc fills a window: it reads from offset up to length bytes of the
// object, fewer when the object ends before. Its errors are the backend's.
type fetchFunc func(ctx context.Context, offset, length int64) ([]byte, error)

// read fills buf with the bytes of key at offset from a window, fetching
// one with fetch when none holds them: the planned span that holds the
// read (plan.go), or else a window from offset on. The error is fetch's.
// It returns false when the cache cannot answer (a read larger than a
// window outside the plan, no room left while every window is being
// fetched, another reader's fetch failed, the object ends before the read
// does): the caller reads it itself.
func (r *readAhead) read(ctx context.Context, key string, offset int64, buf []byte, fetch fetchFunc) (bool, error) {
	n := int64(len(buf))
	r.mu.Lock()
	w := r.find(key, offset, n)
	if w == nil {
		if s, ok := r.plannedSpan(key, offset, n); ok {
			if w = r.startSpan(key, s); w == nil {
				r.unplanOne(key, s)
			}
		} else if n <= r.window {
			w = r.start(key, offset, n)
		}
		if w == nil {
			r.mu.Unlock()
			return false, nil
		}
		r.mu.Unlock()
		data, err := fetch(ctx, w.offset, w.reserve)
		r.finish(w, data, err)
		if err != nil {
			return true, err
		}
	} else {
		onWait := r.onWait
		r.mu.Unlock()
		select {
		case <-w.done:
		default:
			if onWait != nil {
				onWait()
			}
			select {
			case <-w.done:
			case <-ctx.Done():
				return true, fmt.Errorf("load %s: %w", key, ctx.Err())
			}
		}
	}
	if w.err != nil {
		// Another reader's error, not cached (its context may have
		// ended): this read goes to the server on its own.
		return false, nil
	}
	if offset+n > w.offset+int64(len(w.data)) {
		// The object ends before the read does: the server says why.
		return false, nil
	}
	copy(buf, w.data[offset-w.offset:])
	r.served(w)
	return true, nil
}

// find returns a window of key that holds, or will hold once fetched, the
// n bytes at offset, marking it used; nil when there is none. r.mu is held.
func (r *readAhead) find(key string, offset, n int64) *raWindow {
	for _, w := range r.byKey[key] {
		if offset < w.offset {
			continue
		}
		select {
		case <-w.done:
			if w.err != nil || offset+n > w.offset+int64(len(w.data)) {
				continue
			}
			if w.elem != nil {
				r.lru.MoveToFront(w.elem)
			}
			return w
		default:
			if offset+n <= w.offset+w.reserve {
				w.waiters++
				return w
			}
		}
	}
	return nil
}

// start reserves a window of key at offset for a read of n bytes, dropping
// the least recently used ready windows to make room; nil when the windows
// being fetched leave no room. The window stops where the next window of
// key starts, when the read fits before: bytes held are not fetched twice.
// r.mu is held.
func (r *readAhead) start(key string, offset, n int64) *raWindow {
	length := r.window
	for _, o := range r.byKey[key] {
		if o.offset > offset && o.offset-offset >= n && o.offset-offset < length {
			length = o.offset - offset
		}
	}
	for _, s := range r.plan[key] {
		// A planned span is fetched whole when it is first read.
		if s.offset > offset && s.offset-offset >= n && s.offset-offset < length {
			length = s.offset - offset
		}
	}
	if !r.makeRoom(length, 1) {
		return nil
	}
	w := &raWindow{key: key, offset: offset, done: make(chan struct{}), reserve: length}
	r.used += w.reserve
	r.byKey[key] = append(r.byKey[key], w)
	return w
}

// finish records the outcome of w's fetch: a window that failed, or was
// dropped meanwhile, is let go; one that holds bytes counts what it holds.
func (r *readAhead) finish(w *raWindow, data []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w.data, w.err = data, err
	close(w.done)
	if w.dropped {
		return
	}
	if err != nil {
		r.drop(w)
		// Planned again whole, for the next reader to fetch anew; the
		// reader that fetched it and those that waited read on their own.
		if left := w.pending - 1 - w.waiters; w.planned && left > 0 {
			r.replan(w.key, planSpan{offset: w.offset, length: w.reserve, reads: left})
		}
		return
	}
	r.used += int64(cap(data)) - w.reserve
	w.reserve = int64(cap(data))
	w.elem = r.lru.PushFront(w)
}

// drop lets w go and frees its bytes. r.mu is held.
func (r *readAhead) drop(w *raWindow) {
	if w.dropped {
		return
	}
	w.dropped = true
	r.used -= w.reserve
	if w.elem != nil {
		r.lru.Remove(w.elem)
		w.elem = nil
	}
	ws := r.byKey[w.key]
	for i, o := range ws {
		if o == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(r.byKey, w.key)
	} else {
		r.byKey[w.key] = ws
	}
}

// forget drops the windows of key, for an object saved or removed; one
// being fetched is left to its readers but not kept.
func (r *readAhead) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range append([]*raWindow(nil), r.byKey[key]...) {
		r.drop(w)
	}
}

// held returns the bytes the windows hold or have reserved, for tests of
// the bound.
func (r *readAhead) held() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.used
}

// fetchWindow reads up to length bytes of key from offset with one GET:
// S3 answers a range that runs past the object's end with the bytes there
// are.
func (b *Backend) fetchWindow(ctx context.Context, h repo.Handle, key string, offset, length int64) ([]byte, error) {
	body, size, err := b.get(ctx, key, offset, length)
	if err != nil {
		return nil, mapError("load "+h.String(), err)
	}
	if size > length || size < 0 {
		body.Close()
		return nil, fmt.Errorf("load %s: %d bytes at %d asked for, %d returned", h, length, offset, size)
	}
	buf := make([]byte, size)
	n, err := io.ReadFull(body, buf)
	body.Close()
	if err != nil {
		if err := b.resume(ctx, key, offset, buf, n, err); err != nil {
			return nil, fmt.Errorf("load %s: %w", h, err)
		}
	}
	return buf, nil
}
