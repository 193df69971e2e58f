package repo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nightjar-backup/nightjar/repo/chunker"
)

// Encryption names stored in the config's header line.
const (
	EncryptionXChaCha = "xchacha20-poly1305"
	EncryptionNone    = "none"
)

// ChunkerParams are the content-defined chunker's sizes in bytes. They are
// fixed when a repository is made: changing them would end deduplication
// against everything already stored.
type ChunkerParams struct {
	Min int `json:"min"`
	Avg int `json:"avg"`
	Max int `json:"max"`
}

// ConfigVersion is the version of the repositories init makes, and the
// newest this code opens: the config's "version", which says what the
// repository's objects may hold (the objects' own header lines keep
// FormatVersion). Version 2 adds split trees (tree list blobs), which a
// reader of version 1 would take for empty directories; repositories of
// version 1 are read and written as before, without splitting trees.
const ConfigVersion = 2

// splitTreesVersion is the first config version whose trees may be split.
const splitTreesVersion = 2

// Config is the repository's config object.
type Config struct {
	Version     int           `json:"version"`
	ID          string        `json:"id"` // 64 hex digits, random, stable for the repository's life
	Created     time.Time     `json:"created"`
	Compression string        `json:"compression"` // "zstd"
	Chunker     ChunkerParams `json:"chunker"`
	PackSize    int           `json:"pack_size"` // target size of packs in bytes
	// InsecureKey holds the blob ID and chunker keys of a repository made
	// with --insecure-no-encryption, which has no key files.
	InsecureKey *MasterKey `json:"insecure_key,omitempty"`
}

// DefaultPackSize is the target size of a pack in a new repository: large
// enough that a repository of 1 TB has about 56,000 packs (on object
// storage each pack is a request to write and one to read in full), small
// enough that a restore of one file need not read much beside it. A pack
// ends at the first blob that takes it past this size; nightjar's chunks
// (256 KiB on average, before compression) overshoot it by about 0.15 MiB,
// so 17 MiB makes packs a little fuller than restic's (a 16 MiB target
// with 1 MiB chunks: 16.8 MiB on average), and no more requests per GB.
const DefaultPackSize = 17 << 20

func newConfig(now time.Time, chunker ChunkerParams) (Config, error) {
	var id [32]byte
	if _, err := rand.Read(id[:]); err != nil {
		return Config{}, err
	}
	return Config{
		Version:     ConfigVersion,
		ID:          hex.EncodeToString(id[:]),
		Created:     now.UTC(),
		Compression: "zstd",
		Chunker:     chunker,
		PackSize:    DefaultPackSize,
	}, nil
}

func (c Config) check() error {
	if _, err := hex.DecodeString(c.ID); err != nil || len(c.ID) != 64 {
		return fmt.Errorf("config: bad repository id %q", c.ID)
	}
	if c.Compression != "zstd" {
		return fmt.Errorf("config: unknown compression %q", c.Compression)
	}
	p := chunker.Params{Min: c.Chunker.Min, Avg: c.Chunker.Avg, Max: c.Chunker.Max}
	if err := p.Validate(); err != nil || p.Max > maxBlobSize {
		return fmt.Errorf("config: bad chunker sizes %d/%d/%d", p.Min, p.Avg, p.Max)
	}
	if c.PackSize < 1<<20 || c.PackSize > 1<<30 {
		return fmt.Errorf("config: bad pack size %d", c.PackSize)
	}
	return nil
}

// The config object is "nightjar config 1 <encryption>\n" and the sealed
// Config JSON, with "config" as the name in the associated data.

func encodeConfig(s sealer, encryption string, c Config) ([]byte, error) {
	plain, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	header := headerLine("config", encryption)
	return s.seal(append([]byte(nil), header...), plain, associatedData(header, "config")), nil
}

// configEncryption reads the encryption named in the config's header line.
func configEncryption(data []byte) (string, error) {
	extra, _, _, err := splitHeader("config", data)
	if err != nil {
		return "", err
	}
	if len(extra) != 1 || (extra[0] != EncryptionXChaCha && extra[0] != EncryptionNone) {
		return "", fmt.Errorf("config: unknown encryption %v: %w", extra, ErrIntegrity)
	}
	return extra[0], nil
}

func decodeConfig(s sealer, data []byte) (Config, error) {
	_, header, body, err := splitHeader("config", data)
	if err != nil {
		return Config{}, err
	}
	plain, err := s.open(nil, body, associatedData(header, "config"))
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(plain, &c); err != nil {
		return Config{}, fmt.Errorf("config: %v: %w", err, ErrIntegrity)
	}
	if c.Version < 1 {
		return Config{}, fmt.Errorf("config version %d: %w", c.Version, ErrIntegrity)
	}
	if c.Version > ConfigVersion {
		return Config{}, fmt.Errorf("config version %d: %w", c.Version, ErrUnsupportedVersion)
	}
	if err := c.check(); err != nil {
		return Config{}, fmt.Errorf("%v: %w", err, ErrIntegrity)
	}
	return c, nil
}

func loadConfigData(ctx context.Context, be Backend) ([]byte, error) {
	data, err := be.Load(ctx, Handle{Type: ConfigFile, Name: "config"}, 0, -1)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", be.Location(), ErrNoRepository)
	}
	return data, err
}
