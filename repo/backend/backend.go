package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
)

// ErrUnknownScheme is the error of a location whose scheme no backend has.
var ErrUnknownScheme = errors.New("unknown scheme")

// ErrNoPath is the error of a location that names a scheme and nothing else.
var ErrNoPath = errors.New("no path after the scheme")

// scheme is one kind of storage: how to open and to create a backend from
// what follows "name:" in a location.
type scheme struct {
	name         string
	open         func(ctx context.Context, path string) (repo.Backend, error)
	create       func(ctx context.Context, path string) (repo.Backend, error)
	lockCreation func(ctx context.Context, path string) (unlock func(), err error)
}

// schemes are the kinds of storage known, the local folder first: a
// location without a scheme is a local path.
var schemes = []scheme{
	{
		name:   "local",
		open:   func(_ context.Context, path string) (repo.Backend, error) { return local.Open(path) },
		create: func(_ context.Context, path string) (repo.Backend, error) { return local.Create(path) },
		lockCreation: func(_ context.Context, path string) (func(), error) {
			return local.LockFolder(path)
		},
	},
}

// Open opens the storage of the existing repository at location. Where no
// repository is, the error wraps repo.ErrNoRepository.
func Open(ctx context.Context, location string) (repo.Backend, error) {
	s, path, err := parse(location)
	if err != nil {
		return nil, err
	}
	return s.open(ctx, path)
}

// Create prepares storage for a new repository at location; it refuses a
// place that holds anything (an error wrapping repo.ErrAlreadyExists when
// that is a repository).
func Create(ctx context.Context, location string) (repo.Backend, error) {
	s, path, err := parse(location)
	if err != nil {
		return nil, err
	}
	return s.create(ctx, path)
}

// LockCreation holds a lock that makes the processes that may create a
// repository at location at the same time do so one after another (the
// scheduler's create_if_missing): the first creates it, the others then
// open it. It waits for the lock; unlock releases it.
func LockCreation(ctx context.Context, location string) (unlock func(), err error) {
	s, path, err := parse(location)
	if err != nil {
		return nil, err
	}
	return s.lockCreation(ctx, path)
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
