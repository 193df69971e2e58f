package restore

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// Mknod makes a FIFO or a device node.
func (OS) Mknod(root, name string, mode uint32, dev int) error {
	return at("", root, name, func(dir int, base string) error {
		return unix.Mknodat(dir, base, mode, uint64(dev))
	})
}

// xattrError turns the refusal of an attribute whose name is in no
// FreeBSD namespace into a Lack. FreeBSD has two namespaces, "user" and
// "system", which names written as "user.NAME" and "system.NAME" go into;
// Linux's "security." and "trusted." names have nowhere to go.
func xattrError(attr string, err error) error {
	if errors.Is(err, unix.ENOATTR) && !strings.HasPrefix(attr, "user.") && !strings.HasPrefix(attr, "system.") {
		return &lackError{what: "extended attributes outside the user and system namespaces",
			reason: "FreeBSD has only those two namespaces (" + attr + " was the first met)"}
	}
	return err
}

// setxattrAt sets an attribute of base in the folder dir through a
// descriptor of base opened without following a symlink (O_NONBLOCK keeps
// a FIFO from blocking the open). A symlink's own attributes are not set:
// FreeBSD names them only by path (ELOOP is answered).
func setxattrAt(dir int, base, attr string, value []byte) error {
	fd, err := unix.Openat(dir, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsetxattr(fd, attr, value, 0)
}
