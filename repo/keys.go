package repo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"time"

	"golang.org/x/crypto/argon2"
)

// KDFParams are the Argon2id parameters stored in a key file.
type KDFParams struct {
	Algorithm string `json:"algorithm"` // always "argon2id"
	Time      uint32 `json:"time"`      // passes
	MemoryKiB uint32 `json:"memory_kib"`
	Threads   uint8  `json:"threads"`
	Salt      []byte `json:"salt"` // 16 random bytes
}

// DefaultKDF is the Argon2id setting of new keys: 4 passes over 48 MiB
// with 4 lanes. It costs a guesser the same memory-time product as RFC
// 9106's second recommendation (3 passes over 64 MiB, 192 MiB-passes),
// which keys made before 2026-12 use and which still open, and it takes
// about as long to derive; the extra pass also leaves less to gain from
// trading memory for time. The 16 MiB less come off the peak of every
// command that opens a repository (docs/PERFORMANCE.md, "The key's
// memory"). OWASP's password storage guidance asks for at least 46 MiB
// with one pass, or less memory with more passes.
var DefaultKDF = KDFParams{Algorithm: "argon2id", Time: 4, MemoryKiB: 48 * 1024, Threads: 4}

// KDF limits of every key file, read or written. Whoever may write to
// keys/ needs no password to plant a key file, and its parameters are used
// before anything in it is authenticated: the limits keep such a file from
// making every open take seconds and gigabytes (1 GiB and 10 passes took
// 7 s). They are four times the 64 MiB of the older keys' memory and a
// few times DefaultKDF's passes; nightjar writes keys with DefaultKDF,
// and wrote them with 3 passes over 64 MiB before, so no key it made
// exceeds them.
const (
	maxKDFMemoryKiB = 4 * 64 * 1024 // 256 MiB
	maxKDFTime      = 10
	maxKDFThreads   = 64
)

func (p KDFParams) check() error {
	switch {
	case p.Algorithm != "argon2id":
		return fmt.Errorf("unknown key derivation %q (want argon2id)", p.Algorithm)
	case p.Time < 1 || p.Time > maxKDFTime:
		return fmt.Errorf("argon2id time %d out of range 1..%d", p.Time, maxKDFTime)
	case p.MemoryKiB < 8*uint32(max(p.Threads, 1)) || p.MemoryKiB > maxKDFMemoryKiB:
		return fmt.Errorf("argon2id memory %d KiB out of range %d..%d KiB", p.MemoryKiB, 8*uint32(max(p.Threads, 1)), maxKDFMemoryKiB)
	case p.Threads < 1 || p.Threads > maxKDFThreads:
		return fmt.Errorf("argon2id threads %d out of range 1..%d", p.Threads, maxKDFThreads)
	case len(p.Salt) < 16:
		return fmt.Errorf("argon2id salt of %d bytes is too short", len(p.Salt))
	}
	return nil
}

// cost is what deriving a key with p takes, in KiB-passes: unlock tries
// the cheapest key files first.
func (p KDFParams) cost() uint64 { return uint64(p.Time) * uint64(p.MemoryKiB) }

func (p KDFParams) derive(password []byte) []byte {
	prepareKDFMemory(uint64(p.MemoryKiB) * 1024)
	key := argon2.IDKey(password, p.Salt, p.Time, p.MemoryKiB, p.Threads, 32)
	// The work area (48 MiB by default) is garbage now. Collecting it at
	// once lets what the command allocates next reuse its pages instead
	// of new ones, and sets the collector's next goal by the live heap
	// instead of by the area: without this, an unchanged re-backup of the
	// mixed set peaked at 118 to 123 MiB instead of 85 to 87, the key's own
	// peak (docs/PERFORMANCE.md, "Memory at every step").
	runtime.GC()
	return key
}

// KeyInfo describes a key file; it is stored in clear (and authenticated).
type KeyInfo struct {
	Name     string    `json:"-"`
	Created  time.Time `json:"created"`
	Hostname string    `json:"hostname"`
	Username string    `json:"username"`
	KDF      KDFParams `json:"kdf"`
}

