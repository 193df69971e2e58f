package s3_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// A region other than the server's is ErrWrongRegion naming the right one,
// whether it comes from the settings or from AWS_REGION.
func TestWrongRegion(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.MakeBucket(t, "region")
	cfg := config(t, srv, "region", "repo")
	cfg.Region = "eu-west-1"
	_, err := s3.Open(context.Background(), cfg)
	if !errors.Is(err, s3.ErrWrongRegion) || !strings.Contains(err.Error(), "it is in "+s3test.Region) {
		t.Errorf("open in region eu-west-1 of a server in %s: %v, want ErrWrongRegion naming %s", s3test.Region, err, s3test.Region)
	} else {
		oneLine(t, err)
	}
	t.Setenv("AWS_REGION", "ap-south-1")
	_, err = s3.Open(context.Background(), config(t, srv, "region", "repo"))
	if !errors.Is(err, s3.ErrWrongRegion) {
		t.Errorf("open with AWS_REGION=ap-south-1: %v, want ErrWrongRegion", err)
	}
}

// The region of the profile in the shared config file is used when the
// environment names none.
func TestRegionFromProfile(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.MakeBucket(t, "profile")
	file := t.TempDir() + "/config"
	if err := writeFile(file, "[default]\nregion = "+s3test.Region+"\n[profile far]\nregion = sa-east-1\n"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", file)
	t.Setenv("AWS_PROFILE", "far")
	if _, err := s3.Open(context.Background(), config(t, srv, "profile", "repo")); !errors.Is(err, s3.ErrWrongRegion) {
		t.Errorf("open with profile far (sa-east-1): %v, want ErrWrongRegion", err)
	}
	t.Setenv("AWS_PROFILE", "default")
	if _, err := s3.Create(context.Background(), config(t, srv, "profile", "repo")); err != nil {
		t.Errorf("create with the default profile (%s): %v", s3test.Region, err)
	}
}

// Credentials come from the shared credentials file's profile when the
// environment has none.
func TestCredentialsFromProfile(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	file := t.TempDir() + "/credentials"
	content := "[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong-secret-0000000\n" +
		"[backup]\naws_access_key_id = " + s3test.AccessKey + "\naws_secret_access_key = " + s3test.SecretKey + "\n"
	if err := writeFile(file, content); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	t.Setenv("AWS_PROFILE", "default")
	if _, err := s3.Create(context.Background(), config(t, srv, "creds-file", "repo")); !errors.Is(err, s3.ErrAccessDenied) {
		t.Errorf("create with the default profile's wrong key: %v, want ErrAccessDenied", err)
	}
	t.Setenv("AWS_PROFILE", "backup")
	if _, err := s3.Create(context.Background(), config(t, srv, "creds-file", "repo")); err != nil {
		t.Errorf("create with the backup profile's key: %v", err)
	}
}

// Credentials come from the profile of the shared config file when
// neither the environment nor the shared credentials file has them, as
// the AWS CLI takes them; a wrong key there is refused as any other, and
// the credentials file's keys of a profile win over the config file's.
func TestCredentialsFromConfigFile(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	dir := t.TempDir()
	credentialsFile := dir + "/credentials"
	if err := writeFile(credentialsFile, "[both]\naws_access_key_id = "+s3test.AccessKey+"\naws_secret_access_key = not-the-secret-at-all-0000\n"); err != nil {
		t.Fatal(err)
	}
	configFile := dir + "/config"
	content := "[profile wrong]\nregion = " + s3test.Region + "\naws_access_key_id = " + s3test.AccessKey + "\naws_secret_access_key = not-the-secret-at-all-0000\n" +
		"[profile both]\naws_access_key_id = " + s3test.AccessKey + "\naws_secret_access_key = " + s3test.SecretKey + "\n" +
		"[profile backup]\nregion = " + s3test.Region + "\naws_access_key_id = " + s3test.AccessKey + "\naws_secret_access_key = " + s3test.SecretKey + "\n"
	if err := writeFile(configFile, content); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credentialsFile)
	t.Setenv("AWS_CONFIG_FILE", configFile)
	t.Setenv("AWS_PROFILE", "wrong")
	_, err := s3.Create(context.Background(), config(t, srv, "config-file", "repo"))
	if !errors.Is(err, s3.ErrAccessDenied) {
		t.Errorf("create with the config file's wrong key: %v, want ErrAccessDenied", err)
	} else {
		oneLine(t, err)
	}
	// The credentials file's key of a profile wins over the config
	// file's, as for the AWS CLI.
	t.Setenv("AWS_PROFILE", "both")
	if _, err := s3.Create(context.Background(), config(t, srv, "config-file", "repo")); !errors.Is(err, s3.ErrAccessDenied) {
		t.Errorf("create with profile both, wrong in the credentials file: %v, want ErrAccessDenied", err)
	}
	t.Setenv("AWS_PROFILE", "backup")
	if _, err := s3.Create(context.Background(), config(t, srv, "config-file", "repo")); err != nil {
		t.Errorf("create with the config file's key of profile backup: %v", err)
	}
}

