package local

import "golang.org/x/sys/unix"

// blockUnit is the size of the blocks statfs counts on Linux: the
// fragment size, as df uses it, which may be smaller than the preferred
// I/O size Bsize; Bsize only when a file system leaves Frsize zero.
func blockUnit(st *unix.Statfs_t) int64 {
	if st.Frsize > 0 {
		return int64(st.Frsize)
	}
	return int64(st.Bsize)
}
