package backendtest

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nightjar-backup/nightjar/repo"
)

// OpenRange passes to the wrapped backend's repo.RangeOpener like Load:
// it counts as a load, fails at the open when set up to, and damages the
// bytes read when set up to, each chunk where it lies in the object.
func (f *Faulty) OpenRange(ctx context.Context, h repo.Handle, offset, length int64) (io.ReadCloser, error) {
	ro, ok := repo.Capability[repo.RangeOpener](f.be)
	if !ok {
		return nil, fmt.Errorf("%s cannot read a range: %w", f.be.Location(), errors.ErrUnsupported)
	}
	fail, corrupt := f.countLoad(h)
	if fail {
		return nil, fmt.Errorf("read %s: %w", h, ErrInjected)
	}
	rc, err := ro.OpenRange(ctx, h, offset, length)
	if err != nil || corrupt == nil {
		return rc, err
	}
	return &corruptingReader{ReadCloser: rc, h: h, at: offset, corrupt: corrupt}, nil
}

// corruptingReader passes each chunk read through a Corrupter.
type corruptingReader struct {
	io.ReadCloser
	h       repo.Handle
	at      int64 // where in the object the next byte lies
	corrupt Corrupter
}

func (c *corruptingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 {
		c.corrupt(c.h, c.at, p[:n])
		c.at += int64(n)
	}
	return n, err
}
