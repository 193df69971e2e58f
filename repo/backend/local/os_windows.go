package local

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/windows"
)

// errLocked is tryLock's answer when another holder has the lock.
var errLocked = errors.New("locked by another process")

// errReparsePoint refuses a symlink or junction where a repository file
// should be.
var errReparsePoint = errors.New("a symlink or junction: not followed")

// shareAll lets other handles read, write, rename and delete the file while
// it is open: a lock object is renamed into place and removed while its
// owner holds it open, and a cached pack is replaced or removed.
const shareAll = windows.FILE_SHARE_READ | windows.FILE_SHARE_WRITE | windows.FILE_SHARE_DELETE

// openNoFollow opens name for reading without following a symlink or
// junction (FILE_FLAG_OPEN_REPARSE_POINT), and refuses one.
func openNoFollow(name string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, shareAll, nil, windows.OPEN_EXISTING,
		windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		windows.CloseHandle(h)
		return nil, &os.PathError{Op: "open", Path: name, Err: errReparsePoint}
	}
	return os.NewFile(uintptr(h), name), nil
}

// createExclusive creates a new file for writing; it fails if name
// exists. It shares deletion, so that the file can be renamed into place
// while it is open (SaveHeld).
func createExclusive(name string) (*os.File, error) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, err
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ|windows.GENERIC_WRITE, shareAll, nil, windows.CREATE_NEW,
		windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(h), name), nil
}

// lockOffsetHigh places the locked byte far beyond the end of any lock
// object: a byte-range lock on Windows also stops other processes from
// reading the range, and the object's content must stay readable.
const lockOffsetHigh = 0x7fffffff

// tryLock takes an exclusive lock (LockFileEx) on f without waiting:
// errLocked when another open file holds it. Windows drops it when its
// holder dies.
func tryLock(f *os.File) error {
	ol := windows.Overlapped{OffsetHigh: lockOffsetHigh}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return errLocked
	}
	return err
}

// unlockFile drops tryLock's lock.
func unlockFile(f *os.File) error {
	ol := windows.Overlapped{OffsetHigh: lockOffsetHigh}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

// syncDir does nothing on Windows: a folder cannot be flushed there, and
// NTFS journals its entries (a rename, a removal) itself.
func syncDir(string) error { return nil }

// LockFolder creates path if missing and holds a named mutex of this
// machine, named after the folder's path, until unlock is called, so
// that processes that may create a repository there at the same time do
// so one after another. It waits for the mutex. Windows has no lock on a
// folder, and a lock file inside it would make it not empty.
func LockFolder(path string) (unlock func(), err error) {
	if err := os.MkdirAll(path, dirMode); err != nil {
		return nil, fmt.Errorf("create repository folder: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("lock repository folder: %w", err)
	}
	name, err := windows.UTF16PtrFromString(folderMutexName(abs))
	if err != nil {
		return nil, fmt.Errorf("lock repository folder: %w", err)
	}
	// A mutex belongs to the thread that took it: one thread takes it,
	// holds it and releases it.
	taken := make(chan error)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		h, err := windows.CreateMutex(nil, false, name)
		if err != nil {
			taken <- err
			return
		}
		defer windows.CloseHandle(h)
		// WAIT_ABANDONED: the holder died; the mutex is this thread's.
		if ev, err := windows.WaitForSingleObject(h, windows.INFINITE); err != nil || ev != windows.WAIT_OBJECT_0 && ev != windows.WAIT_ABANDONED {
			taken <- fmt.Errorf("wait for the folder's mutex: event %d: %v", ev, err)
			return
		}
		taken <- nil
		<-release
		_ = windows.ReleaseMutex(h)
	}()
	if err := <-taken; err != nil {
		return nil, fmt.Errorf("lock repository folder: %w", err)
	}
	return func() { close(release) }, nil
}

// folderMutexName names the mutex of a folder: the same for every spelling
// of its absolute path that differs only in case, as Windows paths do.
func folderMutexName(abs string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(filepath.Clean(abs))))
	return `Global\nightjar-folder-` + hex.EncodeToString(sum[:16])
}
