package limit

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nightjar-backup/nightjar/repo"
)

var _ repo.RangeOpener = (*Backend)(nil)

// OpenRange opens a ranged read of the wrapped backend's repo.RangeOpener
// whose bytes are taken from the download budget as they are read.
func (b *Backend) OpenRange(ctx context.Context, h repo.Handle, offset, length int64) (io.ReadCloser, error) {
	ro, ok := repo.Capability[repo.RangeOpener](b.Backend)
	if !ok {
		return nil, fmt.Errorf("ranged read: %w", errors.ErrUnsupported)
	}
	rc, err := ro.OpenRange(ctx, h, offset, length)
	if err != nil || b.down == nil {
		return rc, err
	}
	return &rangeReader{ReadCloser: rc, ctx: ctx, down: b.down}, nil
}

// rangeReader is a ranged read whose reads wait for the download budget:
// each reads at most a burst, then takes what it read, so that a stream
// is paced as it goes and every byte is counted once.
type rangeReader struct {
	io.ReadCloser
	ctx  context.Context // the read's, which its waits belong to
	down *budget
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if len(p) > r.down.burst {
		p = p[:r.down.burst]
	}
	n, err := r.ReadCloser.Read(p)
	if werr := r.down.wait(r.ctx, n); werr != nil {
		return n, werr
	}
	return n, err
}
