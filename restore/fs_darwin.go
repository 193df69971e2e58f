package restore

import "golang.org/x/sys/unix"

// Mknod makes a FIFO or a device node.
func (OS) Mknod(name string, mode uint32, dev int) error { return unix.Mknod(name, mode, dev) }

// xattrError is err: macOS sets an attribute of any name (Linux's
// "user.", "security." and "trusted." names included, as plain names).
func xattrError(_ string, err error) error { return err }
