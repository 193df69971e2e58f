package restore

import (
	"os"

	"golang.org/x/sys/unix"
)

// Mknod makes a FIFO or a device node. macOS's mknodat is not in the
// system calls Go reaches, so the node is made by its full name: of all
// the restore makes, only FIFOs and device nodes can be led outside the
// target by a symlink swapped in while it runs (docs/ARCHITECTURE.md).
func (OS) Mknod(root, name string, mode uint32, dev int) error {
	if _, _, err := splitName(name); err != nil {
		return &os.PathError{Op: "mknod", Path: root + "/" + name, Err: err}
	}
	return unix.Mknod(root+"/"+name, mode, dev)
}

// xattrError is err: macOS sets an attribute of any name (Linux's
// "user.", "security." and "trusted." names included, as plain names).
func xattrError(_ string, err error) error { return err }

// setxattrAt sets an attribute of base in the folder dir without
// following a symlink: through a descriptor of base (O_SYMLINK opens a
// symlink itself; O_NONBLOCK keeps a FIFO from blocking the open).
func setxattrAt(dir int, base, attr string, value []byte) error {
	fd, err := unix.Openat(dir, base, unix.O_RDONLY|unix.O_SYMLINK|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsetxattr(fd, attr, value, 0)
}
