package repo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/nightjar-backup/nightjar/repo/chunker"
)

// Repository is an open repository: its config, master key and index.
type Repository struct {
	be         Backend
	cfg        Config
	encryption string
	key        *MasterKey
	keyName    string // the key file that opened it ("" when insecure)
	seal       sealer
	hasher     *blobHasher
	idx        *Index
	zenc       *zstd.Encoder
	zdec       *zstd.Decoder

	treeGearOnce  sync.Once
	treeGearTable *chunker.Gear // cuts big trees into parts (SaveTree)
	now           func() time.Time

	packBufs     chan []byte // free pack buffers
	compressBufs sync.Pool   // *[]byte for zstd output and sealed blobs

	// sessionMu lets one write session run at a time (WriteSession).
	sessionMu sync.Mutex

	// indexDamage names the index files LoadIndex could not read, and
	// indexedFromHeaders counts the packs it indexed from their headers
	// instead (repair.go).
	indexDamage        []IndexDamage
	indexedFromHeaders int
	unreadable         unreadableSnapshots // the snapshot files reads of the list skipped
	// indexCacheRoot is the folder of the local index caches ("": none),
	// indexCacheWarn where their failures are told (UseIndexCache).
	indexCacheRoot string
	indexCacheWarn func(format string, args ...any)
	held           heldLocks // the locks taken and not released (lock.go)
}

// InitOptions are the choices made when a repository is created.
type InitOptions struct {
	Insecure bool          // no encryption: only with --insecure-no-encryption
	KDF      KDFParams     // zero: DefaultKDF
	Chunker  ChunkerParams // sizes of the content-defined chunker
	Now      func() time.Time
}

