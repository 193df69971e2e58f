package directio

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenSecond opens the file called name a second time, for writes that
// skip the cache: macOS has no O_DIRECT, and F_NOCACHE on the second
// descriptor is its equivalent (without alignment rules, so it is never
// refused). It returns nil, and the caller writes through the cache, when
// F_NOCACHE cannot be set or the name no longer leads to f's file.
func OpenSecond(name string, f *os.File) *os.File {
	d, err := os.OpenFile(name, os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Fstat(int(d.Fd()), &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		d.Close()
		return nil
	}
	if _, err := unix.FcntlInt(d.Fd(), unix.F_NOCACHE, 1); err != nil {
		d.Close()
		return nil
	}
	return d
}
