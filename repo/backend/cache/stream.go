package cache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"lukechampine.com/blake3"

	"github.com/nightjar-backup/nightjar/repo"
)

// NewPackStream opens a pack stream of the wrapped backend; a tree pack's
// bytes are also written to a copy, kept when the pack is committed under
// the name its bytes hash to: the next backup reads its parent's trees
// from here.
func (b *Backend) NewPackStream(ctx context.Context, kind repo.PackKind) (repo.PackStream, error) {
	ps, ok := repo.Capability[repo.PackStreamer](b.Backend)
	if !ok {
		return nil, fmt.Errorf("pack stream: %w", errors.ErrUnsupported)
	}
	s, err := ps.NewPackStream(ctx, kind)
	if err != nil {
		return nil, err
	}
	dir := b.dir.Load()
	if kind != repo.TreePack || dir == nil {
		return s, nil
	}
	f, err := os.CreateTemp(filepath.Join(*dir, string(repo.PackFile)), ".tmp-*")
	if err != nil {
		return s, nil // no copy, the pack is saved all the same
	}
	return &teeStream{PackStream: s, b: b, f: f, h: blake3.New(32, nil)}, nil
}

// teeStream is a tree pack being written, and its copy.
type teeStream struct {
	repo.PackStream
	b *Backend
	f *os.File // nil once the copy failed
	h *blake3.Hasher
}

func (s *teeStream) Write(p []byte) (int, error) {
	n, err := s.PackStream.Write(p)
	if s.f != nil && n > 0 {
		s.h.Write(p[:n])
		if _, werr := s.f.Write(p[:n]); werr != nil {
			s.discard()
		}
	}
	return n, err
}

// Commit commits the pack, then keeps the copy under its name when the
// bytes written hash to it.
func (s *teeStream) Commit(ctx context.Context, name string) error {
	err := s.PackStream.Commit(ctx, name)
	if s.f == nil {
		return err
	}
	id, perr := repo.ParseID(name)
	if err != nil || perr != nil || string(s.h.Sum(nil)) != string(id[:]) {
		s.discard()
		return err
	}
	tmp := s.f.Name()
	if s.f.Close() != nil {
		_ = os.Remove(tmp)
		return nil
	}
	s.f = nil
	p := filepath.Join(filepath.Dir(tmp), name)
	if os.Rename(tmp, p) != nil {
		_ = os.Remove(tmp)
		return nil
	}
	s.b.mu.Lock()
	s.b.verified[p] = true
	s.b.mu.Unlock()
	return nil
}

// Abort aborts the pack and throws the copy away.
func (s *teeStream) Abort() {
	s.PackStream.Abort()
	if s.f != nil {
		s.discard()
	}
}

func (s *teeStream) discard() {
	_ = s.f.Close()
	_ = os.Remove(s.f.Name())
	s.f = nil
}
