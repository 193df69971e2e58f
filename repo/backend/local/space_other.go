//go:build !(linux || darwin || freebsd || windows)

package local

import (
	"context"
	"errors"
)

// Space is not known on this system: it fails with errors.ErrUnsupported.
func (b *Backend) Space(ctx context.Context) (free, total int64, err error) {
	return 0, 0, errors.ErrUnsupported
}
