//go:build darwin || freebsd

package restore

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirOpenFlags open a folder on the way to a name: macOS has no O_PATH,
// and FreeBSD's is not in every release nightjar runs on, so the folder is
// opened for reading (restore made it readable to its owner).
const dirOpenFlags = unix.O_RDONLY

// openDirBeneath opens dir below the folder rootFD one element at a time,
// with O_NOFOLLOW|O_DIRECTORY each (these systems have no openat2).
func openDirBeneath(rootFD int, dir string) (int, error) { return walkBeneath(rootFD, dir) }

// Chmod sets the permission bits without following a symlink: a symlink
// has a mode of its own on the BSDs, which is what changes then, never
// that of what it points to (restore sets none on symlinks).
func (OS) Chmod(root, name string, mode uint32) error {
	return at("", root, name, func(dir int, base string) error {
		return unix.Fchmodat(dir, base, mode, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// CreateExclusive creates a new file, never through a symlink.
func (OS) CreateExclusive(root, name string) (File, error) {
	fd, err := openExclusive(root, name)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), filepath.Join(root, name)), nil
}
