package repo

import (
	"encoding/binary"
	"fmt"
)

// BlobType tells what a blob holds.
type BlobType uint8

// Blob types.
const (
	DataBlob BlobType = 1 // a chunk of file content
	TreeBlob BlobType = 2 // a directory listing (JSON Tree)
	// InventoryBlob was a part of a snapshot's sorted list of the blobs it
	// refers to. Nothing writes it any more (see docs/FORMAT.md); packs of
	// older repositories may still hold some, which are read as valid
	// blobs that nothing refers to.
	InventoryBlob BlobType = 3
)

func (t BlobType) String() string {
	switch t {
	case DataBlob:
		return "data"
	case TreeBlob:
		return "tree"
	case InventoryBlob:
		return "inventory"
	}
	return fmt.Sprintf("blobtype(%d)", uint8(t))
}

func (t BlobType) valid() bool { return t >= DataBlob && t <= InventoryBlob }

// Compression of a blob's plaintext before sealing.
const (
	compressNone uint8 = 0
	compressZstd uint8 = 1
)

// PackedBlob locates one blob inside a pack.
type PackedBlob struct {
	ID          ID
	Type        BlobType
	Compression uint8
	Offset      uint32 // of the sealed blob in the pack
	Length      uint32 // of the sealed blob
	RawLength   uint32 // of the plaintext after decompression
}

// A pack is the sealed blobs one after another, then the sealed pack
// header, then an 8-byte trailer: the sealed header's length (uint32 LE)
// and the magic "NJP" followed by the version byte 1. The header lists each
// blob in order as type (1 byte), compression (1), sealed length (uint32 LE),
// raw length (uint32 LE) and ID (32), after a uint32 LE count; offsets follow
// from the lengths. Each blob is sealed with its ID as associated data, the
// header with "nightjar pack 1". The pack's name is the BLAKE3-256 of the
// whole file.

const (
	packTrailerSize = 8
	packEntrySize   = 1 + 1 + 4 + 4 + 32
	packVersion     = 1
	// maxPackHeaderEntries bounds what a reader accepts from a header.
	maxPackHeaderEntries = 1 << 22
)

var packHeaderAD = []byte("nightjar pack 1")

// placeWhole reports whether a blob ending at end lies whole in a pack
// file of packSize bytes, before its trailer (false for a missing pack,
// size -1). Prune, healing and check share it, so that a pack cut inside
// its trailer is cut for all three.
func placeWhole(end, packSize int64) bool {
	return end <= packSize-packTrailerSize
}

func encodePackHeader(blobs []PackedBlob) []byte {
	buf := make([]byte, 4, 4+len(blobs)*packEntrySize)
	binary.LittleEndian.PutUint32(buf, uint32(len(blobs)))
	for _, b := range blobs {
		buf = append(buf, byte(b.Type), b.Compression)
		buf = binary.LittleEndian.AppendUint32(buf, b.Length)
		buf = binary.LittleEndian.AppendUint32(buf, b.RawLength)
		buf = append(buf, b.ID[:]...)
	}
	return buf
}

// appendPackTail appends the sealed header and trailer to a pack's blobs.
func appendPackTail(s sealer, pack []byte, blobs []PackedBlob) []byte {
	start := len(pack)
	pack = s.seal(pack, encodePackHeader(blobs), packHeaderAD)
	pack = binary.LittleEndian.AppendUint32(pack, uint32(len(pack)-start))
	return append(pack, 'N', 'J', 'P', packVersion)
}

// parsePackTrailer returns the sealed header's length from the last 8 bytes.
func parsePackTrailer(trailer []byte, packSize int64) (int64, error) {
	if len(trailer) != packTrailerSize || string(trailer[4:7]) != "NJP" {
		return 0, fmt.Errorf("pack trailer: bad magic: %w", ErrIntegrity)
	}
	if trailer[7] != packVersion {
		return 0, fmt.Errorf("pack version %d (this nightjar reads %d): %w", trailer[7], packVersion, ErrUnsupportedVersion)
	}
	n := int64(binary.LittleEndian.Uint32(trailer))
	if n < 4 || n > packSize-packTrailerSize {
		return 0, fmt.Errorf("pack trailer: header length %d out of range: %w", n, ErrIntegrity)
	}
	return n, nil
}

// decodePackHeader opens a sealed pack header; headerOffset is where the
// sealed header starts, which is where the blobs must end.
func decodePackHeader(s sealer, sealed []byte, headerOffset int64) ([]PackedBlob, error) {
	plain, err := s.open(nil, sealed, packHeaderAD)
	if err != nil {
		return nil, fmt.Errorf("pack header: %w", err)
	}
	if len(plain) < 4 {
		return nil, fmt.Errorf("pack header too short: %w", ErrIntegrity)
	}
	n := binary.LittleEndian.Uint32(plain)
	if n > maxPackHeaderEntries || int64(len(plain)-4) != int64(n)*packEntrySize {
		return nil, fmt.Errorf("pack header: %d entries in %d bytes: %w", n, len(plain), ErrIntegrity)
	}
	blobs := make([]PackedBlob, n)
	var offset int64
	p := plain[4:]
	for i := range blobs {
		b := &blobs[i]
		b.Type = BlobType(p[0])
		b.Compression = p[1]
		b.Length = binary.LittleEndian.Uint32(p[2:])
		b.RawLength = binary.LittleEndian.Uint32(p[6:])
		copy(b.ID[:], p[10:42])
		b.Offset = uint32(offset)
		offset += int64(b.Length)
		if !b.Type.valid() || b.Compression > compressZstd || int(b.Length) < s.overhead() {
			return nil, fmt.Errorf("pack header entry %d: bad type, compression or length: %w", i, ErrIntegrity)
		}
		p = p[packEntrySize:]
	}
	if offset != headerOffset {
		return nil, fmt.Errorf("pack header: blobs end at %d, header starts at %d: %w", offset, headerOffset, ErrIntegrity)
	}
	return blobs, nil
}
