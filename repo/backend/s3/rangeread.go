package s3

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nightjar-backup/nightjar/repo"
)

var _ repo.RangeOpener = (*Backend)(nil)

// OpenRange reads length bytes of h from offset with one ranged GET whose
// body is read as the caller reads, past the read-ahead windows: check
// --read-data reads each pack front to back with it, one request per pack
// where the windows made three or four. A body that breaks off (a dropped
// connection, a truncated answer) is resumed with a ranged GET of what is
// left, at most bodyRetries times for the whole read as for a Load; the
// client retries each GET itself (maxRetries). When the retries run out
// the read fails with mapError's classified error.
func (b *Backend) OpenRange(ctx context.Context, h repo.Handle, offset, length int64) (io.ReadCloser, error) {
	key, err := b.key(h)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", h, err)
	}
	if offset < 0 || length < 0 {
		return nil, fmt.Errorf("read %s at %d+%d: negative offset or length", h, offset, length)
	}
	r := &rangeReader{b: b, ctx: ctx, h: h, key: key, at: offset, left: length}
	if length == 0 {
		// No GET asks for no bytes: the object need only exist.
		if _, err := b.Stat(ctx, h); err != nil {
			return nil, err
		}
		return r, nil
	}
	if err := r.open(); err != nil {
		return nil, mapError("read "+h.String(), err)
	}
	return r, nil
}

// rangeReader is a ranged read of an object: the body of the current GET
// and where it stands.
type rangeReader struct {
	b       *Backend
	ctx     context.Context
	h       repo.Handle
	key     string
	at      int64 // the offset of the next byte in the object
	left    int64 // bytes still to read
	body    io.ReadCloser
	resumes int
	err     error // the read failed for good
}

// open starts a GET of what is left to read.
func (r *rangeReader) open() error {
	body, size, err := r.b.get(r.ctx, r.key, r.at, r.left)
	if err != nil {
		return err
	}
	if size != r.left {
		body.Close()
		return fmt.Errorf("%d bytes at %d asked for, %d there", r.left, r.at, size)
	}
	r.body = body
	return nil
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.left == 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.body.Read(p)
	r.at += int64(n)
	r.left -= int64(n)
	if err == nil || r.left == 0 {
		return n, nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // the body ended before the range did
	}
	r.body.Close()
	r.body = nil
	if rerr := r.resume(err); rerr != nil {
		r.err = rerr
		return n, rerr
	}
	return n, nil
}

// resume starts a new GET of what is left after the body broke off with
// cause, unless the read was resumed bodyRetries times already or the
// context ended.
func (r *rangeReader) resume(cause error) error {
	if err := r.ctx.Err(); err != nil {
		return fmt.Errorf("read %s: %w", r.h, err)
	}
	if r.resumes == bodyRetries {
		return mapError(fmt.Sprintf("read %s (%d tries)", r.h, bodyRetries+1), cause)
	}
	r.resumes++
	if err := r.open(); err != nil {
		return mapError(fmt.Sprintf("read %s again at %d", r.h, r.at), err)
	}
	return nil
}

// Close ends the read; a body not read to its end is dropped with its
// connection.
func (r *rangeReader) Close() error {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
	if r.err == nil {
		r.err = errors.New("read of a closed range")
	}
	return nil
}
