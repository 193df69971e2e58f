package restore

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenDirect opens f, an *os.File just created as name, a second time and
// turns its cache off (F_NOCACHE), macOS's nearest to O_DIRECT: the whole
// blocks written through it bypass the unified buffer cache. It returns
// nil, and the file is written through the cache alone, when name no
// longer leads to f's file or the descriptor refuses F_NOCACHE.
func (OS) OpenDirect(name string, f File) File {
	osf, ok := f.(*os.File)
	if !ok {
		return nil
	}
	d, err := os.OpenFile(name, os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	var a, b unix.Stat_t
	if unix.Fstat(int(osf.Fd()), &a) != nil || unix.Fstat(int(d.Fd()), &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		d.Close()
		return nil
	}
	if _, err := unix.FcntlInt(d.Fd(), unix.F_NOCACHE, 1); err != nil {
		d.Close()
		return nil
	}
	return d
}

// Mknod makes a FIFO or a device node.
func (OS) Mknod(name string, mode uint32, dev int) error { return unix.Mknod(name, mode, dev) }

// xattrError is err: macOS sets an attribute of any name (Linux's
// "user.", "security." and "trusted." names included, as plain names).
func xattrError(_ string, err error) error { return err }
