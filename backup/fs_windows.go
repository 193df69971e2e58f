package backup

import (
	"errors"
	"io/fs"
	"os"
)

// OSFS is the FS of the operating system. On Windows it reads no extended
// attributes: Windows has none of the POSIX kind (platformLacks).
type OSFS struct{}

var _ FS = OSFS{}

// ErrNoXattr is how FS.GetXattr fails for an attribute that is not there.
var ErrNoXattr = errors.New("no such extended attribute")

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

// OpenFile opens name read-only.
func (OSFS) OpenFile(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ListXattrs lists none.
func (OSFS) ListXattrs(string) ([]string, error) { return nil, nil }

// GetXattr fails with ErrNoXattr: there are none to read.
func (OSFS) GetXattr(string, string) ([]byte, error) { return nil, ErrNoXattr }
