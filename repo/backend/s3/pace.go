package s3

import (
	"context"
	"io"

	"github.com/nightjar-backup/nightjar/repo"
)

var _ repo.TransferPacer = (*Backend)(nil)

// paceStep is the most a paced body hands on at a time: the wire runs at
// most this far ahead of a bandwidth cap.
const paceStep = 64 << 10

// PaceTransfers makes every request body the backend sends wait for up,
// and every answer body it reads wait for down, as their bytes go (nil: no
// cap). It is called before the backend moves data (limit.Wrap, when the
// repository is opened): a pack is sent only when its stream is committed
// and the read-ahead fetches whole windows, so caps charged on the calls
// let them out at line speed.
func (b *Backend) PaceTransfers(up, down func(ctx context.Context, n int) error) {
	b.paceUp, b.paceDown = up, down
}

// pacedReader hands on what it reads only once wait allowed it, at most
// paceStep at a time.
type pacedReader struct {
	io.Reader
	ctx  context.Context // the request's, which its waits belong to
	wait func(ctx context.Context, n int) error
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if len(b) > paceStep {
		b = b[:paceStep]
	}
	n, err := p.Reader.Read(b)
	if n > 0 {
		if werr := p.wait(p.ctx, n); werr != nil {
			return 0, werr
		}
	}
	return n, err
}

// paced returns r, read through wait when there is one.
func paced(ctx context.Context, r io.Reader, wait func(ctx context.Context, n int) error) io.Reader {
	if wait == nil {
		return r
	}
	return &pacedReader{Reader: r, ctx: ctx, wait: wait}
}

// pacedBody is an answer's body read through a wait.
type pacedBody struct {
	io.Reader
	io.Closer
}

// pacedClose returns body, read through wait when there is one.
func pacedClose(ctx context.Context, body io.ReadCloser, wait func(ctx context.Context, n int) error) io.ReadCloser {
	if wait == nil {
		return body
	}
	return pacedBody{Reader: paced(ctx, body, wait), Closer: body}
}
