package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nightjar-backup/nightjar/redact"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
)

// ProbeTimeout bounds a probe: storage that does not answer within it (a
// hung network mount) is unavailable.
const ProbeTimeout = 30 * time.Second

// sizeTimeout bounds the listing of a repository's objects for its size,
// within ProbeTimeout: a repository too large to list in time has no
// known size, and is not called unavailable for it.
const sizeTimeout = 10 * time.Second

// Probe is what ProbeRepository found. Error never holds a password, nor
// the path or content of its source.
type Probe struct {
	Reachable bool   // opened with its password and took a write
	Error     string // why not, one line
	Missing   bool   // no repository is at the location (repo.ErrNoRepository)
	// EncryptionKnown: its config was read, and Encrypted says whether it
	// is encrypted (false: made with --insecure-no-encryption).
	EncryptionKnown bool
	Encrypted       bool
	// SpaceKnown: FreeBytes and TotalBytes of its file system were read.
	SpaceKnown bool
	FreeBytes  int64
	TotalBytes int64
	// SizeKnown: SizeBytes, the bytes of the repository's objects, were
	// listed (see repositorySize).
	SizeKnown bool
	SizeBytes int64
}

// writeProber is storage that can prove it takes writes now (the local
// folder: repo/backend/local).
type writeProber interface {
	WriteProbe(ctx context.Context) error
}

// spaceReader is storage that knows the free space where it is.
type spaceReader interface {
	Space(ctx context.Context) (free, total int64, err error)
}

// ProbeRepository opens the repository at location (with the settings
// opts) with password, writes
// and removes a small file in its storage and reads the free space there.
// It returns by ProbeTimeout whatever the storage does, leaving a probe
// that hangs to end on its own.
func ProbeRepository(ctx context.Context, location string, opts backend.Options, password func() ([]byte, error)) Probe {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	done := make(chan Probe, 1)
	go func() { done <- probe(ctx, location, opts, password) }()
	select {
	case p := <-done:
		return p
	case <-ctx.Done():
		return Probe{Error: fmt.Sprintf("the storage did not answer within %s (a hung mount or network?)", ProbeTimeout)}
	}
}

func probe(ctx context.Context, location string, opts backend.Options, password func() ([]byte, error)) Probe {
	var p Probe
	be, err := backend.OpenWith(ctx, location, opts)
	if err != nil {
		p.Error, p.Missing = redact.OneLine(err.Error(), 0), errors.Is(err, repo.ErrNoRepository)
		return p
	}
	if sr, ok := repo.Capability[spaceReader](be); ok {
		if free, total, err := sr.Space(ctx); err == nil {
			p.SpaceKnown, p.FreeBytes, p.TotalBytes = true, free, total
		}
	}
	asked := false // the password is asked for only when the repository is encrypted
	var passwordErr error
	r, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) {
		asked = true
		pw, err := password()
		if err != nil {
			// The error of a password source may name its file: keep it
			// out of what a probe says.
			passwordErr = errors.New("the repository's password could not be read from its source (nightjar tick says why)")
			return nil, passwordErr
		}
		return pw, nil
	}})
	if err != nil {
		if c, ok := repo.Capability[io.Closer](be); ok {
			_ = c.Close()
		}
	}
	switch {
	case err == nil:
		defer r.Close()
		p.EncryptionKnown, p.Encrypted = true, !r.Insecure()
	case passwordErr != nil:
		p.EncryptionKnown, p.Encrypted = true, true
		p.Error = passwordErr.Error()
		return p
	case errors.Is(err, repo.ErrWrongPassword):
		p.EncryptionKnown, p.Encrypted = true, true
		p.Error = repo.ErrWrongPassword.Error()
		return p
	default:
		p.EncryptionKnown, p.Encrypted = asked, asked
		p.Error = "open repository: " + redact.OneLine(err.Error(), 0)
		return p
	}
	if size, err := repositorySize(ctx, be); err == nil {
		p.SizeKnown, p.SizeBytes = true, size
	}
	if wp, ok := repo.Capability[writeProber](be); ok {
		if err := wp.WriteProbe(ctx); err != nil {
			p.Error = redact.OneLine(err.Error(), 0)
			return p
		}
	}
	p.Reachable = true
	return p
}

// sizedTypes are the kinds of objects a repository's size counts: all but
// the config, which is stat'ed, and the locks, which come and go with the
// processes that work on it.
var sizedTypes = []repo.FileType{repo.KeyFile, repo.PackFile, repo.IndexFile, repo.SnapshotFile,
	repo.PinFile, repo.ForgetFile, repo.VerifyFile}

// repositorySize is the bytes of the repository's objects (its config,
// keys, packs, indexes, snapshots, pins, forget markers and
// verifications), summed from the sizes the backend's List gives. For a
// local folder that is a read of each folder (the packs' 256), cheap
// next to the write probe. On object storage the same listing is one
// LIST request per 1000 objects (a 1 TB repository of 16 MB packs: about
// 65 requests, billed as class A operations) at each probe, every
// probe_every.
func repositorySize(ctx context.Context, be repo.Backend) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, sizeTimeout)
	defer cancel()
	size, err := be.Stat(ctx, repo.Handle{Type: repo.ConfigFile, Name: "config"})
	if err != nil {
		return 0, err
	}
	for _, t := range sizedTypes {
		if err := be.List(ctx, t, func(_ string, n int64) error {
			size += n
			return nil
		}); err != nil {
			return 0, err
		}
	}
	return size, nil
}
