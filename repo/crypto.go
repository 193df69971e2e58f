package repo

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"

	"golang.org/x/crypto/chacha20poly1305"
	"lukechampine.com/blake3"
)

// MasterKey is the random secret of a repository. Key files wrap it under
// passwords; it never changes for the life of the repository.
type MasterKey struct {
	Encrypt []byte `json:"encrypt"` // 32 bytes: XChaCha20-Poly1305 key for every object
	BlobID  []byte `json:"blob_id"` // 32 bytes: BLAKE3 key for blob IDs
	Chunker []byte `json:"chunker"` // 32 bytes: key of the chunker's gear table
}

func newMasterKey() (*MasterKey, error) {
	k := &MasterKey{Encrypt: make([]byte, 32), BlobID: make([]byte, 32), Chunker: make([]byte, 32)}
	for _, b := range [][]byte{k.Encrypt, k.BlobID, k.Chunker} {
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("generate master key: %w", err)
		}
	}
	return k, nil
}

func (k *MasterKey) valid() bool {
	return len(k.Encrypt) == 32 && len(k.BlobID) == 32 && len(k.Chunker) == 32
}

// sealer authenticates (and, unless the repository is insecure, encrypts)
// every byte that nightjar stores.
type sealer interface {
	// seal appends the sealed form of plain, bound to ad, to dst.
	seal(dst, plain, ad []byte) []byte
	// open appends the plaintext of sealed to dst, or fails with ErrIntegrity.
	open(dst, sealed, ad []byte) ([]byte, error)
	// openInPlace is open into sealed's own memory: the plaintext it
	// returns aliases sealed, which is overwritten.
	openInPlace(sealed, ad []byte) ([]byte, error)
	// overhead is the number of bytes seal adds.
	overhead() int
}

// aeadSealer is XChaCha20-Poly1305 with a random 24-byte nonce per object:
// nonce || ciphertext || 16-byte tag.
type aeadSealer struct{ aead cipher.AEAD }

func newAEADSealer(key []byte) (*aeadSealer, error) {
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, fmt.Errorf("set up encryption: %w", err)
	}
	return &aeadSealer{aead: aead}, nil
}

func (s *aeadSealer) seal(dst, plain, ad []byte) []byte {
	nonceAt := len(dst)
	dst = append(dst, make([]byte, chacha20poly1305.NonceSizeX)...)
	nonce := dst[nonceAt:]
	if _, err := rand.Read(nonce); err != nil {
		panic("nightjar: system random source failed: " + err.Error())
	}
	return s.aead.Seal(dst, nonce, plain, ad)
}

func (s *aeadSealer) open(dst, sealed, ad []byte) ([]byte, error) {
	if len(sealed) < s.overhead() {
		return nil, fmt.Errorf("sealed object of %d bytes is too short: %w", len(sealed), ErrIntegrity)
	}
	nonce, ct := sealed[:chacha20poly1305.NonceSizeX], sealed[chacha20poly1305.NonceSizeX:]
	out, err := s.aead.Open(dst, nonce, ct, ad)
	if err != nil {
		return nil, fmt.Errorf("authentication failed: %w", ErrIntegrity)
	}
	return out, nil
}

func (s *aeadSealer) openInPlace(sealed, ad []byte) ([]byte, error) {
	if len(sealed) < s.overhead() {
		return nil, fmt.Errorf("sealed object of %d bytes is too short: %w", len(sealed), ErrIntegrity)
	}
	nonce, ct := sealed[:chacha20poly1305.NonceSizeX], sealed[chacha20poly1305.NonceSizeX:]
	out, err := s.aead.Open(ct[:0], nonce, ct, ad)
	if err != nil {
		return nil, fmt.Errorf("authentication failed: %w", ErrIntegrity)
	}
	return out, nil
}

func (s *aeadSealer) overhead() int { return chacha20poly1305.NonceSizeX + chacha20poly1305.Overhead }

// plainSealer is for repositories made with --insecure-no-encryption: the
// plaintext followed by BLAKE3-256(len(ad) as uint64 LE || ad || plaintext).
// It detects accidental damage, not a deliberate attacker.
type plainSealer struct{}

func (plainSealer) sum(plain, ad []byte) [32]byte {
	h := blake3.New(32, nil)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(ad)))
	h.Write(n[:])
	h.Write(ad)
	h.Write(plain)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

func (p plainSealer) seal(dst, plain, ad []byte) []byte {
	sum := p.sum(plain, ad)
	dst = append(dst, plain...)
	return append(dst, sum[:]...)
}

func (p plainSealer) open(dst, sealed, ad []byte) ([]byte, error) {
	plain, err := p.openInPlace(sealed, ad)
	if err != nil {
		return nil, err
	}
	return append(dst, plain...), nil
}

func (p plainSealer) openInPlace(sealed, ad []byte) ([]byte, error) {
	if len(sealed) < 32 {
		return nil, fmt.Errorf("object of %d bytes is too short: %w", len(sealed), ErrIntegrity)
	}
	plain := sealed[:len(sealed)-32]
	if p.sum(plain, ad) != [32]byte(sealed[len(sealed)-32:]) {
		return nil, fmt.Errorf("checksum mismatch: %w", ErrIntegrity)
	}
	return plain, nil
}

func (plainSealer) overhead() int { return 32 }

// blobHasher computes blob IDs: BLAKE3-256 keyed with the master key's
// BlobID key, so that IDs reveal nothing about content.
type blobHasher struct {
	pool sync.Pool
}

func newBlobHasher(key []byte) *blobHasher {
	k := append([]byte(nil), key...)
	return &blobHasher{pool: sync.Pool{New: func() any { return newSeqHasher(k) }}}
}

func (b *blobHasher) sum(data []byte) ID {
	h := b.pool.Get().(*seqHasher)
	h.reset()
	h.Write(data)
	id := h.sum()
	b.pool.Put(h)
	return id
}

// fileID is the name of a content-addressed file: plain BLAKE3-256.
func fileID(data []byte) ID { return ID(blake3.Sum256(data)) }
