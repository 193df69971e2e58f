//go:build !linux

package directio

import "os"

// OpenSecond returns nil: direct writes are only made on Linux.
func OpenSecond(string, *os.File) *os.File { return nil }
