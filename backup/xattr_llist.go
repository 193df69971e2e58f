//go:build linux || darwin

package backup

import (
	"errors"

	"golang.org/x/sys/unix"
)

// llistxattr lists an entry's extended attribute names (llistxattr on
// Linux, listxattr with XATTR_NOFOLLOW on macOS). A file system without
// extended attributes has none.
func llistxattr(name string) ([]string, error) {
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
	return parseXattrList(buf[:size]), nil
}
