package db

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// errLockHeld is tryLockFile's answer while another holder has the lock:
// try again.
var errLockHeld = errors.New("lock held")

// tryLockFile takes an exclusive lock on the first byte of f (LockFileEx)
// without waiting. Windows drops it when its holder dies.
func tryLockFile(f *os.File) error {
	var ol windows.Overlapped
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errLockHeld
	}
	return err
}

// unlockFile drops tryLockFile's lock.
func unlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
