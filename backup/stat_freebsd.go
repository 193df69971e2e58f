package backup

import (
	"errors"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrNoXattr is how FS.GetXattr fails for an attribute that is not there
// (removed since it was listed): ENOATTR on FreeBSD.
var ErrNoXattr error = unix.ENOATTR

// statOf reads FreeBSD's stat: times in Mtimespec and Ctimespec.
func statOf(st *syscall.Stat_t) unixStat {
	return unixStat{
		mode: uint32(st.Mode), uid: st.Uid, gid: st.Gid, size: st.Size,
		mtime: time.Unix(int64(st.Mtimespec.Sec), int64(st.Mtimespec.Nsec)),
		ctime: time.Unix(int64(st.Ctimespec.Sec), int64(st.Ctimespec.Nsec)),
		ino:   st.Ino, dev: st.Dev, nlink: st.Nlink, rdev: st.Rdev,
	}
}

// platformLacks is what a backup on FreeBSD cannot record: nothing that
// the tree format has a field for (file flags are not recorded; see the
// README's Platforms section).
var platformLacks []Lack

// noatimeFlag is 0: FreeBSD has no O_NOATIME (noatime is a mount option).
const noatimeFlag = 0

// listXattrNames lists an entry's extended attributes of the user and the
// system namespace (extattr_list_link), named as Linux names them:
// "user.NAME", "system.NAME". The system namespace needs root: without it
// only the user namespace is read.
func listXattrNames(name string) ([]string, error) {
	var names []string
	for _, ns := range []struct {
		id     int
		prefix string
	}{{unix.EXTATTR_NAMESPACE_USER, "user."}, {unix.EXTATTR_NAMESPACE_SYSTEM, "system."}} {
		size, err := unix.LlistxattrNS(name, ns.id, nil)
		if ns.id == unix.EXTATTR_NAMESPACE_SYSTEM && errors.Is(err, unix.EPERM) {
			continue
		}
		if errors.Is(err, unix.EOPNOTSUPP) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if size == 0 {
			continue
		}
		buf := make([]byte, size)
		size, err = unix.LlistxattrNS(name, ns.id, buf)
		if err != nil {
			return nil, err
		}
		names = append(names, parseExtattrList(buf[:size], ns.prefix)...)
	}
	return names, nil
}
