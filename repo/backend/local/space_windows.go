package local

import (
	"context"
	"fmt"

	"golang.org/x/sys/windows"
)

// Space returns the bytes free for this user (quotas counted) and the
// size of the volume that holds the repository (GetDiskFreeSpaceEx).
func (b *Backend) Space(ctx context.Context) (free, total int64, err error) {
	p, err := windows.UTF16PtrFromString(b.root)
	if err != nil {
		return 0, 0, fmt.Errorf("read free space of %s: %w", b.root, err)
	}
	var avail, size, allFree uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &size, &allFree); err != nil {
		return 0, 0, fmt.Errorf("read free space of %s: %w", b.root, err)
	}
	return int64(avail), int64(size), nil
}
