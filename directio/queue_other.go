//go:build !linux

package directio

import "os"

// Queue is Linux's asynchronous direct writes; elsewhere NewQueue returns
// nil and direct writes are synchronous.
type Queue struct{}

// NewQueue returns nil: asynchronous direct writes are made on Linux only.
func NewQueue() *Queue { return nil }

// Suits reports false: there is no queue.
func Suits(*os.File) bool { return false }

// Attach is never called on a nil Queue.
func (q *Queue) Attach(*os.File) { panic("directio: no queue on this system") }

// Submit is never called on a nil Queue.
func (q *Queue) Submit([]byte, int64) error { panic("directio: no queue on this system") }

// Wait returns 0: nothing is ever queued.
func (q *Queue) Wait() (int, error) { return 0, nil }

// Busy reports false: nothing is ever queued.
func (q *Queue) Busy() bool { return false }

// Close does nothing.
func (q *Queue) Close() {}