// AWS_DEFAULT_REGION names the region when AWS_REGION does not, and
// AWS_REGION wins over it.
func TestDefaultRegion(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.MakeBucket(t, "default-region")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "eu-central-1")
	_, err := s3.Open(context.Background(), config(t, srv, "default-region", "repo"))
	if !errors.Is(err, s3.ErrWrongRegion) {
		t.Errorf("open with AWS_DEFAULT_REGION=eu-central-1: %v, want ErrWrongRegion", err)
	}
	t.Setenv("AWS_DEFAULT_REGION", s3test.Region)
	if _, err := s3.Create(context.Background(), config(t, srv, "default-region", "repo")); err != nil {
		t.Errorf("create with AWS_DEFAULT_REGION=%s: %v", s3test.Region, err)
	}
	t.Setenv("AWS_REGION", s3test.Region)
	t.Setenv("AWS_DEFAULT_REGION", "eu-central-1")
	if _, err := s3.Create(context.Background(), config(t, srv, "default-region", "repo2")); err != nil {
		t.Errorf("create with AWS_REGION=%s and AWS_DEFAULT_REGION=eu-central-1: %v", s3test.Region, err)
	}
}

// AWS_SESSION_TOKEN goes with every request as X-Amz-Security-Token.
// versitygw takes no session tokens, so a server on loopback records the
// header and refuses.
func TestSessionTokenSent(t *testing.T) {
	const token = "session-token-of-nightjar-test"
	tokens := make(chan string, 100)
	recorder := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case tokens <- r.Header.Get("X-Amz-Security-Token"):
		default:
		}
		w.WriteHeader(http.StatusForbidden)
	}))
	t.Cleanup(recorder.Close)
	(&s3test.Server{}).SetEnv(t) // the credentials, without a server
	t.Setenv("AWS_SESSION_TOKEN", token)
	loc, err := s3.ParseLocation(recorder.URL + "/token/repo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Open(context.Background(), s3.Config{Location: loc, BucketLookup: "path"}); err == nil {
		t.Fatal("open on a server that refuses everything succeeded")
	}
	recorder.Close() // no request can come after: tokens may be closed
	close(tokens)
	var n int
	for got := range tokens {
		n++
		if got != token {
			t.Errorf("request %d carried X-Amz-Security-Token %q, want %q", n, got, token)
		}
	}
	if n == 0 {
		t.Error("no request reached the server")
	}
}

