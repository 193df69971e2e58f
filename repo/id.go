package repo

import (
	"encoding/hex"
	"fmt"
)

// ID names a blob, pack or index: 32 bytes, written as 64 hex digits.
// Blob IDs are keyed BLAKE3 of the blob's plaintext; pack and index IDs are
// plain BLAKE3 of the stored file.
type ID [32]byte

func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Short returns the first 8 hex digits, for display.
func (id ID) Short() string { return hex.EncodeToString(id[:4]) }

// MarshalText encodes id as hex.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText decodes 64 hex digits.
func (id *ID) UnmarshalText(b []byte) error {
	parsed, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = parsed
	return nil
}

// ParseID decodes 64 hex digits.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 64 {
		return id, fmt.Errorf("invalid id %q: want 64 hex digits", s)
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, fmt.Errorf("invalid id %q: want 64 hex digits", s)
	}
	return id, nil
}
