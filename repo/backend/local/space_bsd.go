//go:build darwin || freebsd

package local

import "golang.org/x/sys/unix"

// blockUnit is the size of the blocks statfs counts: on the BSDs and
// macOS, Bsize (the fundamental block size) is that unit.
func blockUnit(st *unix.Statfs_t) int64 { return int64(st.Bsize) }