// A key file is the line "nightjar key 1", one line of KeyInfo JSON, then
// the master key JSON sealed with XChaCha20-Poly1305 under the Argon2id key;
// the associated data is both lines, a zero byte and the key file's name.

func newKeyName() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

func encodeKeyFile(name string, info KeyInfo, password []byte, mk *MasterKey) ([]byte, error) {
	infoJSON, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	prefix := append(headerLine("key"), infoJSON...)
	prefix = append(prefix, '\n')
	s, err := newAEADSealer(info.KDF.derive(password))
	if err != nil {
		return nil, err
	}
	plain, err := json.Marshal(mk)
	if err != nil {
		return nil, err
	}
	return s.seal(prefix, plain, associatedData(prefix, name)), nil
}

// decodeKeyInfo reads the clear part of a key file.
func decodeKeyInfo(name string, data []byte) (KeyInfo, []byte, []byte, error) {
	_, header, rest, err := splitHeader("key", data)
	if err != nil {
		return KeyInfo{}, nil, nil, err
	}
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return KeyInfo{}, nil, nil, fmt.Errorf("key %s: no info line: %w", name, ErrIntegrity)
	}
	var info KeyInfo
	if err := json.Unmarshal(rest[:nl], &info); err != nil {
		return KeyInfo{}, nil, nil, fmt.Errorf("key %s: %v: %w", name, err, ErrIntegrity)
	}
	if err := info.KDF.check(); err != nil {
		return KeyInfo{}, nil, nil, fmt.Errorf("key %s: %v: %w", name, err, ErrIntegrity)
	}
	info.Name = name
	prefix := data[:len(header)+nl+1]
	return info, prefix, rest[nl+1:], nil
}

// openKeyFile unwraps the master key with password. A wrong password and a
// damaged key file look alike: both fail authentication.
func openKeyFile(name string, data, password []byte) (*MasterKey, KeyInfo, error) {
	info, prefix, body, err := decodeKeyInfo(name, data)
	if err != nil {
		return nil, info, err
	}
	s, err := newAEADSealer(info.KDF.derive(password))
	if err != nil {
		return nil, info, err
	}
	plain, err := s.open(nil, body, associatedData(prefix, name))
	if err != nil {
		return nil, info, ErrWrongPassword
	}
	var mk MasterKey
	if err := json.Unmarshal(plain, &mk); err != nil || !mk.valid() {
		return nil, info, fmt.Errorf("key %s: malformed master key: %w", name, ErrIntegrity)
	}
	return &mk, info, nil
}

func newKeyInfo(kdf KDFParams, now time.Time) (KeyInfo, error) {
	kdf.Salt = make([]byte, 16)
	if _, err := rand.Read(kdf.Salt); err != nil {
		return KeyInfo{}, err
	}
	if err := kdf.check(); err != nil {
		return KeyInfo{}, fmt.Errorf("key derivation: %w", err)
	}
	info := KeyInfo{Created: now.UTC(), KDF: kdf}
	info.Hostname, _ = os.Hostname()
	if u, err := user.Current(); err == nil {
		info.Username = u.Username
	}
	return info, nil
}

// writeKey wraps mk under password in a new key file and returns its info.
func writeKey(ctx context.Context, be Backend, mk *MasterKey, password []byte, kdf KDFParams, now time.Time) (KeyInfo, error) {
	if len(password) == 0 {
		return KeyInfo{}, errors.New("empty password")
	}
	name, err := newKeyName()
	if err != nil {
		return KeyInfo{}, err
	}
	info, err := newKeyInfo(kdf, now)
	if err != nil {
		return KeyInfo{}, err
	}
	data, err := encodeKeyFile(name, info, password, mk)
	if err != nil {
		return KeyInfo{}, err
	}
	if err := be.Save(ctx, Handle{Type: KeyFile, Name: name}, data); err != nil {
		return KeyInfo{}, fmt.Errorf("save key: %w", err)
	}
	info.Name = name
	return info, nil
}
