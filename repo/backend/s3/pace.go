package s3

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/nightjar-backup/nightjar/repo"
)

var _ repo.TransferPacer = (*Backend)(nil)

// paceStep is the most a paced body hands on at a time: what a request
// sends runs at most this far ahead of a bandwidth cap.
const paceStep = 64 << 10

// waits are the caps' waits of one backend (nil: no cap in that
// direction).
type waits struct {
	up, down func(ctx context.Context, n int) error
}

// pacing holds a backend's waits, which its transport reads at each
// request; nil until PaceTransfers.
type pacing struct{ atomic.Pointer[waits] }

// PaceTransfers makes every request body the backend's client sends wait
// for up, and every answer body it reads wait for down, as their bytes go
// (nil: no cap), the client's own retries and every part of a multipart
// upload included. limit.Wrap calls it when the repository is opened: a
// pack is sent only when its stream is committed, in parts past 64 MiB,
// and the read-ahead fetches whole windows, so caps charged on the calls
// let them out at line speed.
func (b *Backend) PaceTransfers(up, down func(ctx context.Context, n int) error) {
	b.pace.Store(&waits{up: up, down: down})
}

// pacedTransport reads the bodies of the requests it sends and of the
// answers it gets through the backend's caps.
type pacedTransport struct {
	next http.RoundTripper
	pace *pacing
}

func (t pacedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w := t.pace.Load()
	if w == nil {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	if w.up != nil && req.Body != nil && req.Body != http.NoBody {
		paced := req.Clone(ctx)
		paced.Body = pacedClose(ctx, req.Body, w.up)
		if getBody := req.GetBody; getBody != nil {
			paced.GetBody = func() (io.ReadCloser, error) {
				body, err := getBody()
				if err != nil {
					return nil, err
				}
				return pacedClose(ctx, body, w.up), nil
			}
		}
		req = paced
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && w.down != nil {
		resp.Body = pacedClose(ctx, resp.Body, w.down)
	}
	return resp, err
}

// paceError is a cap's wait that failed (its context ended, or would end
// before the wait): not a failure of the network or the server, and not
// worth a retry.
type paceError struct{ err error }

func (e *paceError) Error() string { return e.err.Error() }
func (e *paceError) Unwrap() error { return e.err }

// pacedBody hands on what it reads only once wait allowed it, at most
// paceStep at a time.
type pacedBody struct {
	io.ReadCloser
	ctx  context.Context // the request's, which its waits belong to
	wait func(ctx context.Context, n int) error
}

func (p *pacedBody) Read(b []byte) (int, error) {
	if len(b) > paceStep {
		b = b[:paceStep]
	}
	n, err := p.ReadCloser.Read(b)
	if n > 0 {
		if werr := p.wait(p.ctx, n); werr != nil {
			return 0, &paceError{werr}
		}
	}
	return n, err
}

// pacedClose returns body read through wait.
func pacedClose(ctx context.Context, body io.ReadCloser, wait func(ctx context.Context, n int) error) io.ReadCloser {
	return &pacedBody{ReadCloser: body, ctx: ctx, wait: wait}
}
