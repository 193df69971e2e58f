// Package buildbin builds the nightjar binary for end-to-end tests, runs
// it (Run, Result) and makes the repositories those tests start from
// (CreateRepository).
//
// The go command caches a package's test result and reuses it while the
// test binary and the files and environment the tests read are unchanged.
// An end-to-end test builds nightjar with a separate `go build`, which the
// cache cannot see; so each such package has a test that calls
// ReadSources, which opens every file the binary is built from and so makes
// any change to them a change to the tests' inputs. (Files read in TestMain
// before m.Run do not count: the go command records only what tests read.)
// It must never be imported by non-test code.
package buildbin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Result is one finished run of the binary.
type Result struct {
	Args    []string
	Code    int
	Stdout  string
	Stderr  string
	Elapsed time.Duration
}

func (r Result) String() string {
	return fmt.Sprintf("nightjar %q: exit %d after %s\n--- stdout:\n%s\n--- stderr:\n%s",
		r.Args, r.Code, r.Elapsed.Round(time.Millisecond), r.Stdout, r.Stderr)
}

// Run runs cmd, a run of the binary with args, to its end and collects
// its output. An error means it did not run or did not exit by itself;
// the Result then holds what it printed.
func Run(cmd *exec.Cmd, args []string) (Result, error) {
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := Result{Args: args, Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr) && exitErr.Exited():
		res.Code = exitErr.ExitCode()
	default:
		return res, err
	}
	return res, nil
}

// Build compiles nightjar into a new temporary folder (readable by every
// user, for tests that run it as another one) and returns the binary's
// path and a function that removes the folder. When the tests themselves
// run under the race detector (go test -race), so does the binary, which
// then exits with status 66 after reporting a race; otherwise it is the
// binary users get, as BuildStatic builds it.
func Build() (string, func(), error) {
	return build(raceDetector, "")
}

// RaceEnv is the GORACE setting for the environment of a binary Build
// made: the race runtime's exit sleep (one second by default, which it
// spends waiting for late reports of goroutines still running) is turned
// off, since a test starts the binary hundreds of times and a race still
// ends the process with status 66 when it is found. Options the caller
// gives in GORACE come after it, and so win.
func RaceEnv() string {
	return strings.TrimSpace("GORACE=atexit_sleep_ms=0 " + os.Getenv("GORACE"))
}

// BuildStatic compiles the binary users get: static, without cgo.
func BuildStatic() (string, func(), error) {
	return build(false, "")
}

// BuildTagged compiles the binary as BuildStatic does (without the race
// detector, also under go test -race), with the build tags given
// (comma-separated), for tests that need code users never get and run the
// binary hundreds of times (the crash test's hook, tag crashtest).
func BuildTagged(tags string) (string, func(), error) {
	return build(false, tags)
}

func build(race bool, tags string) (string, func(), error) {
	root, err := moduleRoot()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "nightjar-test-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	bin := filepath.Join(dir, "nightjar")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	args, cgo := []string{"build", "-o", bin, "."}, "CGO_ENABLED=0"
	if race {
		// The race detector's runtime needs cgo.
		args, cgo = []string{"build", "-race", "-o", bin, "."}, "CGO_ENABLED=1"
	}
	if tags != "" {
		args = append([]string{"build", "-tags", tags}, args[1:]...)
	}
	build := exec.Command(goTool, args...)
	build.Dir = root
	build.Env = append(os.Environ(), cgo)
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build nightjar: %v\n%s", err, out)
	}
	return bin, cleanup, nil
}

// moduleRoot finds the folder of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// ReadSources opens every file the binary is built from. Call it from a
// test, so that the go command's test cache depends on those files.
func ReadSources() error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	for _, name := range []string{"go.mod", "go.sum"} {
		if _, err := os.ReadFile(filepath.Join(root, name)); err != nil {
			return err
		}
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".sql") {
			_, err := os.ReadFile(path)
			return err
		}
		return nil
	})
}

// Shared is one build that several tests of a package use: made by the
// first test that asks for it, so that tests running in parallel do not
// each compile the same binary, and removed after the tests (Remove).
type Shared struct {
	build   func() (string, func(), error)
	once    sync.Once
	path    string
	cleanup func()
	err     error
}

// NewShared is a Shared made by build (BuildStatic, or a closure calling
// BuildTagged).
func NewShared(build func() (string, func(), error)) *Shared {
	return &Shared{build: build}
}

// Path builds the binary at the first call and returns its path, or the
// error of that one build.
func (s *Shared) Path() (string, error) {
	s.once.Do(func() { s.path, s.cleanup, s.err = s.build() })
	return s.path, s.err
}

// Remove deletes the binary if it was built. Call it after m.Run.
func (s *Shared) Remove() {
	s.once.Do(func() { s.err = errors.New("build nightjar: asked for after the tests ended") })
	if s.cleanup != nil {
		s.cleanup()
	}
}
