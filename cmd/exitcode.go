package cmd

import (
	"context"
	"errors"
	"strings"

	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
)

// Exit codes. They are part of nightjar's interface and documented in the
// README; scripts depend on them, so never renumber one.
const (
	ExitOK              = 0   // success
	ExitFailure         = 1   // the command failed (including a check that found damage)
	ExitCritical        = 1   // nightjar status: a warning is critical (ExitFailure's number, for monitoring checks)
	ExitUsage           = 2   // bad command line, config or input: nothing was done
	ExitPartial         = 3   // a snapshot was made but some files or sources were skipped
	ExitConflict        = 4   // the job already has a queued or running run
	ExitNoRepository    = 10  // no repository at the given location
	ExitBusy            = 11  // the repository is locked by another live process, or this command's lock was lost while it ran
	ExitWrongPassword   = 12  // no key of the repository opens with the password
	ExitInvalidManifest = 13  // prune stopped: a snapshot or a tree it references cannot be read (invalid_manifest); nothing was deleted
	ExitStateDamaged    = 14  // the state database is damaged (SQLite's quick_check); nothing in it is needed to restore
	ExitInterrupted     = 130 // interrupted by a signal
)

// usageError marks an error in what the user asked for: a flag, an argument,
// a value. It exits with ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// codedError carries an explicit exit code, for outcomes that are not plain
// failures (a partial backup) or that were already reported in full.
type codedError struct {
	code   int
	err    error
	silent bool // the command already printed everything there is to say
}

func (e codedError) Error() string { return e.err.Error() }
func (e codedError) Unwrap() error { return e.err }

// domainExitCodes maps the domain packages' sentinel errors to exit codes,
// in one place.
var domainExitCodes = []struct {
	err  error
	code int
}{
	{repo.ErrNoRepository, ExitNoRepository},
	{repo.ErrBusy, ExitBusy},
	{repo.ErrWrongPassword, ExitWrongPassword},
	{repo.ErrInvalidManifest, ExitInvalidManifest},
	{db.ErrDamaged, ExitStateDamaged},
	{backend.ErrUnknownScheme, ExitUsage},
	{backend.ErrNoPath, ExitUsage},
	// S3: a refused or expired credential is the storage's wrong password;
	// a missing bucket is a missing repository; a bad location, a wrong
	// region, an unreadable CA file and a server certificate no CA
	// vouches for are settings to correct. A server's fault that outlasts
	// the retries (s3.ErrServer) is a plain failure (ExitFailure).
	{s3.ErrAccessDenied, ExitWrongPassword},
	{s3.ErrExpiredToken, ExitWrongPassword},
	{s3.ErrNoBucket, ExitNoRepository},
	{s3.ErrBadLocation, ExitUsage},
	{s3.ErrWrongRegion, ExitUsage},
	{s3.ErrBadCAFile, ExitUsage},
	{s3.ErrUntrusted, ExitUsage},
}

func exitCode(err error) int {
	var coded codedError
	if errors.As(err, &coded) {
		return coded.code
	}
	var usage usageError
	if errors.As(err, &usage) {
		return ExitUsage
	}
	if errors.Is(err, repo.ErrLockLost) {
		return ExitBusy
	}
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	for _, m := range domainExitCodes {
		if errors.Is(err, m.err) {
			return m.code
		}
	}
	return ExitFailure
}

func isSilent(err error) bool {
	var coded codedError
	return errors.As(err, &coded) && coded.silent
}

// errorMessage returns the one line printed for err. A command stopped
// by a signal (its context cancelled) says so, instead of the context's
// "context canceled".
func errorMessage(err error) string {
	if errors.Is(err, context.Canceled) {
		return "interrupted"
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
