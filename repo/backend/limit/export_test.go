package limit

import (
	"context"

	"github.com/nightjar-backup/nightjar/repo"
)

// Waiter is a budget a test counts.
type Waiter interface {
	WaitN(ctx context.Context, n int) error
}

// WrapCounted is Wrap with the given budgets and bursts instead of real
// limiters; a nil waiter is no cap.
func WrapCounted(be repo.Backend, up, down Waiter, burst int) repo.Backend {
	b := &Backend{Backend: be}
	if up != nil {
		b.up = &budget{w: up, burst: burst}
	}
	if down != nil {
		b.down = &budget{w: down, burst: burst}
	}
	return b
}
