//go:build linux

// Package e2e runs the real nightjar binary as a separate process and checks
// what it does to files, repositories and its own output, from the outside.
//
// TestMain builds the binary once. Every test gets its own repository,
// password file, HOME and cache folder in t.TempDir(). A local repository
// is made in-process with a cheap key derivation (env.init), so that the
// binary's Argon2id does not dominate the tests' time; the tests of init
// run the binary's. Trees are generated
// by the tests and compared by a walk written here, not by nightjar code.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/internal/buildbin"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
)

// binPath is the nightjar binary built by TestMain.
var binPath string

// The builds without the race detector that some tests use, each made
// once for the tests that ask for it: the binary users get, and the one
// with the crash test's hook (tag crashtest).
var (
	staticBinary    = buildbin.NewShared(buildbin.BuildStatic)
	crashtestBinary = buildbin.NewShared(func() (string, func(), error) { return buildbin.BuildTagged("crashtest") })
)

// sharedBinary is the path of a shared build; a failed build fails the
// test.
func sharedBinary(t *testing.T, s *buildbin.Shared) string {
	t.Helper()
	bin, err := s.Path()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// helperEnv makes the test binary act as a helper process instead of
// running tests (see runHelper).
const helperEnv = "NIGHTJAR_E2E_HELPER"

func TestMain(m *testing.M) {
	if h := os.Getenv(helperEnv); h != "" {
		os.Exit(runHelper(h))
	}
	os.Exit(buildAndRun(m))
}

// binaryEnv names a nightjar binary to test instead of building one, for
// testing an installed or released binary.
const binaryEnv = "NIGHTJAR_E2E_BINARY"

func buildAndRun(m *testing.M) int {
	defer staticBinary.Remove()
	defer crashtestBinary.Remove()
	if bin := os.Getenv(binaryEnv); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		binPath = abs
		return m.Run()
	}
	bin, cleanup, err := buildbin.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer cleanup()
	binPath = bin
	return m.Run()
}

// runHelper runs one helper role in a child process started by a test.
func runHelper(role string) int {
	switch role {
	case "hold-exclusive-lock":
		return holdExclusiveLock()
	}
	fmt.Fprintf(os.Stderr, "unknown helper role %q\n", role)
	return 2
}

// holdExclusiveLock takes an exclusive lock on the repository named by
// NIGHTJAR_REPOSITORY, prints "locked" and sleeps until it is killed. The
// only command that takes an exclusive lock (forget) lets it go as soon as
// it is done, so the test takes one through the repository package.
func holdExclusiveLock() int {
	ctx := context.Background()
	be, err := local.Open(os.Getenv("NIGHTJAR_REPOSITORY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pw, err := os.ReadFile(os.Getenv("NIGHTJAR_PASSWORD_FILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	r, err := repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) {
		return bytes.TrimRight(pw, "\r\n"), nil
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := r.Lock(ctx, true, "e2e exclusive holder"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	time.Sleep(2 * time.Minute)
	return 0
}
