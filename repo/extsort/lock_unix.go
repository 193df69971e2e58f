//go:build unix

package extsort

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// createLock creates a Sorter's lock file in dir and locks it (flock,
// exclusive). A Sweep that opened the new file before it was locked may
// lock and remove it first: then the file locked is no longer the one at
// its name, and another is made. On a file system without flock the
// file is kept unlocked: a Sweep there fails to lock it too, and leaves
// the runs.
func createLock(dir string) (*os.File, error) {
	const attempts = 10
	for range attempts {
		f, err := os.CreateTemp(dir, namePrefix+"*"+lockSuffix)
		if err != nil {
			return nil, err
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
			return f, nil
		}
		if err == nil && stillNamed(f) {
			return f, nil
		}
		f.Close() // a Sweep holds it, or removed it
	}
	return nil, fmt.Errorf("lock files in %s were removed by sweeps %d times in a row", dir, attempts)
}

// stillNamed reports whether f is still the file at its name.
func stillNamed(f *os.File) bool {
	opened, err := f.Stat()
	if err != nil {
		return false
	}
	named, err := os.Stat(f.Name())
	return err == nil && os.SameFile(opened, named)
}

// releaseLock removes a Sorter's lock file, then closes it, which
// releases the lock.
func releaseLock(f *os.File) error {
	err := os.Remove(f.Name())
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("remove lock of run files: %w", err)
	}
	return nil
}

// claimLock tries to lock the lock file at path without waiting. When it
// can, the Sorter's process has ended, and release removes the file and
// lets it go.
func claimLock(path string) (state lockState, release func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return lockGone, nil, nil
	case errors.Is(err, fs.ErrPermission):
		return lockLive, nil, nil // another user's: theirs to sweep
	case err != nil:
		return 0, nil, fmt.Errorf("open lock of run files: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return lockLive, nil, nil
		}
		return 0, nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return lockClaimed, func() error { return releaseLock(f) }, nil
}
