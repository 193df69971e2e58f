// Package directio writes files past the page cache (O_DIRECT on Linux,
// F_NOCACHE on macOS): restore for big files, the local backend for packs.
// Data written that way goes from the caller's buffer to the disk, so it
// neither fills the page cache with bytes nobody reads soon nor pays for
// fresh page-cache pages, which on some virtual machines cost more than
// the copy.
//
// Direct writes need the file offset, the length and the buffer's address
// aligned (Align). Writer, which both use, stages runs of bytes in an
// aligned buffer and writes their whole blocks through the descriptor
// OpenSecond returns and the partial blocks at the ends through the file's
// ordinary one, falling back to the ordinary one when the file system
// refuses. On other systems (FreeBSD, Windows), OpenSecond returns nil and
// everything goes through the page cache.
//
// On Linux a Writer can also write its whole blocks asynchronously through
// a Queue (Overlap), so that the goroutine writing does not hold a core
// while the disk writes; the local backend's data packs do.
package directio
