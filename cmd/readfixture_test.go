package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// readFixture is a repository with three real backups, for the commands
// that read snapshots (ls, restore, diff, find, stats, dump):
//
//	first  (host h1, tag daily, 10:00): src with a.txt, docs/{Readme.MD,notes.txt}, link -> a.txt, "esc\x1bname", big.bin
//	second (host h2, tag weekly, 11:00): src with a.txt changed, docs/Readme.MD chmod 0600,
//	       docs/notes.txt removed, link now a file, new.txt and newdir/x added
//	third  (host h1, tag daily, 12:00): other, with other.txt
//
// so that "latest" is third, and the filters pick the others.
type readFixture struct {
	t            *testing.T
	src, other   string // the backed-up folders
	big          []byte // src/big.bin: random, many chunks
	repoLocation string
}

// The fixture's snapshot IDs, drawn by each backup as every backup's are
// (newReadFixture sets them; the tests that use them do not run in
// parallel: the fixture sets the environment).
var firstID, secondID, thirdID string

// fixtureTime is the modification time of every fixture entry.
var fixtureTime = time.Date(2026, 11, 30, 8, 15, 0, 0, time.UTC)

func newReadFixture(t *testing.T) *readFixture {
	t.Helper()
	dir := t.TempDir()
	f := &readFixture{t: t, src: filepath.Join(dir, "src"), other: filepath.Join(dir, "other"),
		repoLocation: filepath.Join(t.TempDir(), "repo")}
	be, err := local.Create(f.repoLocation)
	if err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t, be)
	pwFile := filepath.Join(t.TempDir(), "password")
	writeFixtureFile(t, pwFile, "pw\n", 0o600)
	t.Setenv("NIGHTJAR_REPOSITORY", f.repoLocation)
	t.Setenv("NIGHTJAR_PASSWORD_FILE", pwFile)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())

	f.big = make([]byte, 1<<20)
	for i := range f.big { // deterministic, incompressible enough to make many chunks
		f.big[i] = byte((i * 7919) ^ (i >> 7) ^ (i >> 13))
	}
	writeFixtureFile(t, filepath.Join(f.src, "a.txt"), "alpha\n", 0o644)
	writeFixtureFile(t, filepath.Join(f.src, "docs", "Readme.MD"), "readme\n", 0o644)
	writeFixtureFile(t, filepath.Join(f.src, "docs", "notes.txt"), "notes\n", 0o640)
	writeFixtureFile(t, filepath.Join(f.src, "esc\x1bname"), "e\n", 0o644)
	writeFixtureFile(t, filepath.Join(f.src, "big.bin"), string(f.big), 0o644)
	if err := os.Symlink("a.txt", filepath.Join(f.src, "link")); err != nil {
		t.Fatal(err)
	}
	f.settle(f.src)
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	firstID = f.backup(r, "h1", "daily", base, f.src)

	writeFixtureFile(t, filepath.Join(f.src, "a.txt"), "alpha 2\n", 0o644)
	if err := os.Chmod(filepath.Join(f.src, "docs", "Readme.MD"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"docs/notes.txt", "link"} {
		if err := os.Remove(filepath.Join(f.src, gone)); err != nil {
			t.Fatal(err)
		}
	}
	writeFixtureFile(t, filepath.Join(f.src, "link"), "now a file\n", 0o644)
	writeFixtureFile(t, filepath.Join(f.src, "new.txt"), "new\n", 0o644)
	writeFixtureFile(t, filepath.Join(f.src, "newdir", "x"), "x\n", 0o644)
	f.settle(f.src)
	secondID = f.backup(r, "h2", "weekly", base.Add(time.Hour), f.src)

	writeFixtureFile(t, filepath.Join(f.other, "other.txt"), "other\n", 0o644)
	f.settle(f.other)
	thirdID = f.backup(r, "h1", "daily", base.Add(2*time.Hour), f.other)
	return f
}

// settle gives every entry below dir, and dir, fixtureTime as its
// modification time, so that only the changes a test makes show in a diff.
func (f *readFixture) settle(dir string) {
	f.t.Helper()
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.Mode()&os.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, fixtureTime, fixtureTime)
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// backup makes a snapshot of path and returns its ID.
func (f *readFixture) backup(r *repo.Repository, host, tag string, at time.Time, path string) string {
	f.t.Helper()
	res, err := backup.Backup(context.Background(), r, backup.Options{Paths: []string{path}, Tags: []string{tag},
		Hostname: host, Time: at, Workers: 1})
	if err != nil {
		f.t.Fatalf("backup %s: %v", path, err)
	}
	return res.Snapshot.ID
}

// with returns f for the subtest t.
func (f *readFixture) with(t *testing.T) *readFixture {
	g := *f
	g.t = t
	return &g
}

// run runs "nightjar ARGS..." as the binary does and returns what it
// printed and its exit code.
func (f *readFixture) run(args ...string) (stdout, stderr string, code int) {
	f.t.Helper()
	var out, errOut bytes.Buffer
	code = Main(append([]string{"nightjar"}, args...), &out, &errOut)
	return out.String(), errOut.String(), code
}

// expect runs the command and fails the test unless it exits with want.
func (f *readFixture) expect(want int, args ...string) (stdout, stderr string) {
	f.t.Helper()
	stdout, stderr, code := f.run(args...)
	if code != want {
		f.t.Fatalf("nightjar %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	return stdout, stderr
}

func writeFixtureFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
