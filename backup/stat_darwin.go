package backup

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoXattr is how FS.GetXattr fails for an attribute that is not there
// (removed since it was listed): ENOATTR on macOS.
var ErrNoXattr error = unix.ENOATTR

// statOf reads macOS's stat: times in Mtimespec and Ctimespec, a 32-bit
// device number and a 16-bit link count.
func statOf(st *syscall.Stat_t) unixStat {
	return unixStat{
		mode: uint32(st.Mode), uid: st.Uid, gid: st.Gid, size: st.Size,
		mtime: time.Unix(int64(st.Mtimespec.Sec), int64(st.Mtimespec.Nsec)),
		ctime: time.Unix(int64(st.Ctimespec.Sec), int64(st.Ctimespec.Nsec)),
		ino:   st.Ino, dev: uint64(uint32(st.Dev)), nlink: uint64(st.Nlink), rdev: uint64(uint32(st.Rdev)),
	}
}

// platformLacks is what a backup on macOS cannot record: nothing that
// the tree format has a field for (file flags are not recorded; see the
// README's Platforms section).
var platformLacks []Lack

// noatimeFlag is 0: macOS has no O_NOATIME (its file systems update access
// times lazily, if at all).
const noatimeFlag = 0

// listXattrNames lists an entry's extended attribute names as macOS's
// listxattr(XATTR_NOFOLLOW) gives them: NUL-terminated, as on Linux.
func listXattrNames(name string) ([]string, error) { return llistxattr(name) }
