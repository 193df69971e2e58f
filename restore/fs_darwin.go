package restore

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/nightjar-backup/nightjar/directio"
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
	if d := directio.OpenSecond(name, osf); d != nil {
		return d
	}
	return nil
}

// Mknod makes a FIFO or a device node.
func (OS) Mknod(name string, mode uint32, dev int) error { return unix.Mknod(name, mode, dev) }

// xattrError is err: macOS sets an attribute of any name (Linux's
// "user.", "security." and "trusted." names included, as plain names).
func xattrError(_ string, err error) error { return err }
