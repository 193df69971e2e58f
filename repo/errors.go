package repo

import "errors"

// Sentinel errors. Callers test them with errors.Is; cmd maps them to exit
// codes and the scheduler to error classes.
var (
	// ErrNoRepository: the location holds no repository.
	ErrNoRepository = errors.New("no repository here (create one with nightjar init)")
	// ErrAlreadyExists: init found a repository already there.
	ErrAlreadyExists = errors.New("a repository already exists there")
	// ErrWrongPassword: no key file of the repository opens with the password.
	ErrWrongPassword = errors.New("wrong password: no key of the repository opens with it")
	// ErrBusy: another live process holds a conflicting lock.
	ErrBusy = errors.New("repository is busy")
	// ErrIntegrity: an object failed authentication or its hash, or is malformed.
	ErrIntegrity = errors.New("repository object is damaged or was tampered with")
	// ErrUnsupportedVersion: an object was written by a newer format version.
	ErrUnsupportedVersion = errors.New("unsupported format version")
	// ErrSnapshotNotFound: no snapshot matches the given ID, prefix or "latest".
	ErrSnapshotNotFound = errors.New("snapshot not found")
	// ErrStorageUnavailable: the storage failed a request after the
	// backend's own retries (a server down, failing or throttling every
	// try, or out of reach). Nothing is known of what it holds: a read
	// that fails so is no sign of damage, and the next read would most
	// likely spend the retries and fail again. Backends' own errors for
	// it match it with errors.Is (s3.ErrServer, s3.ErrNetwork).
	ErrStorageUnavailable = errors.New("the storage failed after retries")
)
