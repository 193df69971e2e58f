package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// The fixed requests of the commands on S3 (issue 15): no HEAD in backup,
// restore, snapshots or check (the config is read with one GET, a lock
// released with one DELETE, a new snapshot saved with one PUT); snapshot
// records read from the local cache once saved or read (the parent of a
// backup, latest of a restore); and check reading every snapshot record
// and index file from the bucket, never from the cache, which it must not
// trust.
func TestS3CommandRequests(t *testing.T) {
	home := cleanEnvironment(t)
	srv := s3test.Start(t)
	srv.SetEnv(t)
	p, err := faultproxy.Start("http://"+srv.Endpoint, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	location := "s3:" + p.URL() + "/commands/repo"
	t.Setenv("NIGHTJAR_REPOSITORY", location)
	t.Setenv("NIGHTJAR_PASSWORD", "pw")
	be, err := backend.Create(context.Background(), location)
	if err != nil {
		t.Fatal(err)
	}
	repotest.New(t, be).Close() // init's, with a quick key derivation
	source := filepath.Join(home, "source")
	if err := os.MkdirAll(source, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(source, "file"), bytes.Repeat([]byte("nightjar "), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	// step runs one command and returns its requests by method and folder.
	step := func(args ...string) map[string]int64 {
		t.Helper()
		p.ResetCounts()
		if res := runMain(args...); res.code != ExitOK {
			t.Fatalf("nightjar %s: %s", strings.Join(args, " "), res)
		}
		return p.Counts().ByFolder
	}
	heads := func(by map[string]int64) string {
		var s []string
		for k, n := range by {
			// The lease's refresh HEADs its own lock when a step outlasts
			// a fifth of the lease: under load it may, so locks are not
			// counted; the HEADs this test is about are of other objects.
			if strings.HasPrefix(k, "HEAD ") && k != "HEAD locks" {
				s = append(s, fmt.Sprintf("%s %d", k, n))
			}
		}
		return strings.Join(s, ", ")
	}

	for _, name := range []string{"first backup", "unchanged re-backup"} {
		by := step("backup", source)
		if h := heads(by); h != "" {
			t.Errorf("%s: %s, want no HEAD", name, h)
		}
		if n := by["GET snapshots"]; n != 0 {
			t.Errorf("%s: %d reads of snapshot records from the bucket, want 0 (the parent's copy is current)", name, n)
		}
		if by["PUT snapshots"] != 1 {
			t.Errorf("%s: requests %v, want one PUT of its snapshot", name, by)
		}
	}
	for _, args := range [][]string{{"snapshots"}, {"restore", "latest", "--target", filepath.Join(home, "restored")}} {
		by := step(args...)
		if h := heads(by); h != "" {
			t.Errorf("%s: %s, want no HEAD", args[0], h)
		}
		if n := by["GET snapshots"]; n != 0 {
			t.Errorf("%s: %d reads of snapshot records from the bucket, want 0", args[0], n)
		}
	}
	restored, err := os.ReadFile(filepath.Join(home, "restored", source, "file"))
	if err != nil || len(restored) != 9000 {
		t.Errorf("restored file: %d bytes, %v", len(restored), err)
	}
	indexFiles := len(srv.Keys(t, "commands", "repo/index/"))
	by := step("check")
	if h := heads(by); h != "" {
		t.Errorf("check: %s, want no HEAD", h)
	}
	if by["GET snapshots"] != 2 || by["GET index"] != int64(indexFiles) {
		t.Errorf("check: %d reads of snapshot records and %d of index files from the bucket, want 2 and %d (check never reads the cache)",
			by["GET snapshots"], by["GET index"], indexFiles)
	}
}
