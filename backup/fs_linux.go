package backup

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// OSFS is the FS of the operating system: files are opened with O_NOATIME
// where the caller may (it owns the file), so that a backup does not
// change their access times.
type OSFS struct{}

var _ FS = OSFS{}

// Lstat is os.Lstat.
func (OSFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat(name) }

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

// OpenFile opens name read-only, with O_NOATIME when that is allowed.
func (OSFS) OpenFile(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|unix.O_NOATIME, 0)
	if err != nil && errors.Is(err, fs.ErrPermission) {
		// O_NOATIME needs ownership of the file; read it without.
		f, err = os.Open(name)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ListXattrs lists an entry's extended attribute names (llistxattr).
func (OSFS) ListXattrs(name string) ([]string, error) {
	size, err := unix.Llistxattr(name, nil)
	if errors.Is(err, unix.ENOTSUP) || size == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	size, err = unix.Llistxattr(name, buf)
	if err != nil {
		return nil, err
	}
	var names []string
	start := 0
	for i := 0; i < size; i++ {
		if buf[i] != 0 {
			continue
		}
		if i > start {
			names = append(names, string(buf[start:i]))
		}
		start = i + 1
	}
	return names, nil
}

// GetXattr reads one extended attribute (lgetxattr).
func (OSFS) GetXattr(name, attr string) ([]byte, error) {
	size, err := unix.Lgetxattr(name, attr, nil)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := unix.Lgetxattr(name, attr, buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
