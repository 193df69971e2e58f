// Package chunker splits a byte stream into content-defined chunks with
// FastCDC: a gear rolling hash, a minimum size that is skipped without
// hashing, normalized chunking with a stricter mask below the average size and
// a looser one above it, and a hard cut at the maximum size.
//
// The gear table is derived from a per-repository secret key (see NewGear), so
// that chunk boundaries, and therefore chunk sizes, do not reveal which known
// files a repository holds. The gear derivation, the masks (see Params) and
// the cut rule (see Chunker) are part of the repository format: the same key,
// parameters and input must yield the same chunks forever, or deduplication
// against existing snapshots is silently lost. Changing any of them needs a
// new format version; the golden tests in this package guard them.
//
// LocalRule cuts small structured data (big trees) with a simpler rule that
// looks only at the bytes before a cut, from its own gear table (NewGearFor).
//
// The package must never allocate per chunk, hold more than one buffer of
// the maximum chunk size (Next's; NextInto's callers bring theirs) and the
// bytes of one read (64 KiB) carried to the next chunk, or know anything
// of hashing, packing or encrypting the chunks it returns: it only finds
// boundaries.
package chunker
