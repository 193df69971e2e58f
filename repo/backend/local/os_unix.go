//go:build unix

package local

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// errLocked is tryLock's answer when another holder has the lock.
var errLocked = errors.New("locked by another process")

// openNoFollow opens name for reading, refusing a symlink (O_NOFOLLOW):
// a read never follows a link out of the repository.
func openNoFollow(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW, 0)
}

// createExclusive creates a new file for writing; it fails if name exists.
func createExclusive(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
}

// tryLock takes an exclusive flock on f without waiting: errLocked when
// another open file holds one. The kernel drops it when its holder dies.
func tryLock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

// unlockFile drops tryLock's lock.
func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// syncDir makes the entries of dir (a rename into it, a removal) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// LockFolder creates path if missing and holds an exclusive flock on the
// folder itself until unlock is called, so that processes that may create
// a repository there at the same time do so one after another. It waits
// for the lock.
func LockFolder(path string) (unlock func(), err error) {
	if err := os.MkdirAll(path, dirMode); err != nil {
		return nil, fmt.Errorf("create repository folder: %w", err)
	}
	d, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lock repository folder: %w", err)
	}
	if err := unix.Flock(int(d.Fd()), unix.LOCK_EX); err != nil {
		d.Close()
		return nil, fmt.Errorf("lock repository folder: %w", err)
	}
	return func() {
		_ = unix.Flock(int(d.Fd()), unix.LOCK_UN)
		d.Close()
	}, nil
}
