package local

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/nightjar-backup/nightjar/repo"
)

var _ repo.RangeOpener = (*Backend)(nil)

// OpenRange returns a reader of length bytes of h from offset: a section
// of the file, which a pack shares with other readers through the cache of
// open pack files until Close.
func (b *Backend) OpenRange(ctx context.Context, h repo.Handle, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 || length < 0 {
		return nil, fmt.Errorf("read %s at %d+%d: negative offset or length", h, offset, length)
	}
	f, done, err := b.openForRead(ctx, h)
	if err != nil {
		return nil, err
	}
	return &sectionReader{ctx: ctx, h: h, offset: offset, length: length, r: io.NewSectionReader(f, offset, length), done: done}, nil
}

// sectionReader reads a section of an object's file; it fails when the
// file ends before the section does.
type sectionReader struct {
	ctx            context.Context
	h              repo.Handle
	offset, length int64
	read           int64 // bytes read so far
	r              *io.SectionReader
	done           func()
	closeOnce      sync.Once
}

func (s *sectionReader) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := s.r.Read(p)
	s.read += int64(n)
	if err == io.EOF && s.read < s.length {
		return n, fmt.Errorf("read %s at %d+%d: the file ends after %d bytes: %w", s.h, s.offset, s.length, s.offset+s.read, io.ErrUnexpectedEOF)
	}
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("read %s at %d+%d: %w", s.h, s.offset, s.length, err)
	}
	return n, err
}

// Close hands the file back to the cache of open pack files (or closes it).
func (s *sectionReader) Close() error {
	s.closeOnce.Do(s.done)
	return nil
}