// Init creates a repository in be, protected by password (ignored when
// opts.Insecure), and returns it open.
func Init(ctx context.Context, be Backend, password []byte, opts InitOptions) (*Repository, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	switch _, err := be.Stat(ctx, Handle{Type: ConfigFile, Name: "config"}); {
	case err == nil:
		return nil, ErrAlreadyExists
	case !errors.Is(err, ErrNotFound):
		// Not knowing is not "missing": never risk replacing a config.
		return nil, fmt.Errorf("init: look for an existing config: %w", err)
	}
	cfg, err := newConfig(now(), opts.Chunker)
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	mk, err := newMasterKey()
	if err != nil {
		return nil, err
	}
	var data []byte
	var keyName string
	if opts.Insecure {
		cfg.InsecureKey = &MasterKey{BlobID: mk.BlobID, Chunker: mk.Chunker}
		data, err = encodeConfig(plainSealer{}, EncryptionNone, cfg)
	} else {
		kdf := opts.KDF
		if kdf.Algorithm == "" {
			kdf = DefaultKDF
		}
		info, werr := writeKey(ctx, be, mk, password, kdf, now())
		if werr != nil {
			return nil, fmt.Errorf("init: %w", werr)
		}
		keyName = info.Name
		s, serr := newAEADSealer(mk.Encrypt)
		if serr != nil {
			return nil, serr
		}
		data, err = encodeConfig(s, EncryptionXChaCha, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	// The config is written last: its presence is what makes a repository.
	if err := be.Save(ctx, Handle{Type: ConfigFile, Name: "config"}, data); err != nil {
		if errors.Is(err, ErrAlreadyExists) && keyName != "" {
			// Another creator's config won (a conditional save on object
			// storage): this key opens nothing, and must not be left
			// where its password would try it first.
			if rerr := be.Remove(context.WithoutCancel(ctx), Handle{Type: KeyFile, Name: keyName}); rerr != nil && !errors.Is(rerr, ErrNotFound) {
				return nil, fmt.Errorf("init: %w (and remove its own key %s: %v)", err, keyName, rerr)
			}
		}
		return nil, fmt.Errorf("init: %w", err)
	}
	return newRepository(be, cfg, mk, keyName, opts.Insecure, now)
}

// OpenOptions are the choices made when a repository is opened.
type OpenOptions struct {
	// Password is called only when the repository is encrypted.
	Password func() ([]byte, error)
	Now      func() time.Time
}

// Open opens the repository in be. The index is not loaded: call LoadIndex.
func Open(ctx context.Context, be Backend, opts OpenOptions) (*Repository, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	data, err := loadConfigData(ctx, be)
	if err != nil {
		return nil, err
	}
	encryption, err := configEncryption(data)
	if err != nil {
		return nil, err
	}
	if encryption == EncryptionNone {
		return openInsecure(ctx, be, data, now)
	}
	if opts.Password == nil {
		return nil, errors.New("repository is encrypted and no password was given")
	}
	password, err := opts.Password()
	if err != nil {
		return nil, err
	}
	var cfg Config
	mk, keyName, err := unlock(ctx, be, password, func(mk *MasterKey) error {
		s, err := newAEADSealer(mk.Encrypt)
		if err == nil {
			cfg, err = decodeConfig(s, data)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return newRepository(be, cfg, mk, keyName, false, now)
}

func openInsecure(ctx context.Context, be Backend, data []byte, now func() time.Time) (*Repository, error) {
	// An unencrypted config beside key files means someone replaced the
	// config of an encrypted repository: writing to it would leak data.
	keys := 0
	if err := be.List(ctx, KeyFile, func(string, int64) error { keys++; return nil }); err != nil {
		return nil, err
	}
	if keys > 0 {
		return nil, fmt.Errorf("config says the repository is unencrypted but it has %d key files: %w", keys, ErrIntegrity)
	}
	cfg, err := decodeConfig(plainSealer{}, data)
	if err != nil {
		return nil, err
	}
	if cfg.InsecureKey == nil || len(cfg.InsecureKey.BlobID) != 32 || len(cfg.InsecureKey.Chunker) != 32 {
		return nil, fmt.Errorf("config: missing keys of unencrypted repository: %w", ErrIntegrity)
	}
	return newRepository(be, cfg, cfg.InsecureKey, "", true, now)
}

// unlock tries password on every key file, and returns the first master
// key that opens and that fits (fit: it authenticates the config). A key
// that opens but does not fit is skipped: the key of a creator that lost a
// race to write the config (left behind by a crash before it removed it)
// may have the same password.
func unlock(ctx context.Context, be Backend, password []byte, fit func(*MasterKey) error) (*MasterKey, string, error) {
	var names []string
	if err := be.List(ctx, KeyFile, func(name string, _ int64) error {
		names = append(names, name)
		return nil
	}); err != nil {
		return nil, "", fmt.Errorf("list keys: %w", err)
	}
	if len(names) == 0 {
		return nil, "", fmt.Errorf("repository has no key files: %w", ErrIntegrity)
	}
	// Every key file's parameters are read first (they are in clear), and
	// the cheapest keys are tried first: a key file with costly (or, past
	// the limits, refused) parameters, which anyone who may write to keys/
	// can plant, costs nothing while a usual key opens.
	type keyFile struct {
		name string
		data []byte
		cost uint64
	}
	var damaged []error
	var files []keyFile
	for _, name := range names {
		data, err := be.Load(ctx, Handle{Type: KeyFile, Name: name}, 0, -1)
		if err != nil {
			return nil, "", fmt.Errorf("load key: %w", err)
		}
		info, _, _, err := decodeKeyInfo(name, data)
		if err != nil {
			damaged = append(damaged, err) // named: "key NAME: argon2id memory ... out of range ..."
			continue
		}
		files = append(files, keyFile{name: name, data: data, cost: info.KDF.cost()})
	}
	slices.SortStableFunc(files, func(a, b keyFile) int { return cmp.Compare(a.cost, b.cost) })
	var unfit error // the first key that opened but did not fit
	for _, f := range files {
		mk, _, err := openKeyFile(f.name, f.data, password)
		if err == nil {
			if err = fit(mk); err == nil {
				return mk, f.name, nil
			}
			if unfit == nil {
				unfit = err
			}
			continue
		}
		if !errors.Is(err, ErrWrongPassword) {
			damaged = append(damaged, err)
		}
	}
	if unfit != nil {
		// The password is right, but no key it opens fits the config.
		return nil, "", unfit
	}
	if len(damaged) == len(names) {
		return nil, "", fmt.Errorf("no key file is readable: %w", errors.Join(damaged...))
	}
	return nil, "", ErrWrongPassword
}

func newRepository(be Backend, cfg Config, mk *MasterKey, keyName string, insecure bool, now func() time.Time) (*Repository, error) {
	r := &Repository{
		be: be, cfg: cfg, key: mk, keyName: keyName, now: now,
		hasher: newBlobHasher(mk.BlobID),
		idx:    newIndex(),
	}
	if insecure {
		r.seal, r.encryption = plainSealer{}, EncryptionNone
	} else {
		s, err := newAEADSealer(mk.Encrypt)
		if err != nil {
			return nil, err
		}
		r.seal, r.encryption = s, EncryptionXChaCha
	}
	var err error
	if err := r.SetCompression(DefaultCompression); err != nil {
		return nil, err
	}
	// Frames of blobs written before 2026-11-30 carry zstd's content
	// checksum; it is not verified, as the blob's seal and its ID (keyed
	// BLAKE3 of the plaintext, checked on every read) already are.
	r.zdec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(256<<20),
		zstd.IgnoreChecksum(true))
	if err != nil {
		return nil, err
	}
	r.compressBufs.New = func() any { b := make([]byte, 0, 256<<10); return &b }
	// A pack buffer for each packer (data and tree) and pack write of a
	// session.
	r.packBufs = make(chan []byte, 2+maxPackWrites)
	return r, nil
}

// Compression is how hard blobs are compressed before they are sealed. It
// only matters to writing: every level is read the same way.
type Compression string

// The compression levels (zstd's, from klauspost/compress).
const (
	CompressionOff     Compression = "off"     // store blobs as they are
	CompressionFastest Compression = "fastest" // zstd's fastest level
	CompressionDefault Compression = "default" // zstd's default level (zstd -3)
	CompressionBetter  Compression = "better"  // zstd's better level (about zstd -7)
)

// DefaultCompression is the level a repository writes with unless told
// otherwise. On the benchmark's mixed set (docs/PERFORMANCE.md) "fastest"
// made the first backup 20% faster than "default", but stored 1.1% more,
// and what the backup after the benchmark's change added 4% more: backups
// after the first are as fast with either, and what they add is what
// accumulates.
const DefaultCompression = CompressionDefault

// ParseCompression checks a compression level's name.
func ParseCompression(s string) (Compression, error) {
	switch c := Compression(s); c {
	case CompressionOff, CompressionFastest, CompressionDefault, CompressionBetter:
		return c, nil
	}
	return "", fmt.Errorf("compression %q: want off, fastest, default or better", s)
}

// SetCompression sets the level of the blobs saved from now on. Call it
// before saving, not while blobs are being saved.
func (r *Repository) SetCompression(c Compression) error {
	levels := map[Compression]zstd.EncoderLevel{
		CompressionFastest: zstd.SpeedFastest,
		CompressionDefault: zstd.SpeedDefault,
		CompressionBetter:  zstd.SpeedBetterCompression,
	}
	if _, err := ParseCompression(string(c)); err != nil {
		return err
	}
	if r.zenc != nil {
		r.zenc.Close()
		r.zenc = nil
	}
	if c == CompressionOff {
		return nil
	}
	// One encoder per core: EncodeAll takes an encoder from a pool of this
	// size, so fewer would make the savers wait for each other. A 1 MiB
	// window (the default chunk's largest size) keeps each encoder's
	// history at 2 MiB instead of 16. No content checksum: the seal and
	// the blob ID protect the plaintext already, and the checksum cost
	// 4 bytes a blob and an xxhash pass each way.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(levels[c]),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithWindowSize(1<<20),
		zstd.WithEncoderCRC(false))
	if err != nil {
		return fmt.Errorf("set up compression: %w", err)
	}
	r.zenc = enc
	return nil
}

// Close releases the repository's decoders and what its backend keeps
// open. Call it once every write session has returned (no pack write goes
// on after that).
func (r *Repository) Close() {
	r.zdec.Close()
	r.idx.reset() // closes the index cache's file
	if c, ok := Capability[io.Closer](r.be); ok {
		_ = c.Close()
	}
}

// Backend returns the storage the repository lives in.
func (r *Repository) Backend() Backend { return r.be }

// Config returns the repository's config.
func (r *Repository) Config() Config { return r.cfg }

// ID returns the repository's stable ID.
func (r *Repository) ID() string { return r.cfg.ID }

// Insecure reports whether the repository stores data unencrypted.
func (r *Repository) Insecure() bool { return r.encryption == EncryptionNone }

// KeyName returns the key file that opened the repository.
func (r *Repository) KeyName() string { return r.keyName }

// ChunkerKey returns the secret that keys the chunker's gear table.
func (r *Repository) ChunkerKey() [32]byte { return [32]byte(r.key.Chunker) }

// Index returns the in-memory index (filled by LoadIndex and by writes).
func (r *Repository) Index() *Index { return r.idx }

// BlobID computes the ID of a blob's plaintext.
func (r *Repository) BlobID(data []byte) ID { return r.hasher.sum(data) }