// A profile's credential_process is run for the credentials, as the AWS
// CLI runs it (minio-go's shared-files provider does); one that fails is
// refused in one line naming the profile and the process's failure, as
// access denied.
func TestCredentialProcess(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	dir := t.TempDir()
	output := `{"Version": 1, "AccessKeyId": "` + s3test.AccessKey + `", "SecretAccessKey": "` + s3test.SecretKey + `"}`
	scripts := map[string]string{"works.sh": "echo '" + output + "'", "fails.sh": "exit 3"}
	for name, body := range scripts {
		if err := os.WriteFile(dir+"/"+name, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	configFile := dir + "/config"
	content := "[profile process]\ncredential_process = " + dir + "/works.sh --for nightjar\n" +
		"[profile broken]\ncredential_process = " + dir + "/fails.sh --for nightjar\n" +
		"[profile bare]\ncredential_process = " + dir + "/works.sh\n"
	if err := writeFile(configFile, content); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_CONFIG_FILE", configFile)
	t.Setenv("AWS_PROFILE", "process")
	if _, err := s3.Create(context.Background(), config(t, srv, "process", "repo")); err != nil {
		t.Errorf("create with the credentials of profile process's credential_process: %v", err)
	}
	t.Setenv("AWS_PROFILE", "broken")
	_, err := s3.Create(context.Background(), config(t, srv, "process-fails", "repo"))
	if !errors.Is(err, s3.ErrAccessDenied) || !strings.Contains(err.Error(), `credential_process of profile "broken" failed: exit status 3`) {
		t.Fatalf("create with a failing credential_process: %v, want ErrAccessDenied naming the profile and the exit status", err)
	}
	oneLine(t, err)
	// minio-go refuses a command without arguments: named all the same.
	t.Setenv("AWS_PROFILE", "bare")
	_, err = s3.Create(context.Background(), config(t, srv, "process-bare", "repo"))
	if !errors.Is(err, s3.ErrAccessDenied) || !strings.Contains(err.Error(), `credential_process of profile "bare" failed`) {
		t.Fatalf("create with a credential_process of one word: %v, want ErrAccessDenied naming the profile", err)
	}
}

// A shared credentials file that cannot be read is not blamed on the
// profile's credential_process, and its text, which the parser quotes and
// may hold a secret, is in no error: the files are skipped, as minio-go's
// chain skips them, and the server refuses the unsigned request.
func TestUnreadableCredentialsFileNotQuoted(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	dir := t.TempDir()
	const secret = "a-secret-value-0123456789"
	if err := writeFile(dir+"/credentials", "[default]\naws_access_key_id = "+s3test.AccessKey+"\naws_secret_access_key "+secret+"\n"); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(dir+"/config", "[default]\ncredential_process = /bin/false\n"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_PROFILE", "")
	_, err := s3.Create(context.Background(), config(t, srv, "unreadable", "repo"))
	if err == nil {
		t.Fatal("create with an unreadable credentials file succeeded")
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "credential_process") {
		t.Errorf("create with an unreadable credentials file: %v, want no secret and no credential_process blamed", err)
	}
}

// A PUT is sent again after a failure of the connection or the server,
// never after a certificate that does not verify or a failed
// credential_process: no retry mends them.
func TestRetryablePut(t *testing.T) {
	refused := &url.Error{Op: "Put", URL: "https://127.0.0.1/b/k", Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}
	unknownCA := &url.Error{Op: "Put", URL: "https://127.0.0.1/b/k", Err: x509.UnknownAuthorityError{}}
	process := s3.CredentialProcessError("p", &exec.ExitError{})
	paced := &url.Error{Op: "Put", URL: "https://127.0.0.1/b/k", Err: s3.PaceError(fmt.Errorf("bandwidth limit: %w", context.DeadlineExceeded))}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{{"refused connection", refused, true}, {"unknown authority", unknownCA, false}, {"failed credential_process", process, false}, {"bandwidth wait", paced, false}} {
		if got := s3.RetryablePut(c.err); got != c.want {
			t.Errorf("%s: retryable %v, want %v", c.name, got, c.want)
		}
	}
	// A cap's wait that could not be met is neither the network's nor the
	// server's failure: a restore must not stop on it as on a storage gone.
	if err := s3.MapError("save", paced); errors.Is(err, s3.ErrNetwork) || errors.Is(err, repo.ErrStorageUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a failed bandwidth wait maps to %v, want its deadline, not the storage's failure", err)
	}
}
