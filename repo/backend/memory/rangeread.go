package memory

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/nightjar-backup/nightjar/repo"
)

var _ repo.RangeOpener = (*Backend)(nil)

// OpenRange returns a reader of length bytes of h from offset. Save
// replaces an object's bytes whole and never changes them in place, so the
// reader reads the stored bytes without a copy.
func (b *Backend) OpenRange(ctx context.Context, h repo.Handle, offset, length int64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := key(h)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	data, ok := b.objects[k]
	b.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s: %w", h, repo.ErrNotFound)
	}
	size := int64(len(data))
	if offset < 0 || length < 0 || offset > size || length > size-offset {
		return nil, fmt.Errorf("read %s at %d+%d: beyond size %d", h, offset, length, size)
	}
	return io.NopCloser(bytes.NewReader(data[offset : offset+length])), nil
}
