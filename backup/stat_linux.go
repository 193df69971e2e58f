package backup

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoXattr is how FS.GetXattr fails for an attribute that is not there
// (removed since it was listed): ENODATA on Linux.
var ErrNoXattr error = unix.ENODATA

// statOf reads Linux's stat: times in Mtim and Ctim.
func statOf(st *syscall.Stat_t) unixStat {
	return unixStat{
		mode: st.Mode, uid: st.Uid, gid: st.Gid, size: st.Size,
		mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec),
		ino:   st.Ino, dev: st.Dev, nlink: uint64(st.Nlink), rdev: st.Rdev,
	}
}

// platformLacks is what a backup on Linux cannot record: nothing.
var platformLacks []Lack

// noatimeFlag is the open flag that keeps a file's access time as it is
// (O_NOATIME; only the file's owner, or root, may use it).
const noatimeFlag = unix.O_NOATIME

// listXattrNames lists an entry's extended attribute names as llistxattr
// gives them: NUL-terminated.
func listXattrNames(name string) ([]string, error) { return llistxattr(name) }
