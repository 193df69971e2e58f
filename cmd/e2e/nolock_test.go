//go:build linux

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadOnlyRepository reads a repository that cannot be written (issue
// 16, item 6): on a read-only bind mount and on a full file system, the
// commands that only read work with --no-lock and write nothing, and
// restore, check and dump, which lock, go on without the lock with a
// one-line notice instead of failing; a backup still fails. It mounts, so
// it needs root, which CI has.
func TestReadOnlyRepository(t *testing.T) {
	if !isRoot() {
		t.Skip("mounting a read-only and a full file system needs root (CI runs the tests as root)")
	}
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a.txt"), "first\n", 0o644)
	first := e.backup(exitOK, src)
	writeFile(t, filepath.Join(src, "b.txt"), "second\n", 0o644)
	second := e.backup(exitOK, src)

	mount := func(t *testing.T, args ...string) {
		t.Helper()
		if out, err := runTool("mount", args...); err != nil {
			t.Fatalf("mount %q: %v\n%s", args, err, out)
		}
	}
	readOnly := func(t *testing.T) *env {
		ro := filepath.Join(e.dir, "ro")
		mkdirAll(t, ro, 0o700)
		mount(t, "--bind", e.repo, ro)
		t.Cleanup(func() { _ = syscall.Unmount(ro, 0) })
		mount(t, "-o", "remount,ro,bind", ro)
		c := *e
		c.t, c.repo = t, ro
		return &c
	}
	full := func(t *testing.T) *env {
		dir := filepath.Join(e.dir, "full")
		mkdirAll(t, dir, 0o700)
		mount(t, "-t", "tmpfs", "-o", "size=8m", "tmpfs", dir)
		t.Cleanup(func() { _ = syscall.Unmount(dir, 0) })
		c := *e
		c.t, c.repo = t, filepath.Join(dir, "repo")
		copyDir(t, e.repo, c.repo)
		fillUp(t, filepath.Join(dir, "filler"))
		return &c
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) *env
		cause string
	}{
		{"read-only mount", readOnly, "read-only file system"},
		{"full disk", full, "no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.setup(t)
			before := repoFiles(t, e.repo)
			target := func() string { return filepath.Join(t.TempDir(), "restored") }
			for _, args := range [][]string{
				{"snapshots"}, {"ls", "latest"}, {"find", "a.txt"}, {"stats"}, {"check", "--read-data"},
				{"diff", first.SnapshotID, second.SnapshotID}, {"dump", "latest", filepath.Join(src, "a.txt")},
				{"cat", "snapshot", second.SnapshotID}, {"restore", "latest", "--target", target()},
			} {
				res := e.expect(exitOK, append([]string{"--no-lock"}, args...)...)
				if strings.Contains(res.Stderr, "warning") {
					t.Errorf("%s --no-lock warns:\n%s", args[0], res)
				}
			}
			for _, args := range [][]string{
				{"check"}, {"dump", "latest", filepath.Join(src, "a.txt")}, {"restore", "latest", "--target", target()},
			} {
				res := e.expect(exitOK, args...)
				if n := strings.Count(res.Stderr, "cannot be written, so "+args[0]+" goes on without a lock"); n != 1 || !strings.Contains(res.Stderr, tc.cause) {
					t.Errorf("%s without --no-lock gives %d notices of going on without a lock (want 1, naming %q):\n%s", args[0], n, tc.cause, res)
				}
			}
			if res := e.run("backup", src); res.Code == exitOK {
				t.Errorf("backup into a repository that cannot be written succeeded:\n%s", res)
			}
			res := e.run("backup", "--no-lock", src)
			if res.Code != exitUsage || !strings.Contains(res.Stderr, "no-lock") {
				t.Errorf("backup --no-lock is not refused as a usage error:\n%s", res)
			}
			if after := repoFiles(t, e.repo); len(after) != len(before) {
				t.Errorf("the repository changed: %d files before, %d after", len(before), len(after))
			}
		})
	}
}

// fillUp writes zeros into p until the file system is full.
func fillUp(t *testing.T, p string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatalf("fill %s: %v", p, err)
		}
	}
}

// runTool runs a system tool and returns what it printed.
func runTool(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
