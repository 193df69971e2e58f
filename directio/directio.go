package directio

import (
	"errors"
	"syscall"
	"unsafe"
)

// Align is the alignment direct writes keep: a page, which is also the
// block size of the usual Linux file systems. A file system that needs
// more refuses the write (Refused).
const Align = 4096

// AlignedBuffer returns size bytes (a multiple of Align) whose address is
// aligned.
func AlignedBuffer(size int) []byte {
	raw := make([]byte, size+Align)
	skip := int((Align - uintptr(unsafe.Pointer(&raw[0]))%Align) % Align)
	return raw[skip : skip+size : skip+size]
}

// Refused reports whether a direct write failed because the file system
// wants another alignment, or no direct I/O at all: the caller then writes
// through the page cache.
func Refused(err error) bool { return errors.Is(err, syscall.EINVAL) }
