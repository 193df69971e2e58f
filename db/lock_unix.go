//go:build unix

package db

import (
	"errors"
	"os"
	"syscall"
)

// errLockHeld is tryLockFile's answer while another holder has the lock
// (or a signal interrupted the call): try again.
var errLockHeld = errors.New("lock held")

// tryLockFile takes an exclusive flock on f without waiting.
func tryLockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR) {
		return errLockHeld
	}
	return err
}

// unlockFile drops tryLockFile's lock.
func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
