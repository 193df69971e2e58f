//go:build linux || darwin || freebsd

package backup

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// OpenFile opens name read-only, with O_NOATIME when the platform has it
// and that is allowed.
func (OSFS) OpenFile(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|noatimeFlag, 0)
	if err != nil && noatimeFlag != 0 && errors.Is(err, fs.ErrPermission) {
		// O_NOATIME needs ownership of the file; read it without.
		f, err = os.Open(name)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ListXattrs lists an entry's extended attribute names, without following
// a symlink.
func (OSFS) ListXattrs(name string) ([]string, error) { return listXattrNames(name) }

// GetXattr reads one extended attribute (lgetxattr; on FreeBSD
// extattr_get_link in the namespace the name starts with).
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
