//go:build windows

package extsort

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// On Windows a file that is open cannot be deleted (Go opens files
// without FILE_SHARE_DELETE), so a Sorter's lock file, open from its
// creation until its Sorter ends, is its lock: a Sweep that can delete it
// has found a Sorter whose process ended.

// createLock creates a Sorter's lock file in dir and keeps it open.
func createLock(dir string) (*os.File, error) {
	return os.CreateTemp(dir, namePrefix+"*"+lockSuffix)
}

// releaseLock closes a Sorter's lock file, then removes it: an open file
// cannot be removed.
func releaseLock(f *os.File) error {
	err := f.Close()
	if rerr := os.Remove(f.Name()); err == nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("remove lock of run files: %w", err)
	}
	return nil
}

// claimLock deletes the lock file at path: when it can, the file was not
// open, and the Sorter's process has ended; when it cannot, it is left.
func claimLock(path string) (state lockState, release func() error, err error) {
	switch err := os.Remove(path); {
	case err == nil:
		return lockClaimed, func() error { return nil }, nil
	case errors.Is(err, fs.ErrNotExist):
		return lockGone, nil, nil
	default:
		return lockLive, nil, nil
	}
}

// ownedByUs is true: each user has a temporary folder of their own.
func ownedByUs(fs.FileInfo) bool { return true }
