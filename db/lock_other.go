//go:build !(unix || windows)

package db

import (
	"context"
	"database/sql"
	"time"
)

// fileLock does not lock on systems without flock(2) or LockFileEx: two processes that
// migrate the same new database at once may then fail, and the second
// succeeds when run again.
type fileLock struct {
	path    string
	timeout time.Duration
}

func (l *fileLock) Lock(context.Context, *sql.DB) error   { return nil }
func (l *fileLock) Unlock(context.Context, *sql.DB) error { return nil }
