//go:build !unix && !windows

package extsort

import (
	"io/fs"
	"os"
)

// Where nightjar is not built for (Plan 9, WebAssembly), nothing tells a
// Sorter that runs from one that ended: Sweep leaves every file.

// createLock creates a Sorter's lock file in dir.
func createLock(dir string) (*os.File, error) {
	return os.CreateTemp(dir, namePrefix+"*"+lockSuffix)
}

// releaseLock removes a Sorter's lock file.
func releaseLock(f *os.File) error {
	f.Close()
	return os.Remove(f.Name())
}

// claimLock finds every Sorter live.
func claimLock(string) (lockState, func() error, error) {
	return lockLive, nil, nil
}

// ownedByUs is true: nothing here tells the owner of a file.
func ownedByUs(fs.FileInfo) bool { return true }
