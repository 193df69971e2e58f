package directio

import (
	"errors"
	"io"
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

// writeAt writes data at off: through direct when it is not nil, data
// being whole blocks at an aligned offset, else through f. When the file
// system refuses the direct write (it wants another alignment, or no
// direct I/O at all), data goes through f and writeAt reports refused: the
// caller writes through f alone from then on.
func writeAt(f, direct io.WriterAt, data []byte, off int64) (refused bool, err error) {
	if direct != nil {
		_, err = direct.WriteAt(data, off)
		if !errors.Is(err, syscall.EINVAL) {
			return false, err
		}
		refused = true
	}
	_, err = f.WriteAt(data, off)
	return refused, err
}
