package backup

import (
	"io/fs"
	"os"
)

// OSFS is the FS of the operating system. What differs per platform is in
// fs_unix.go and fs_windows.go: on Linux files are opened with O_NOATIME
// where the caller may (it owns the file), so that a backup does not
// change their access times; on Windows no extended attributes are read
// (Windows has none of the POSIX kind: platformLacks).
type OSFS struct{}

var _ FS = OSFS{}

// Lstat is os.Lstat.
func (OSFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

// Stat is os.Stat.
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// Readlink is os.Readlink.
func (OSFS) Readlink(name string) (string, error) { return os.Readlink(name) }

// ReadDirNames lists a directory's names.
func (OSFS) ReadDirNames(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
