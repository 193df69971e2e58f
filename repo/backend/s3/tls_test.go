package s3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// Over HTTPS, a server whose certificate is signed by the CA file is
// trusted and a save and a load go through; without the CA file the
// certificate is ErrUntrusted, in one line.
func TestTLS(t *testing.T) {
	srv := s3test.StartTLS(t)
	srv.SetEnv(t)
	ctx := context.Background()
	cfg := config(t, srv, "tls", "repo")
	if !cfg.Secure {
		t.Fatalf("location %s is not https", srv.Location("tls", "repo"))
	}
	_, err := s3.Create(ctx, cfg)
	if !errors.Is(err, s3.ErrUntrusted) {
		t.Fatalf("create over https without the CA file: %v, want ErrUntrusted", err)
	}
	oneLine(t, err)

	cfg.CAFile = srv.CAFile
	be, err := s3.Create(ctx, cfg)
	if err != nil {
		t.Fatalf("create over https with the CA file: %v", err)
	}
	h := repo.Handle{Type: repo.PackFile, Name: strings.Repeat("7e", 32)}
	data := []byte("a pack sent over TLS")
	if err := be.Save(ctx, h, data); err != nil {
		t.Fatalf("save over https: %v", err)
	}
	if got, err := be.Load(ctx, h, 0, -1); err != nil || !bytes.Equal(got, data) {
		t.Errorf("load over https: %q, %v; want %q", got, err, data)
	}
	if _, err := s3.Open(ctx, s3.Config{Location: cfg.Location, BucketLookup: "path"}); !errors.Is(err, s3.ErrUntrusted) {
		t.Errorf("open over https without the CA file: %v, want ErrUntrusted", err)
	}
}

// A certificate of an unknown authority is refused at the first
// connection: no retry changes it, so none is made.
func TestUntrustedNotRetried(t *testing.T) {
	srv := s3test.StartTLS(t)
	srv.SetEnv(t)
	forwarder := startCountingForwarder(t, srv.Endpoint)
	loc, err := s3.ParseLocation("https://" + forwarder.addr + "/untrusted/repo")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s3.Create(context.Background(), s3.Config{Location: loc, BucketLookup: "path"})
	if !errors.Is(err, s3.ErrUntrusted) {
		t.Fatalf("create over https without the CA file: %v, want ErrUntrusted", err)
	}
	if n := forwarder.connections.Load(); n != 1 {
		t.Errorf("an untrusted certificate took %d connections, want 1 (no retries)", n)
	}
}

// countingForwarder passes TCP connections on to a server and counts them.
type countingForwarder struct {
	addr        string
	connections atomic.Int64
}

// startCountingForwarder listens on a loopback port and forwards each
// connection to target until t ends.
func startCountingForwarder(t *testing.T, target string) *countingForwarder {
	t.Helper()
	f := &countingForwarder{}
	f.addr = serveLoopback(t, func(client net.Conn) {
		f.connections.Add(1)
		server, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer server.Close()
		go func() {
			_, _ = io.Copy(server, client)
			server.Close()
		}()
		_, _ = io.Copy(client, server)
	})
	return f
}
