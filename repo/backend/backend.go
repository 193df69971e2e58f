package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/lease"
	"github.com/nightjar-backup/nightjar/repo/backend/limit"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
)

// ErrUnknownScheme is the error of a location whose scheme no backend has.
var ErrUnknownScheme = errors.New("unknown scheme")

// ErrNoPath is the error of a location that names a scheme and nothing else.
var ErrNoPath = errors.New("no path after the scheme")

// scheme is one kind of storage: how to open and to create a backend from
// what follows "name:" in a location.
type scheme struct {
	name         string
	open         func(ctx context.Context, path string, opts Options) (repo.Backend, error)
	create       func(ctx context.Context, path string, opts Options) (repo.Backend, error)
	lockCreation func(ctx context.Context, path string, opts Options) (unlock func(), err error)
}

// Options are the settings of a location that its string does not carry:
// from a repository's table in the config or from flags. The zero value is
// the default of every field.
type Options struct {
	// BucketLookup is how an s3: location addresses its bucket: "auto"
	// (the default, also for ""), "path" or "dns".
	BucketLookup string
	// Region of an s3: location; "" takes AWS_REGION, AWS_DEFAULT_REGION
	// or the profile's, else asks the server.
	Region string
	// CAFile names a PEM file of roots trusted besides the system's, for
	// an https: endpoint.
	CAFile string
	// UploadLimit and DownloadLimit cap the bytes per second written to
	// and read from the storage, for every kind of storage; 0 is no cap.
	UploadLimit, DownloadLimit int64
}

// schemes are the kinds of storage known, the local folder first: a
// location without a scheme is a local path.
var schemes = []scheme{
	{
		name:   "local",
		open:   func(_ context.Context, path string, _ Options) (repo.Backend, error) { return local.Open(path) },
		create: func(_ context.Context, path string, _ Options) (repo.Backend, error) { return local.Create(path) },
		lockCreation: func(_ context.Context, path string, _ Options) (func(), error) {
			return local.LockFolder(path)
		},
	},
	{
		name: "s3",
		open: func(ctx context.Context, path string, opts Options) (repo.Backend, error) {
			cfg, err := s3Config(path, opts)
			if err != nil {
				return nil, err
			}
			be, err := s3.Open(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return lease.Wrap(be), nil
		},
		create: func(ctx context.Context, path string, opts Options) (repo.Backend, error) {
			cfg, err := s3Config(path, opts)
			if err != nil {
				return nil, err
			}
			be, err := s3.Create(ctx, cfg)
			if err != nil {
				return nil, err
			}
			return lease.Wrap(be), nil
		},
		// No lock spans hosts on S3. Creating stays safe without one: Create
		// refuses a prefix that holds a config (repo.ErrAlreadyExists), and
		// the first config is saved only if none exists (a conditional
		// PUT), so of two hosts creating at once one gets ErrAlreadyExists
		// and then opens the other's repository.
		lockCreation: func(_ context.Context, path string, opts Options) (func(), error) {
			if _, err := s3Config(path, opts); err != nil {
				return nil, err
			}
			return func() {}, nil
		},
	},
}

// s3Config is the s3 package's Config of what follows "s3:" and opts.
func s3Config(path string, opts Options) (s3.Config, error) {
	loc, err := s3.ParseLocation(path)
	if err != nil {
		return s3.Config{}, err
	}
	return s3.Config{Location: loc, BucketLookup: opts.BucketLookup, Region: opts.Region, CAFile: opts.CAFile}, nil
}

// Open opens the storage of the existing repository at location. Where no
// repository is, the error wraps repo.ErrNoRepository.
func Open(ctx context.Context, location string) (repo.Backend, error) {
	return OpenWith(ctx, location, Options{})
}

// OpenWith is Open with the location's settings.
func OpenWith(ctx context.Context, location string, opts Options) (repo.Backend, error) {
	s, path, err := parse(location)
	if err != nil {
		return nil, err
	}
	be, err := s.open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return limit.Wrap(be, opts.UploadLimit, opts.DownloadLimit), nil
}

// Create prepares storage for a new repository at location; it refuses a
// place that holds anything (an error wrapping repo.ErrAlreadyExists when
// that is a repository).
func Create(ctx context.Context, location string) (repo.Backend, error) {
	return CreateWith(ctx, location, Options{})
}

// CreateWith is Create with the location's settings.
func CreateWith(ctx context.Context, location string, opts Options) (repo.Backend, error) {
	s, path, err := parse(location)
	if err != nil {
		return nil, err
	}
	be, err := s.create(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return limit.Wrap(be, opts.UploadLimit, opts.DownloadLimit), nil
}

// LockCreation holds a lock that makes the processes that may create a
// repository at location at the same time do so one after another (the
// scheduler's create_if_missing): the first creates it, the others then
// open it. It waits for the lock; unlock releases it.
func LockCreation(ctx context.Context, location string, opts Options) (unlock func(), err error) {
	s, path, err := parse(location)
	if err != nil {
		return nil, err
	}
	return s.lockCreation(ctx, path, opts)
}

// schemeNames returns the names of the schemes known, for messages.
func schemeNames() []string {
	names := make([]string, len(schemes))
	for i, s := range schemes {
		names[i] = s.name
	}
	return names
}

// parse splits location into its scheme and the rest. A location is
// "scheme:rest" when what comes before its first colon looks like a scheme
// (a letter, then letters, digits, '+', '-' or '.'; two characters at
// least); anything else is a local path.
func parse(location string) (scheme, string, error) {
	name, rest, found := strings.Cut(location, ":")
	if !found || !looksLikeScheme(name) {
		return schemes[0], location, nil
	}
	for _, s := range schemes {
		if s.name == name {
			if rest == "" {
				return scheme{}, "", fmt.Errorf("repository location %q: %w", location, ErrNoPath)
			}
			return s, rest, nil
		}
	}
	return scheme{}, "", fmt.Errorf("repository location %q: %w %q (known: %s; for a folder of that name write ./%s)",
		location, ErrUnknownScheme, name, strings.Join(schemeNames(), ", "), location)
}

// SchemeOf returns the scheme a location starts with ("sftp" of
// "sftp:host:/srv"), and whether it starts with one: what comes before its
// first colon looks like a scheme, known or not.
func SchemeOf(location string) (string, bool) {
	name, _, found := strings.Cut(location, ":")
	return name, found && looksLikeScheme(name)
}

func looksLikeScheme(name string) bool {
	if len(name) < 2 {
		return false
	}
	for i, c := range []byte(name) {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}
