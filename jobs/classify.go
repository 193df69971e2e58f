package jobs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// CodeSourceMissing fails a backup run none of whose sources existed: a
// configuration error (class config), which is not retried.
const CodeSourceMissing = "SOURCE_MISSING"

// Codes of a repository that could not be set up for a run: the errors of
// a RepositoryOpener (wired by cmd) carry them.
const (
	CodePasswordUnavailable  = "PASSWORD_UNAVAILABLE"      // auth: its password source gave no password
	CodeNoRepository         = "NO_REPOSITORY"             // repository: none where it is configured (retried: a disk may come back)
	CodeS3NoBucket           = "S3_NO_BUCKET"              // repository: the S3 bucket it is configured in does not exist (retried as NO_REPOSITORY)
	CodeRepositoryReplaced   = pass.CodeRepositoryReplaced // repository: another repository than the one recorded (not retried)
	CodeRepositoryUnwritable = "REPOSITORY_UNWRITABLE"     // repository: it cannot be written (read-only, full, permissions)
	CodeOpenFailed           = "OPEN_FAILED"               // repository: it could not be opened for another reason
)

// Classify gives an error the class that decides its retry.
func Classify(err error) error {
	var ce *pass.ClassError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	class, code := pass.ClassUnknown, "ERROR"
	switch {
	case errors.Is(err, repo.ErrLockLost):
		// Another process judged the lock dead and may hold a conflicting
		// one: the work stopped before its next write; a later try runs
		// once that process is done.
		class, code = pass.ClassBusy, "LOCK_LOST"
	case errors.Is(err, context.Canceled):
		class, code = pass.ClassCancelled, pass.CodeCancelled
	case errors.Is(err, repo.ErrWrongPassword):
		class, code = pass.ClassAuth, "WRONG_PASSWORD"
	case errors.Is(err, repo.ErrIntegrity):
		class, code = pass.ClassIntegrity, "INTEGRITY"
	case errors.Is(err, repo.ErrUnsupportedVersion):
		class, code = pass.ClassConfig, "UNSUPPORTED_VERSION"
	case errors.Is(err, repo.ErrBusy):
		class, code = pass.ClassBusy, "REPOSITORY_BUSY"
	case errors.Is(err, repo.ErrNoRepository):
		class, code = pass.ClassRepository, CodeNoRepository
	case errors.Is(err, s3.ErrAccessDenied):
		class, code = pass.ClassAuth, "S3_ACCESS_DENIED"
	case errors.Is(err, s3.ErrExpiredToken):
		class, code = pass.ClassAuth, "S3_EXPIRED_TOKEN"
	case errors.Is(err, s3.ErrNoBucket):
		class, code = pass.ClassRepository, CodeS3NoBucket
	case errors.Is(err, s3.ErrWrongRegion):
		class, code = pass.ClassRepository, "S3_WRONG_REGION"
	case errors.Is(err, s3.ErrBadLocation), errors.Is(err, s3.ErrBadCAFile), errors.Is(err, s3.ErrUntrusted):
		class, code = pass.ClassConfig, "S3_BAD_SETTINGS"
	case errors.Is(err, s3.ErrClockSkew):
		// The host's clock may be set right by the next try (NTP).
		class, code = pass.ClassNetwork, "S3_CLOCK_SKEW"
	case errors.Is(err, s3.ErrNetwork):
		class, code = pass.ClassNetwork, "S3_UNREACHABLE"
	case errors.Is(err, s3.ErrServer):
		// Throttling or a server's fault outlasted the client's retries:
		// the scheduler's later try may find the server well.
		class, code = pass.ClassNetwork, "S3_SERVER_ERROR"
	case errors.Is(err, fs.ErrPermission):
		class, code = pass.ClassSecurity, "PERMISSION_DENIED"
	case errors.Is(err, syscall.ENOSPC):
		class, code = pass.ClassRepository, "NO_SPACE"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		class, code = pass.ClassTransient, "TIMEOUT"
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			class, code = pass.ClassRepository, "IO_ERROR"
		}
	}
	return &pass.ClassError{Class: class, Code: code, Err: err}
}
