package restore

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// dirOpenFlags open a folder on the way of OpenBeneath: O_PATH needs no
// permission to read it.
const dirOpenFlags = unix.O_PATH

// Mknod makes a FIFO or a device node.
func (OS) Mknod(name string, mode uint32, dev int) error { return unix.Mknod(name, mode, dev) }

// xattrError is err: Linux sets every attribute name it is given or says
// why not.
func xattrError(_ string, err error) error { return err }

// Chmod sets the permission bits without following a symlink; a symlink
// has no mode of its own on Linux, so for one nothing is done. It asks
// fchmodat2 (Linux 6.6) not to follow; that answers EOPNOTSUPP for a
// symlink, and so does an older kernel, which lacks it.
func (OS) Chmod(name string, mode uint32) error {
	err := unix.Fchmodat(unix.AT_FDCWD, name, mode, unix.AT_SYMLINK_NOFOLLOW)
	if err != unix.EOPNOTSUPP {
		return err
	}
	return chmodOpened(name, mode)
}

// chmodOpened sets the permission bits of what name is when it is opened
// without following a symlink (O_PATH|O_NOFOLLOW): through
// /proc/self/fd, which leads to the inode opened whatever the name holds
// by then. It does nothing to a symlink; without /proc it fails.
func chmodOpened(name string, mode uint32) error {
	fd, err := unix.Open(name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return nil
	}
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode); err != nil {
		return fmt.Errorf("through /proc/self/fd: %w", err)
	}
	return nil
}
