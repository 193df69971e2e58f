//go:build crashtest

package crashpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/nightjar-backup/nightjar/repo"
)

// envVar names the Unix socket of the test that receives the steps.
const envVar = "NIGHTJAR_CRASHPOINT"

// Wrap returns be wrapped by the hook when NIGHTJAR_CRASHPOINT is set, and
// be itself when it is not.
func Wrap(be repo.Backend) repo.Backend {
	socket := os.Getenv(envVar)
	if socket == "" {
		return be
	}
	return &hookedBackend{Backend: be, socket: socket}
}

// hookedBackend announces each mutating call to the test and waits for its
// answer before making it; the calls are made one at a time.
type hookedBackend struct {
	repo.Backend
	socket string

	mu   sync.Mutex // held for the whole of a mutating call
	conn net.Conn
	in   *bufio.Reader
	step int
}

// Unwrap returns the backend the hook wraps.
func (b *hookedBackend) Unwrap() repo.Backend { return b.Backend }

// do announces the step op on object, waits for the test, and makes call.
func (b *hookedBackend) do(op, object string, call func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn == nil {
		conn, err := net.Dial("unix", b.socket)
		if err != nil {
			return fmt.Errorf("crash point: connect to %s: %w", b.socket, err)
		}
		b.conn, b.in = conn, bufio.NewReader(conn)
	}
	b.step++
	if _, err := fmt.Fprintf(b.conn, "step %d %s %s\n", b.step, op, object); err != nil {
		return fmt.Errorf("crash point: announce step %d: %w", b.step, err)
	}
	if _, err := b.in.ReadByte(); err != nil {
		return fmt.Errorf("crash point: wait at step %d: %w", b.step, err)
	}
	return call()
}

func (b *hookedBackend) Save(ctx context.Context, h repo.Handle, data []byte) error {
	return b.do("save", h.String(), func() error { return b.Backend.Save(ctx, h, data) })
}

func (b *hookedBackend) Remove(ctx context.Context, h repo.Handle) error {
	return b.do("remove", h.String(), func() error { return b.Backend.Remove(ctx, h) })
}

// NewPackStream makes the commit of a streamed pack a step.
func (b *hookedBackend) NewPackStream(ctx context.Context, kind repo.PackKind) (repo.PackStream, error) {
	ps, ok := repo.Capability[repo.PackStreamer](b.Backend)
	if !ok {
		return nil, fmt.Errorf("crash point: pack streams: %w", errors.ErrUnsupported)
	}
	s, err := ps.NewPackStream(ctx, kind)
	if err != nil {
		return nil, err
	}
	return &hookedStream{PackStream: s, b: b}, nil
}

// hookedStream is a pack stream whose Commit is a step.
type hookedStream struct {
	repo.PackStream
	b *hookedBackend
}

// Commit announces the step; when the hook fails before the commit is
// made, the stream is aborted, since Commit finishes it whatever the
// outcome.
func (s *hookedStream) Commit(ctx context.Context, name string) error {
	h := repo.Handle{Type: repo.PackFile, Name: name}
	committed := false
	err := s.b.do("commit", h.String(), func() error {
		committed = true
		return s.PackStream.Commit(ctx, name)
	})
	if !committed {
		s.PackStream.Abort()
	}
	return err
}

// SaveHeld makes taking a held lock a step, and its release another.
func (b *hookedBackend) SaveHeld(ctx context.Context, h repo.Handle, data []byte) (func() error, error) {
	pl, ok := repo.Capability[repo.ProcessLocker](b.Backend)
	if !ok {
		return nil, fmt.Errorf("crash point: held locks: %w", errors.ErrUnsupported)
	}
	var release func() error
	err := b.do("lock", h.String(), func() error {
		var err error
		release, err = pl.SaveHeld(ctx, h, data)
		return err
	})
	if err != nil {
		return nil, err
	}
	return func() error { return b.do("unlock", h.String(), release) }, nil
}

// Held asks the wrapped backend.
func (b *hookedBackend) Held(ctx context.Context, h repo.Handle) (bool, error) {
	pl, ok := repo.Capability[repo.ProcessLocker](b.Backend)
	if !ok {
		return false, fmt.Errorf("crash point: held locks: %w", errors.ErrUnsupported)
	}
	return pl.Held(ctx, h)
}
