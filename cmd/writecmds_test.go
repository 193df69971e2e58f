package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/chunker"
)

// cliEnv is a world for running the command line in this process: a HOME
// and cache of its own, a password file, and repositories made with a
// cheap key derivation (the tests open them many times).
type cliEnv struct {
	t      *testing.T
	dir    string
	pwFile string
}

const cliPassword = "correct horse battery staple"

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	dir := t.TempDir()
	e := &cliEnv{t: t, dir: dir, pwFile: filepath.Join(dir, "password")}
	if err := os.WriteFile(e.pwFile, []byte(cliPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "home", ".cache"))
	// check and prune sweep killed sorts' files from the temporary folder:
	// one of its own keeps other processes' files out of what they report.
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", filepath.Join(dir, "tmp"))
	t.Setenv("TZ", "UTC")
	for _, name := range []string{"NIGHTJAR_REPOSITORY", "NIGHTJAR_PASSWORD", "NIGHTJAR_PASSWORD_FILE", "NIGHTJAR_PASSWORD_COMMAND",
		"NIGHTJAR_FROM_REPOSITORY", "NIGHTJAR_FROM_PASSWORD", "NIGHTJAR_FROM_PASSWORD_FILE", "NIGHTJAR_FROM_PASSWORD_COMMAND",
		"NIGHTJAR_CONFIG", "NIGHTJAR_STATE", "NIGHTJAR_LOG_FORMAT", "NIGHTJAR_LOG_LEVEL"} {
		t.Setenv(name, "") // restored when the test ends
		os.Unsetenv(name)
	}
	t.Setenv("NIGHTJAR_PASSWORD_FILE", e.pwFile)
	return e
}

// initRepo makes a repository at dir/name and returns its path.
func (e *cliEnv) initRepo(name string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	be, err := local.Create(p)
	if err != nil {
		e.t.Fatal(err)
	}
	cp := chunker.DefaultParams
	r, err := repo.Init(context.Background(), be, []byte(cliPassword), repo.InitOptions{
		KDF:     repo.KDFParams{Algorithm: "argon2id", Time: 1, MemoryKiB: 64, Threads: 1},
		Chunker: repo.ChunkerParams{Min: cp.Min, Avg: cp.Avg, Max: cp.Max},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	r.Close()
	return p
}

// cliResult is one run of the command line.
type cliResult struct {
	code           int
	stdout, stderr string
}

// run runs the command line with args.
func (e *cliEnv) run(args ...string) cliResult {
	e.t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(append([]string{"nightjar"}, args...), &stdout, &stderr)
	return cliResult{code, stdout.String(), stderr.String()}
}

// expect runs the command line and fails the test unless it exits with
// want.
func (e *cliEnv) expect(want int, args ...string) cliResult {
	e.t.Helper()
	res := e.run(args...)
	if res.code != want {
		e.t.Fatalf("nightjar %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), res.code, want, res.stdout, res.stderr)
	}
	return res
}

// lines is the lines of out, without the last line break.
func lines(out string) []string {
	if out == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
}

// writeTree writes files (path relative to root: content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// objectNames lists the objects of one type of a local repository, sorted,
// from its folder: what the repository holds, not what nightjar says.
func objectNames(t *testing.T, repoDir string, kind repo.FileType) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(filepath.Join(repoDir, string(kind)), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			names = append(names, d.Name())
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// backupSnapshot backs up src into the repository at repoDir with args and
// returns the new snapshot's ID.
func (e *cliEnv) backupSnapshot(repoDir string, args ...string) string {
	e.t.Helper()
	before := objectNames(e.t, repoDir, repo.SnapshotFile)
	e.expect(ExitOK, append([]string{"backup", "-r", repoDir}, args...)...)
	for _, id := range objectNames(e.t, repoDir, repo.SnapshotFile) {
		if !slices.Contains(before, id) {
			return id
		}
	}
	e.t.Fatal("backup made no snapshot")
	return ""
}
