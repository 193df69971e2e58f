//go:build darwin || freebsd

package restore

import "golang.org/x/sys/unix"

// dirOpenFlags open a folder on the way of OpenBeneath: macOS has no
// O_PATH, and FreeBSD's is not in every release nightjar runs on, so the
// folder is opened for reading (restore made it readable to its owner).
const dirOpenFlags = unix.O_RDONLY

// Chmod sets the permission bits without following a symlink: a symlink
// has a mode of its own on the BSDs, which is what changes then, never
// that of what it points to (restore sets none on symlinks).
func (OS) Chmod(name string, mode uint32) error {
	return unix.Fchmodat(unix.AT_FDCWD, name, mode, unix.AT_SYMLINK_NOFOLLOW)
}
