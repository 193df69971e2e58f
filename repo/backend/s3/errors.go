package s3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"

	"github.com/minio/minio-go/v7"

	"github.com/nightjar-backup/nightjar/repo"
)

// The errors an S3 server's refusals map to; callers test them with
// errors.Is.
var (
	// ErrAccessDenied: the server refused the credentials (an unknown
	// key, a wrong secret) or they do not allow the request.
	ErrAccessDenied = errors.New("s3 access denied (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE and its credentials)")
	// ErrNoBucket: the bucket does not exist.
	ErrNoBucket = errors.New("s3 bucket does not exist")
	// ErrWrongRegion: the bucket is in another region than the one asked.
	ErrWrongRegion = errors.New("s3 bucket is in another region")
	// ErrExpiredToken: the session token has expired.
	ErrExpiredToken = errors.New("s3 session token has expired (renew AWS_SESSION_TOKEN)")
	// ErrClockSkew: the server refused a request because this host's
	// clock is too far from its own.
	ErrClockSkew = errors.New("s3 refused the request: this host's clock is too far off (sync it with NTP)")
	// ErrNetwork: the server could not be reached or stopped answering.
	ErrNetwork error = &storageError{"s3 server unreachable"}
	// ErrBadCAFile: the CA file cannot be read or holds no PEM certificate.
	ErrBadCAFile = errors.New("bad CA file")
	// ErrServer: the server failed the request (a 5xx answer, throttling
	// such as SlowDown, or a body cut short) through all of the client's
	// retries: a fault of the server or the way to it, which a later try
	// may not meet.
	ErrServer error = &storageError{"s3 server failed the request after retries"}
	// ErrUntrusted: the server's TLS certificate could not be verified (an
	// unknown authority, an expired certificate, another host's name): a
	// setting to correct, which no retry mends.
	ErrUntrusted = errors.New("s3 server's certificate is not trusted (give the CA that signed it as the repository's s3.ca_file, or fix the server's certificate)")
)

// storageError is a sentinel of a failure of the server, or of the way
// to it, that outlasted the client's retries: it matches
// repo.ErrStorageUnavailable too, so that callers that work with any
// backend (a restore, which stops at it) know it without naming S3.
type storageError struct{ msg string }

func (e *storageError) Error() string        { return e.msg }
func (e *storageError) Is(target error) bool { return target == repo.ErrStorageUnavailable }

// mapError turns an error of the S3 client into one that wraps the
// matching sentinel (or repo.ErrNotFound), keeping the server's message.
// what names the request ("load data/ab/abcd").
func mapError(what string, err error) error {
	if err == nil {
		return nil
	}
	var paced *paceError
	if errors.Is(err, context.Canceled) || errors.As(err, &paced) {
		return fmt.Errorf("%s: %w", what, err)
	}
	resp := minio.ToErrorResponse(err)
	switch resp.Code {
	case "NoSuchKey", "NotFound":
		return fmt.Errorf("%s: %w", what, repo.ErrNotFound)
	case "NoSuchBucket":
		return fmt.Errorf("%s: %w %q", what, ErrNoBucket, resp.BucketName)
	// versitygw answers an unknown key with XAdminUserNotFound.
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "Forbidden", "XAdminUserNotFound":
		return fmt.Errorf("%s: %w: %s", what, ErrAccessDenied, resp.Code)
	case "AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException", "InvalidRegion":
		if resp.Region != "" {
			return fmt.Errorf("%s: %w: it is in %s (set AWS_REGION or the repository's s3.region to it)", what, ErrWrongRegion, resp.Region)
		}
		return fmt.Errorf("%s: %w (%s: %s)", what, ErrWrongRegion, resp.Code, resp.Message)
	case "ExpiredToken", "ExpiredTokenException", "TokenRefreshRequired":
		return fmt.Errorf("%s: %w", what, ErrExpiredToken)
	case "RequestTimeTooSkewed":
		return fmt.Errorf("%s: %w", what, ErrClockSkew)
	}
	if untrusted(err) {
		return fmt.Errorf("%s: %w: %w", what, ErrUntrusted, err)
	}
	if resp.StatusCode >= 500 || serverBusy[resp.Code] || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: %w: %s", what, ErrServer, firstLine(serverSays(resp, err)))
	}
	if resp.Code == "" && resp.StatusCode == 0 && isNetwork(err) {
		return fmt.Errorf("%s: %w: %w", what, ErrNetwork, err)
	}
	if resp.Code != "" {
		return fmt.Errorf("%s: s3 answered %s: %s", what, resp.Code, firstLine(resp.Message))
	}
	return fmt.Errorf("%s: %w", what, err)
}

// serverBusy are the codes of a server that asks its clients to slow down
// or failed for reasons of its own, whatever their HTTP status.
var serverBusy = map[string]bool{
	"SlowDown": true, "InternalError": true, "ServiceUnavailable": true, "RequestTimeout": true,
	"ServerBusy": true, "Throttling": true, "ThrottlingException": true, "RequestLimitExceeded": true,
	"TooManyRequests": true,
}

// serverSays is what a failed request's answer says: its code and message,
// or the client's error where there was no answer.
func serverSays(resp minio.ErrorResponse, err error) string {
	if resp.Code != "" {
		return resp.Code + ": " + resp.Message
	}
	return err.Error()
}

// untrusted reports whether err is a failed verification of the server's
// TLS certificate.
func untrusted(err error) bool {
	var ve *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var he x509.HostnameError
	return errors.As(err, &ve) || errors.As(err, &ua) || errors.As(err, &ci) || errors.As(err, &he)
}

// isNetwork reports whether err is a failure to reach or to hear from the
// server: refused or reset connections, DNS failures, timeouts.
func isNetwork(err error) bool {
	var ne net.Error
	var ue *url.Error
	var oe *net.OpError
	var de *net.DNSError
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.As(err, &oe) || errors.As(err, &de) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, context.DeadlineExceeded)
}

func firstLine(s string) string {
	for i := range len(s) {
		if s[i] == '\n' || s[i] == '\r' {
			return s[:i]
		}
	}
	return s
}

// credentialProcessError is the failure of a profile's credential_process:
// a refusal of the credentials, as ErrAccessDenied is, in words that name
// the profile and what the process did.
type credentialProcessError struct {
	profile string
	err     error
}

func (e *credentialProcessError) Error() string {
	return fmt.Sprintf("s3 credentials: the credential_process of profile %q failed: %s", e.profile, firstLine(e.err.Error()))
}

func (e *credentialProcessError) Is(target error) bool { return target == ErrAccessDenied }
