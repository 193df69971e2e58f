//go:build unix

package extsort

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// createLock creates a Sorter's lock file in dir and locks it (flock,
// exclusive). A Sweep that opened the new file before it was locked may
// lock and remove it first: then the file locked is no longer the one at
// its name, and another is made. On a file system without flock the
// file is kept unlocked: a Sweep there fails to lock it too, and leaves
// the runs. Any other failure to lock (ENOLCK: the kernel's lock table
// is full) fails: a Sweep could take the lock and remove live runs.
func createLock(dir string) (*os.File, error) {
	const attempts = 10
	for range attempts {
		f, err := os.CreateTemp(dir, namePrefix+"*"+lockSuffix)
		if err != nil {
			return nil, err
		}
		err = flock(f)
		if noFlock(err) {
			return f, nil
		}
		if err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			os.Remove(f.Name())
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		if err == nil && stillNamed(f) {
			return f, nil
		}
		f.Close() // a Sweep holds it, or removed it
	}
	return nil, fmt.Errorf("lock files in %s were removed by sweeps %d times in a row", dir, attempts)
}

// flock locks f exclusively without waiting; tests replace it to fail
// as the kernel may.
var flock = func(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// noFlock reports whether err says the file system has no flock.
func noFlock(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) ||
		errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL)
}

// ownedByUs reports whether this process's user owns the file fi
// describes.
func ownedByUs(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
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
	// O_NOFOLLOW: a link put in the place of a lock file (the folder is
	// shared) must not lead to another file.
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return lockGone, nil, nil
	case err != nil:
		return 0, nil, fmt.Errorf("open lock of run files: %w", err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return lockLive, nil, nil
		}
		return 0, nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return lockClaimed, func() error { return releaseLock(f) }, nil
}
