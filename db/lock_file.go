//go:build unix || windows

package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"
)

// fileLock serialises migrations between processes (and between the DBs
// of one process) with an exclusive lock (flock(2); LockFileEx on
// Windows) on a file beside the database, so that two processes opening a
// new database at once do not both apply the same migration. The kernel
// drops the lock when its holder dies; the file itself is left in place (removing a lock file
// races with its next user).
type fileLock struct {
	path    string
	timeout time.Duration
	f       *os.File
}

func (l *fileLock) Lock(ctx context.Context, _ *sql.DB) error {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	deadline := time.Now().Add(l.timeout)
	for {
		err := tryLockFile(f)
		if err == nil {
			l.f = f
			return nil
		}
		if !errors.Is(err, errLockHeld) {
			f.Close()
			return fmt.Errorf("migration lock %s: %w", l.path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return fmt.Errorf("migration lock %s: still held by another process after %s", l.path, l.timeout)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return fmt.Errorf("migration lock %s: %w", l.path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (l *fileLock) Unlock(context.Context, *sql.DB) error {
	if l.f == nil {
		return nil
	}
	err := unlockFile(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}
