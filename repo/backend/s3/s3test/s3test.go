package s3test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// The root credentials and region of the servers started.
const (
	AccessKey = "nightjar-test-access"
	SecretKey = "nightjar-test-secret-key-0123456789"
	Region    = "us-east-1"
)

// installHint says how to get versitygw, for the failure of a test that
// needs it.
const installHint = "install it with: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 (or name it in NIGHTJAR_VERSITYGW)"

// Server is a running versitygw.
type Server struct {
	// Endpoint is its host:port.
	Endpoint string
	// Dir is the folder that holds its buckets, one folder each.
	Dir string
	// CAFile is, for a server started by StartTLS, the PEM file of its
	// self-signed certificate: the CA a client must trust. "" for plain
	// HTTP.
	CAFile string
}

// Find returns the path of versitygw: NIGHTJAR_VERSITYGW, else versitygw on
// PATH, else in $(go env GOPATH)/bin.
func Find() (string, error) {
	if p := os.Getenv("NIGHTJAR_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("NIGHTJAR_VERSITYGW: %w", err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = string(bytes.TrimSpace(out))
		}
	}
	if gopath != "" {
		p := filepath.Join(filepath.SplitList(gopath)[0], "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("versitygw not found on PATH, in $(go env GOPATH)/bin or NIGHTJAR_VERSITYGW")
}

// startTries is how many free ports Start tries: another process may take
// the port between its choice and the server's bind.
const startTries = 3

// connectTries bounds the connections Start tries while the server comes
// up, each after the last was refused.
const connectTries = 3000

// Start starts versitygw on a free loopback port, with a new folder of t as
// its storage, and stops it when t ends. It fails t when versitygw cannot
// be found or does not come up.
func Start(t testing.TB) *Server {
	t.Helper()
	return startServer(t, "")
}

// StartTLS is Start with the server answering HTTPS only, with a
// self-signed certificate for 127.0.0.1 made for t, whose PEM file is the
// Server's CAFile.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	certDir := t.TempDir()
	if err := writeSelfSigned(certDir); err != nil {
		t.Fatalf("s3test: make a certificate: %v", err)
	}
	return startServer(t, certDir)
}

// startServer starts versitygw, serving TLS with the cert.pem and key.pem
// of certDir unless certDir is "".
func startServer(t testing.TB, certDir string) *Server {
	t.Helper()
	bin, err := Find()
	if err != nil {
		t.Fatalf("s3test: %v; %s", err, installHint)
	}
	dir := t.TempDir()
	var last error
	for range startTries {
		s, err := start(t, bin, dir, certDir)
		if err == nil {
			return s
		}
		last = err
	}
	t.Fatalf("s3test: start versitygw: %v", last)
	return nil
}

func start(t testing.TB, bin, dir, certDir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	endpoint := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := []string{"--port", endpoint, "--quiet"}
	caFile := ""
	if certDir != "" {
		caFile = filepath.Join(certDir, "cert.pem")
		args = append(args, "--cert", caFile, "--key", filepath.Join(certDir, "key.pem"))
	}
	cmd := exec.Command(bin, append(args, "posix", dir)...)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey, "VGW_REGION="+Region)
	var output lockedBuffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	for range connectTries {
		select {
		case err := <-exited:
			return nil, fmt.Errorf("versitygw on %s exited: %v: %s", endpoint, err, output.String())
		default:
		}
		conn, err := net.DialTimeout("tcp", endpoint, time.Second)
		if err == nil {
			conn.Close()
			t.Cleanup(stop)
			return &Server{Endpoint: endpoint, Dir: dir, CAFile: caFile}, nil
		}
		// Not listening yet: wait for the process a moment, or its exit.
		select {
		case err := <-exited:
			return nil, fmt.Errorf("versitygw on %s exited: %v: %s", endpoint, err, output.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	stop()
	return nil, fmt.Errorf("versitygw on %s did not accept a connection after %d tries: %s", endpoint, connectTries, output.String())
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Location returns the s3: location of prefix in bucket on the server
// ("" prefix: the bucket's root).
func (s *Server) Location(bucket, prefix string) string {
	scheme := "http"
	if s.CAFile != "" {
		scheme = "https"
	}
	loc := "s3:" + scheme + "://" + s.Endpoint + "/" + bucket
	if prefix != "" {
		loc += "/" + prefix
	}
	return loc
}

// Env returns the environment variables that give a child process the
// server's credentials and region, and keep it from reading the user's
// own AWS files.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_REGION=" + Region,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_PROFILE=",
		"AWS_SESSION_TOKEN=",
		"AWS_DEFAULT_REGION=",
	}
}

// SetEnv sets Env in this process for the duration of t (which therefore
// must not be parallel).
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Client returns a client of the server with its root credentials, for
// tests that look at the bucket behind nightjar's back.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	opts := &minio.Options{
		Creds:        credentials.NewStaticV4(AccessKey, SecretKey, ""),
		Region:       Region,
		BucketLookup: minio.BucketLookupPath,
	}
	if s.CAFile != "" {
		caPEM, err := os.ReadFile(s.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(caPEM)
		opts.Secure = true
		opts.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	}
	c, err := minio.New(s.Endpoint, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeSelfSigned writes to dir a new self-signed certificate for the IP
// address 127.0.0.1 (cert.pem), valid for a day, and its key (key.pem).
func writeSelfSigned(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "nightjar s3test"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// MakeBucket makes the bucket name on the server.
func (s *Server) MakeBucket(t testing.TB, name string) {
	t.Helper()
	if err := s.Client(t).MakeBucket(context.Background(), name, minio.MakeBucketOptions{Region: Region}); err != nil {
		t.Fatalf("s3test: make bucket %s: %v", name, err)
	}
}

// Keys returns the keys of every object in bucket under prefix.
func (s *Server) Keys(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	for obj := range s.Client(t).ListObjectsIter(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("s3test: list %s/%s: %v", bucket, prefix, obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	return keys
}

// lockedBuffer is the server's output, written by the process's copier
// goroutines and read on failure.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
