package s3

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Timeouts of the connections to the server. A request is bounded by
// these, not by a deadline on the whole request: a large upload on a slow
// line may take long, but never waits long for a byte.
const (
	dialTimeout         = 30 * time.Second
	tlsHandshakeTimeout = 15 * time.Second
	idleConnTimeout     = 90 * time.Second
)

// responseHeaderTimeout bounds the wait for an answer after the request is
// sent: long, since a server assembling a multipart upload is slow to
// answer. A variable only so that a test of a server that never answers
// ends soon.
var responseHeaderTimeout = 2 * time.Minute

// maxRetries is how many times the client tries a request that failed in a
// way worth trying again (5xx, 503 SlowDown and other throttling, a
// refused or broken connection), waiting between tries with full jitter
// from 200 ms doubling to at most 1 s: about 10 s in all, enough to ride
// out a server's restart or a short throttling without stalling a backup
// for minutes on a server that is down.
const maxRetries = 10

// newBackend makes the client of cfg; it asks the server nothing.
func newBackend(cfg Config) (*Backend, error) {
	lookup, err := bucketLookup(cfg.BucketLookup)
	if err != nil {
		return nil, err
	}
	transport, err := newTransport(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	region := cfg.Region
	if region == "" {
		region = envRegion()
	}
	pace := &pacing{}
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:        credentialChain(),
		Secure:       cfg.Secure,
		Transport:    pacedTransport{next: untrustedFinal{transport}, pace: pace},
		Region:       region,
		BucketLookup: lookup,
		MaxRetries:   maxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Location, err)
	}
	return &Backend{client: client, core: minio.Core{Client: client}, transport: transport, pace: pace, loc: cfg.Location, region: region,
		readAhead: newReadAhead(readAheadWindow, readAheadBudget)}, nil
}

// bucketLookup returns the client's setting for the bucket_lookup value s.
func bucketLookup(s string) (minio.BucketLookupType, error) {
	switch s {
	case "", "auto":
		return minio.BucketLookupAuto, nil
	case "path":
		return minio.BucketLookupPath, nil
	case "dns":
		return minio.BucketLookupDNS, nil
	}
	return 0, fmt.Errorf("bad s3 bucket lookup %q (use auto, path or dns)", s)
}

// credentialChain takes the credentials from the standard AWS places in
// their usual order: the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the profile AWS_PROFILE (or
// default) of the shared credentials file (AWS_SHARED_CREDENTIALS_FILE or
// ~/.aws/credentials) and of the shared config file (AWS_CONFIG_FILE or
// ~/.aws/config), whose keys the credentials file's override, then an
// instance's or a container's role. FileAWSCredentials without a file
// name reads both files, and runs a profile's credential_process; when
// that fails, the chain stops with the failure (an error wrapping
// ErrAccessDenied) instead of trying the role and then going unsigned.
func credentialChain() *credentials.Credentials {
	return credentials.New(&chain{providers: []credentials.Provider{
		&credentials.EnvAWS{},
		&sharedFiles{},
		&credentials.IAM{},
	}})
}

// chain is minio-go's credentials.Chain, except that a failed
// credential_process ends it with that failure: minio-go's chain drops a
// provider's error and goes on to the next, so the requests went out
// unsigned and the server's refusal named neither the profile nor the
// process.
type chain struct {
	providers []credentials.Provider
	current   credentials.Provider // the provider of the credentials, nil when none had any
}

func (c *chain) RetrieveWithCredContext(cc *credentials.CredContext) (credentials.Value, error) {
	c.current = nil
	for _, p := range c.providers {
		v, err := p.RetrieveWithCredContext(cc)
		if v.AccessKeyID != "" || v.SecretAccessKey != "" {
			c.current = p
			return v, nil
		}
		var failed *credentialProcessError
		if errors.As(err, &failed) {
			return credentials.Value{}, err
		}
	}
	return credentials.Value{SignerType: credentials.SignatureAnonymous}, nil
}

func (c *chain) Retrieve() (credentials.Value, error) { return c.RetrieveWithCredContext(nil) }

