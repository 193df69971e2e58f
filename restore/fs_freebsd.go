package restore

import (
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// Mknod makes a FIFO or a device node.
func (OS) Mknod(name string, mode uint32, dev int) error {
	return unix.Mknod(name, mode, uint64(dev))
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
