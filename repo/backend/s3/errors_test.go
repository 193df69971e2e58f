package s3_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
)

// Every S3 refusal maps to its sentinel, in one line that names it.
func TestMapError(t *testing.T) {
	untrusted := &url.Error{Op: "Get", URL: "https://h/b/", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}
	refused := &url.Error{Op: "Put", URL: "http://127.0.0.1:1/b/k", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		err  error
		want error
		says string
	}{
		{minio.ErrorResponse{Code: "NoSuchKey", StatusCode: 404}, repo.ErrNotFound, "not found"},
		{minio.ErrorResponse{Code: "NoSuchBucket", StatusCode: 404, BucketName: "b1"}, s3.ErrNoBucket, `bucket does not exist "b1"`},
		{minio.ErrorResponse{Code: "InvalidAccessKeyId", StatusCode: 403}, s3.ErrAccessDenied, "InvalidAccessKeyId"},
		{minio.ErrorResponse{Code: "SignatureDoesNotMatch", StatusCode: 403}, s3.ErrAccessDenied, "SignatureDoesNotMatch"},
		{minio.ErrorResponse{Code: "AccessDenied", StatusCode: 403}, s3.ErrAccessDenied, "AccessDenied"},
		{minio.ErrorResponse{Code: "XAdminUserNotFound", StatusCode: 404}, s3.ErrAccessDenied, "XAdminUserNotFound"},
		{minio.ErrorResponse{Code: "AuthorizationHeaderMalformed", StatusCode: 400, Region: "eu-west-1"}, s3.ErrWrongRegion, "it is in eu-west-1"},
		{minio.ErrorResponse{Code: "PermanentRedirect", StatusCode: 301, Message: "use the endpoint"}, s3.ErrWrongRegion, "PermanentRedirect"},
		{minio.ErrorResponse{Code: "ExpiredToken", StatusCode: 400}, s3.ErrExpiredToken, "expired"},
		{minio.ErrorResponse{Code: "RequestTimeTooSkewed", StatusCode: 403}, s3.ErrClockSkew, "clock"},
		{refused, s3.ErrNetwork, "connection refused"},
		{fmt.Errorf("put: %w", syscall.ECONNRESET), s3.ErrNetwork, "reset"},
		{minio.ErrorResponse{Code: "SlowDown", StatusCode: 503, Message: "reduce your request rate"}, s3.ErrServer, "SlowDown: reduce your request rate"},
		{minio.ErrorResponse{Code: "InternalError", StatusCode: 500, Message: "boom\nmore"}, s3.ErrServer, "InternalError: boom"},
		{minio.ErrorResponse{Code: "RequestTimeout", StatusCode: 400}, s3.ErrServer, "RequestTimeout"},
		{minio.ErrorResponse{StatusCode: 502}, s3.ErrServer, "after retries"},
		{fmt.Errorf("read (4 tries): %w", io.ErrUnexpectedEOF), s3.ErrServer, "unexpected EOF"},
		{untrusted, s3.ErrUntrusted, "s3.ca_file"},
		{untrusted, s3.ErrUntrusted, "unknown authority"},
	}
	for _, tt := range tests {
		got := s3.MapError("save data/ab/abcd", tt.err)
		if !errors.Is(got, tt.want) {
			t.Errorf("map %v: %v, want %v", tt.err, got, tt.want)
			continue
		}
		// A failure of the server or the way to it after the retries is
		// the storage failing, for callers that name no backend; no
		// other refusal is.
		storage := tt.want == s3.ErrServer || tt.want == s3.ErrNetwork
		if errors.Is(got, repo.ErrStorageUnavailable) != storage {
			t.Errorf("map %v: %v matches repo.ErrStorageUnavailable: %v, want %v", tt.err, got, !storage, storage)
		}
		msg := got.Error()
		if !strings.Contains(msg, tt.says) || !strings.HasPrefix(msg, "save data/ab/abcd: ") || strings.Contains(msg, "\n") {
			t.Errorf("map %v: %q, want one line naming the request and saying %q", tt.err, msg, tt.says)
		}
	}
	if s3.MapError("x", nil) != nil {
		t.Error("map nil is not nil")
	}
	other := s3.MapError("x", minio.ErrorResponse{Code: "MalformedXML", StatusCode: 400, Message: "boom\nmore"})
	if msg := other.Error(); msg != "x: s3 answered MalformedXML: boom" {
		t.Errorf("map an unknown refusal: %q", msg)
	}
}

func TestProfileRegion(t *testing.T) {
	file := t.TempDir() + "/config"
	content := "[default]\nregion = us-west-2\n\n[profile work]\n# comment\noutput=json\nregion=eu-central-1\n[profile  other ]\nregion = ap-south-1\n"
	if err := writeFile(file, content); err != nil {
		t.Fatal(err)
	}
	for profile, want := range map[string]string{"default": "us-west-2", "work": "eu-central-1", "other": "ap-south-1", "none": ""} {
		if got := s3.ProfileRegion(file, profile); got != want {
			t.Errorf("region of profile %s = %q, want %q", profile, got, want)
		}
	}
	if got := s3.ProfileRegion(file+".missing", "default"); got != "" {
		t.Errorf("region of a missing file = %q", got)
	}
}