// IsExpired asks again each time when no provider had credentials, as
// minio-go's chain does.
func (c *chain) IsExpired() bool { return c.current == nil || c.current.IsExpired() }

// sharedFiles is minio-go's provider of the shared credentials and config
// files (which runs a profile's credential_process, named in either file)
// with the failure of a profile's credential_process told apart from a
// missing or unreadable file or profile. Only the process's own failures
// are: the files' parser quotes the line it could not read, which may hold
// a secret, and such an error is dropped as minio-go's chain drops it.
type sharedFiles struct{ credentials.FileAWSCredentials }

func (p *sharedFiles) RetrieveWithCredContext(cc *credentials.CredContext) (credentials.Value, error) {
	v, err := p.FileAWSCredentials.RetrieveWithCredContext(cc)
	if processFailed(err) {
		return v, &credentialProcessError{profile: envProfile(), err: err}
	}
	return v, err
}

// processFailed reports whether err is a credential_process's own
// failure: it could not be started (or is a bare command, which minio-go
// refuses), it failed, or what it printed is not the JSON the AWS CLI
// takes.
func processFailed(err error) bool {
	var exit *exec.ExitError
	var start *exec.Error
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	return errors.As(err, &exit) || errors.As(err, &start) || errors.As(err, &syntax) || errors.As(err, &typ) ||
		err != nil && err.Error() == oneWordProcess
}

// oneWordProcess is minio-go's refusal of a credential_process without
// arguments (v7.4.1 reads its first word as the command only when more
// follow), which has no type of its own.
const oneWordProcess = "invalid credential process args"

func (p *sharedFiles) Retrieve() (credentials.Value, error) { return p.RetrieveWithCredContext(nil) }

// envRegion returns the region the environment names: AWS_REGION,
// AWS_DEFAULT_REGION, else the region of the profile (AWS_PROFILE or
// default) in the shared config file (AWS_CONFIG_FILE or ~/.aws/config).
func envRegion() string {
	for _, v := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
		if r := os.Getenv(v); r != "" {
			return r
		}
	}
	return profileValue(configFile(), envProfile(), "region")
}

// configFile is the shared config file: AWS_CONFIG_FILE, else
// ~/.aws/config ("" without a home).
func configFile() string {
	if file := os.Getenv("AWS_CONFIG_FILE"); file != "" {
		return file
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".aws", "config")
}

// envProfile is the profile named by AWS_PROFILE, else default.
func envProfile() string {
	if profile := os.Getenv("AWS_PROFILE"); profile != "" {
		return profile
	}
	return "default"
}

// profileValue returns the value of key in profile of the AWS config file
// (whose sections are [default] and [profile NAME]), or "".
func profileValue(file, profile, key string) string {
	if file == "" {
		return ""
	}
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	want := "profile " + profile
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section := strings.Join(strings.Fields(line[1:len(line)-1]), " ")
			in = section == want || profile == "default" && section == "default"
			continue
		}
		if k, v, ok := strings.Cut(line, "="); in && ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// newTransport returns the HTTP transport: the system's roots plus those of
// caFile, and timeouts on every step of a connection.
func newTransport(caFile string) (*http.Transport, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %v", ErrBadCAFile, caFile, err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w %s: no PEM certificate in it", ErrBadCAFile, caFile)
		}
		tlsConfig.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		IdleConnTimeout:       idleConnTimeout,
		ExpectContinueTimeout: time.Second,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		// S3 sends objects as they are stored; asking for gzip would make
		// Go undo an encoding the server did not apply.
		DisableCompression: true,
	}, nil
}

// untrustedFinal hands the client a server certificate signed by an
// unknown authority as the bare x509.UnknownAuthorityError, not wrapped by
// package tls: minio-go retries every failed request but one whose error
// is that bare value, so a private CA without s3.ca_file cost ten
// connections and about 7 s of backoff before the answer no retry
// changes.
type untrustedFinal struct{ *http.Transport }

func (t untrustedFinal) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Transport.RoundTrip(req)
	var unknown x509.UnknownAuthorityError
	if err != nil && errors.As(err, &unknown) {
		return nil, unknown
	}
	return resp, err
}
