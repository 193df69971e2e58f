package backendtest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/nightjar-backup/nightjar/repo"
)

// Streaming wraps a Backend and adds repo.PackStreamer on top of its Save
// (a stream is kept in memory and saved whole on Commit), so that the
// repository's streaming path can be tested on any backend, with faults.
// Safe for concurrent use.
type Streaming struct {
	repo.Backend
	mu          sync.Mutex
	failWriteAt int  // a Write that takes a stream past this many bytes fails; 0: none
	failCommit  bool // Commit fails
	open        int  // streams neither committed nor aborted
	kinds       []repo.PackKind
}

// NewStreaming wraps be.
func NewStreaming(be repo.Backend) *Streaming { return &Streaming{Backend: be} }

// Unwrap returns the wrapped backend.
func (s *Streaming) Unwrap() repo.Backend { return s.Backend }

// FailWritesPast makes every Write that takes a stream past n bytes fail
// with ErrInjected; 0 turns it off.
func (s *Streaming) FailWritesPast(n int) {
	s.mu.Lock()
	s.failWriteAt = n
	s.mu.Unlock()
}

// FailCommits makes Commit fail with ErrInjected (after discarding the
// stream) while on is true.
func (s *Streaming) FailCommits(on bool) {
	s.mu.Lock()
	s.failCommit = on
	s.mu.Unlock()
}

// Open is the number of streams neither committed nor aborted.
func (s *Streaming) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// Kinds returns the kinds of the streams started so far, in order.
func (s *Streaming) Kinds() []repo.PackKind {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.kinds)
}

// NewPackStream starts a stream.
func (s *Streaming) NewPackStream(ctx context.Context, kind repo.PackKind) (repo.PackStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.open++
	s.kinds = append(s.kinds, kind)
	s.mu.Unlock()
	return &stream{s: s}, nil
}

type stream struct {
	s    *Streaming
	buf  []byte
	done bool
}

func (st *stream) Write(p []byte) (int, error) {
	st.s.mu.Lock()
	limit := st.s.failWriteAt
	st.s.mu.Unlock()
	if st.done {
		return 0, fmt.Errorf("write to a finished stream")
	}
	if limit > 0 && len(st.buf)+len(p) > limit {
		return 0, fmt.Errorf("write pack stream: %w", ErrInjected)
	}
	st.buf = append(st.buf, p...)
	return len(p), nil
}

func (st *stream) finish() {
	if !st.done {
		st.done = true
		st.s.mu.Lock()
		st.s.open--
		st.s.mu.Unlock()
	}
}

func (st *stream) Commit(ctx context.Context, name string) error {
	st.finish()
	st.s.mu.Lock()
	fail := st.s.failCommit
	st.s.mu.Unlock()
	if fail {
		return fmt.Errorf("commit pack stream: %w", ErrInjected)
	}
	return st.s.Backend.Save(ctx, repo.Handle{Type: repo.PackFile, Name: name}, st.buf)
}

func (st *stream) Abort() { st.finish() }
