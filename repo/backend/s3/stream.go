package s3

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/nightjar-backup/nightjar/repo"
)

// A streamed pack is written to a temporary file of this host and put in
// the bucket on Commit, with one PUT from the file: S3 cannot rename, and
// a pack's name (its hash) is known only at its end, so the alternative,
// an upload under a temporary key copied to the final one, costs three
// requests and a server-side copy per pack. The file is removed from its
// folder as soon as it is made where the system allows (not Windows), so
// that a crash leaves no file behind; memory holds no pack whole.

// NewPackStream starts a pack in a temporary file (0600).
func (b *Backend) NewPackStream(ctx context.Context, _ repo.PackKind) (repo.PackStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(b.tempDir, "nightjar-s3-pack-")
	if err != nil {
		return nil, fmt.Errorf("new pack: %w", err)
	}
	s := &packStream{b: b, f: f}
	s.unlinked = os.Remove(f.Name()) == nil
	return s, nil
}

type packStream struct {
	b        *Backend
	f        *os.File
	size     int64
	unlinked bool // the file has no name left
	err      error
	done     bool
}

func (s *packStream) Write(p []byte) (int, error) {
	if s.done {
		return 0, errors.New("write to a finished pack stream")
	}
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.f.Write(p)
	s.size += int64(n)
	if err != nil {
		s.err = fmt.Errorf("write pack to temporary file: %w", err)
	}
	return n, s.err
}

// Commit puts the pack in the bucket as name.
func (s *packStream) Commit(ctx context.Context, name string) error {
	if s.done {
		return errors.New("commit of a finished pack stream")
	}
	defer s.close()
	if s.err != nil {
		return s.err
	}
	return s.b.put(ctx, repo.Handle{Type: repo.PackFile, Name: name}, s.f, s.size)
}

// Abort throws the pack away; nothing of it was ever sent.
func (s *packStream) Abort() {
	if !s.done {
		s.close()
	}
}

func (s *packStream) close() {
	s.done = true
	s.f.Close()
	if !s.unlinked {
		os.Remove(s.f.Name())
	}
}
