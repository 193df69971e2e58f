//go:build linux || darwin || freebsd

package local

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
)

// Space returns the bytes free for an unprivileged user and the size of
// the file system that holds the repository.
func (b *Backend) Space(ctx context.Context) (free, total int64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(b.root, &st); err != nil {
		return 0, 0, fmt.Errorf("read free space of %s: %w", b.root, err)
	}
	unit := blockUnit(&st)
	return int64(st.Bavail) * unit, int64(st.Blocks) * unit, nil
}
