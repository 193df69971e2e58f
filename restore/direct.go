package restore

import (
	"os"
	"path/filepath"

	"github.com/nightjar-backup/nightjar/directio"
)

// Big files are restored with direct I/O where the platform has it
// (O_DIRECT on Linux, F_NOCACHE on macOS; FreeBSD and Windows write through
// the cache: OS.OpenDirect in fs_*.go): their data goes from the worker's
// buffer to the disk without passing through the page cache.
// A restore then does not fill the page cache with data that nobody reads
// soon, pushing out what the machine's other work needs, and it does not
// pay for putting every page there: in a profile of a restore of the
// benchmark set, copying into fresh page-cache pages was 26% of all CPU
// time (docs/PERFORMANCE.md). Small files, most of a source tree, keep
// buffered writes: a synchronous trip to the disk for each would cost more
// than the page cache does.
//
// Direct I/O needs the file offset, the length and the buffer's address
// aligned: a part's chunks are gathered into the worker's aligned staging
// buffer by a directio.Writer, which writes the whole aligned blocks of
// each run directly and the partial blocks at its ends (parts start and
// end at content-defined offsets) through the file's ordinary descriptor.

// directMinSize is the smallest file restored with direct I/O.
const directMinSize = 16 << 20

// stagingSize is how much one direct write carries at most.
const stagingSize = 4 << 20

// stagingBuffer is a file worker's aligned buffer for direct writes,
// allocated when the worker first meets a big file.
type stagingBuffer struct{ buf []byte }

func (s *stagingBuffer) get() []byte {
	if s.buf == nil {
		s.buf = directio.AlignedBuffer(stagingSize)
	}
	return s.buf
}

// OpenDirect opens f, just created as root/name, a second time for writes
// past the cache: on Linux through /proc/self/fd with O_DIRECT
// (fdFile.openDirect), which reaches f's own inode whatever name holds; on
// macOS by name with F_NOCACHE (directio.OpenSecond, which checks that it
// opened f's own file; opening writes nothing). It returns nil, and the
// file is written through the cache alone, elsewhere (FreeBSD's O_DIRECT
// is a hint its file systems treat differently, ZFS ignores it; Windows),
// when name no longer leads to f's file, or when the file system refuses.
func (OS) OpenDirect(root, name string, f File) File {
	if r, ok := f.(interface{ openDirect() File }); ok {
		// Linux's own File opens its inode again by its descriptor.
		return r.openDirect()
	}
	osf, ok := f.(*os.File)
	if !ok {
		return nil
	}
	if d := directio.OpenSecond(filepath.Join(root, filepath.FromSlash(name)), osf); d != nil {
		return d
	}
	return nil
}
