package s3_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo/backend/s3"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// A server that takes the request and never answers ends in ErrNetwork
// naming the timeout, after the client's retries, instead of a hang.
func TestResponseHeaderTimeout(t *testing.T) {
	(&s3test.Server{}).SetEnv(t) // the credentials, without a server
	s3.SetResponseHeaderTimeout(t, 20*time.Millisecond)
	addr := startSilentServer(t)
	loc, err := s3.ParseLocation("http://" + addr + "/silent/repo")
	if err != nil {
		t.Fatal(err)
	}
	_, err = s3.Open(context.Background(), s3.Config{Location: loc, BucketLookup: "path"})
	if !errors.Is(err, s3.ErrNetwork) || !strings.Contains(err.Error(), "timeout awaiting response headers") {
		t.Fatalf("open on a server that never answers: %v, want ErrNetwork naming the timeout", err)
	}
	oneLine(t, err)
}

// startSilentServer listens on a loopback port, accepts connections and
// reads what comes, but never answers, until t ends; it returns its
// address.
func startSilentServer(t *testing.T) string {
	t.Helper()
	return serveLoopback(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
}
