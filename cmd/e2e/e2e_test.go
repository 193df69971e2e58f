//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRoundTrip backs up a tree with every kind of entry, restores it with
// --verify into a new folder and compares the two with an independent walk.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	rt := buildRichTree(t, src)
	want := scanTree(t, src)

	b := e.backup(exitOK, src)
	if b.Partial || b.FilesSkipped != 0 || len(b.Skipped) != 0 {
		t.Errorf("backup is partial: %d skipped: %+v", b.FilesSkipped, b.Skipped)
	}
	if b.FilesNew != int64(rt.files) {
		t.Errorf("files_new = %d, want %d", b.FilesNew, rt.files)
	}

	target := filepath.Join(e.dir, "restore")
	res := e.expect(exitOK, "restore", "latest", "--target", target, "--verify", "--json")
	var rr restoreReport
	decodeJSON(t, res, &rr)
	if rr.Verified != int64(rt.files) {
		t.Errorf("restore verified %d files, want %d", rr.Verified, rt.files)
	}
	if len(rr.Skipped) != 0 || len(rr.VerifyFailures) != 0 {
		t.Errorf("restore skipped %+v, verify failures %+v", rr.Skipped, rr.VerifyFailures)
	}
	if rr.OwnershipKept != isRoot() {
		t.Errorf("ownership_restored = %v, running as root: %v", rr.OwnershipKept, isRoot())
	}

	// The source comes back under its full path inside the target.
	restored := filepath.Join(target, src)
	got := scanTree(t, restored)
	compareTrees(t, want, got, rt.owners)

	if len(linkGroups(got)) == 0 {
		t.Error("the hardlink pair was not restored as one inode")
	}
	if rt.device {
		if d := got["null-dev"]; d.Type != "chardev" || d.Rdev != unix.Mkdev(1, 3) {
			t.Errorf("device node restored as %+v", d)
		}
	}
	if rt.xattrs && got["tiny.txt"].Xattrs["user.comment"] != "hello" {
		t.Errorf("xattrs of tiny.txt: %q", got["tiny.txt"].Xattrs)
	}
	if _, ok := got["caf\xe9"]; !ok {
		t.Error("the file whose name is not UTF-8 did not come back under its exact name")
	}
	if rt.sparse {
		sp := got[sparseName]
		if sp.Size != sparseSize || sp.blocks*512 > 8<<20 {
			t.Errorf("sparse file restored with %d bytes allocated for %d bytes: holes were filled", sp.blocks*512, sp.Size)
		}
	}
	// Restore writes under temporary names; none may be left.
	_ = filepath.Walk(target, func(p string, _ os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(filepath.Base(p), ".nightjar-restore-") {
			t.Errorf("temporary file left behind: %q", p)
		}
		return nil
	})
}

// TestIncremental proves that a second backup of an unchanged tree reads
// no file content, and that touching one file makes exactly one changed.
func TestIncremental(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	rt := buildRichTree(t, src)

	first := e.backup(exitOK, src)
	second := e.backup(exitOK, src)
	if second.Parent != first.SnapshotID {
		t.Errorf("parent = %q, want the first snapshot %q", second.Parent, first.SnapshotID)
	}
	if second.BytesRead != 0 {
		t.Errorf("unchanged tree: bytes_read = %d, want 0", second.BytesRead)
	}
	if second.FilesUnchanged != int64(rt.files) || second.FilesNew != 0 || second.FilesChanged != 0 {
		t.Errorf("unchanged tree: %d new, %d changed, %d unchanged; want 0, 0, %d",
			second.FilesNew, second.FilesChanged, second.FilesUnchanged, rt.files)
	}
	if second.TotalSize != first.TotalSize {
		t.Errorf("total_size %d, first backup %d", second.TotalSize, first.TotalSize)
	}

	touched := filepath.Join(src, "a", "nested.bin")
	later := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := os.Chtimes(touched, later, later); err != nil {
		t.Fatal(err)
	}
	third := e.backup(exitOK, src)
	if third.FilesChanged != 1 || third.FilesUnchanged != int64(rt.files-1) || third.FilesNew != 0 {
		t.Errorf("one file touched: %d new, %d changed, %d unchanged; want 0, 1, %d",
			third.FilesNew, third.FilesChanged, third.FilesUnchanged, rt.files-1)
	}
	if third.BytesRead != 100_000 {
		t.Errorf("one file of 100000 bytes touched: bytes_read = %d", third.BytesRead)
	}

	// Unchanged entries take their extended attributes from the parent
	// snapshot; changing an attribute changes the ctime, so the entry's
	// attributes are read again.
	if !rt.xattrs {
		return
	}
	if err := unix.Setxattr(filepath.Join(src, "tiny.txt"), "user.comment", []byte("changed"), 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(filepath.Join(src, "a"), "user.added", []byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	e.backup(exitOK, src)
	target := filepath.Join(e.dir, "restore")
	e.expect(exitOK, "restore", "latest", "--target", target)
	got := scanTree(t, filepath.Join(target, src))
	for _, c := range []struct{ path, name, want string }{
		{"tiny.txt", "user.comment", "changed"},
		{"a", "user.added", "new"},
		{"a", "user.folder", "a folder attribute"},
		{"random.bin", "user.binary", "\x00\x01\xfe\xff"},
	} {
		if v, ok := got[c.path].Xattrs[c.name]; !ok || v != c.want {
			t.Errorf("after the fourth backup, %s has %s = %q (present: %v), want %q", c.path, c.name, v, ok, c.want)
		}
	}
}

// TestBigFolder backs up a folder of 2,000 files, whose tree the
// repository stores in parts: touching one file must store a part of it,
// not the whole tree again, and the folder must come back whole.
func TestBigFolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	big := filepath.Join(src, "big")
	mkdirAll(t, big, 0o755)
	for i := range 2000 {
		writeRandom(t, filepath.Join(big, fmt.Sprintf("f%04d", i)), uint64(i), 1+i%300)
	}
	want := scanTree(t, src)
	first := e.backup(exitOK, src)

	later := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	if err := os.Chtimes(filepath.Join(big, "f1000"), later, later); err != nil {
		t.Fatal(err)
	}
	want = scanTree(t, src)
	second := e.backup(exitOK, src)
	if second.FilesChanged != 1 {
		t.Errorf("one file touched: %d changed", second.FilesChanged)
	}
	// The whole folder's tree is about 100 KB compressed; a part
	// of it, the tree list, the folders above and the index file are a
	// few KB.
	if second.BytesAdded > 24<<10 || second.BytesAdded*4 > first.BytesAdded {
		t.Errorf("one touched file of 2,000 in a folder added %d bytes (the first backup %d), want a part of the folder's tree", second.BytesAdded, first.BytesAdded)
	}

	res := e.expect(exitOK, "ls", "latest")
	if n := strings.Count(res.Stdout, "/big/f"); n != 2000 {
		t.Errorf("ls lists %d files of the folder, want 2000", n)
	}
	target := filepath.Join(e.dir, "restore")
	e.expect(exitOK, "restore", "latest", "--target", target)
	compareTrees(t, want, scanTree(t, filepath.Join(target, src)), isRoot())
	if rep, _ := e.check("--read-data"); len(rep.Problems) != 0 {
		t.Errorf("check finds %+v", rep.Problems)
	}
}

// TestDedupShiftedData inserts 100 bytes at the start of a 32 MiB file:
// content-defined chunking must store only a few new chunks. A copy of a
// file adds no data at all.
func TestDedupShiftedData(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	big := filepath.Join(src, "big.bin")
	data := writeRandom(t, big, 32, 32<<20)

	first := e.backup(exitOK, src)
	if first.BytesAdded < 32<<20 {
		t.Errorf("first backup of 32 MiB of random data added only %d bytes", first.BytesAdded)
	}

	shifted := append(bytes.Repeat([]byte{'x'}, 100), data...)
	if err := os.WriteFile(big, shifted, 0o644); err != nil {
		t.Fatal(err)
	}
	second := e.backup(exitOK, src)
	if second.FilesChanged != 1 {
		t.Errorf("files_changed = %d, want 1", second.FilesChanged)
	}
	if second.BytesRead != int64(len(shifted)) {
		t.Errorf("bytes_read = %d, want %d", second.BytesRead, len(shifted))
	}
	if second.BytesAdded >= 2_500_000 {
		t.Errorf("100 bytes inserted at the start of 32 MiB: bytes_added = %d, want a few chunks (< 2.5 MB)", second.BytesAdded)
	}

	if err := os.WriteFile(filepath.Join(src, "copy.bin"), shifted, 0o644); err != nil {
		t.Fatal(err)
	}
	third := e.backup(exitOK, src)
	if third.FilesNew != 1 || third.BytesRead != int64(len(shifted)) {
		t.Errorf("copy: %d new files, %d bytes read", third.FilesNew, third.BytesRead)
	}
	if third.BytesAdded >= 256<<10 {
		t.Errorf("a copy of a stored file added %d bytes, want only metadata", third.BytesAdded)
	}
}

// TestSkippedUnreadable backs up a tree with a file and a folder the
// backup cannot read: the snapshot is made, partial, with exit code 3, and
// names each skipped path with its reason. As root, the binary runs as
// nobody, for whom the tree is readable except those two.
func TestSkippedUnreadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if isRoot() {
		uid, gid := nobody(t)
		e.cred = &syscall.Credential{Uid: uid, Gid: gid}
		// nobody must reach the temporary folders, own the repository and
		// the home folder, and read the password.
		for _, d := range []string{filepath.Dir(e.dir), e.dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		mkdirAll(t, e.repo, 0o700)
		for _, p := range []string{e.repo, e.home, e.pwFile} {
			if err := os.Chown(p, int(uid), int(gid)); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.init()

	src := filepath.Join(e.dir, "src")
	mkdirAll(t, filepath.Join(src, "private"), 0o755)
	writeFile(t, filepath.Join(src, "ok1"), "readable\n", 0o644)
	writeFile(t, filepath.Join(src, "ok2"), "readable too\n", 0o644)
	writeFile(t, filepath.Join(src, "private", "hidden"), "in an unreadable folder\n", 0o644)
	writeFile(t, filepath.Join(src, "secret"), "unreadable\n", 0o000)
	if err := os.Chmod(filepath.Join(src, "private"), 0o000); err != nil {
		t.Fatal(err)
	}

	b := e.backup(exitPartial, src)
	if !b.Partial || b.FilesSkipped != 2 {
		t.Errorf("partial = %v, files_skipped = %d; want true, 2", b.Partial, b.FilesSkipped)
	}
	if b.FilesNew != 2 {
		t.Errorf("files_new = %d, want the 2 readable files", b.FilesNew)
	}
	reasons := map[string]string{}
	for _, s := range b.Skipped {
		reasons[s.Path] = s.Reason
	}
	for _, p := range []string{filepath.Join(src, "secret"), filepath.Join(src, "private")} {
		if r, ok := reasons[p]; !ok || !strings.Contains(r, "permission denied") {
			t.Errorf("skipped %q: reason %q, want it listed with \"permission denied\" (all: %+v)", p, r, b.Skipped)
		}
	}

	res := e.expect(exitOK, "snapshots")
	if !strings.Contains(res.Stdout, shortID(b.SnapshotID)) || !strings.Contains(res.Stdout, "partial") {
		t.Errorf("snapshots does not show %s as partial:\n%s", shortID(b.SnapshotID), res.Stdout)
	}
	snaps := e.snapshots()
	if len(snaps) != 1 || !snaps[0].Summary.Partial || snaps[0].Summary.FilesSkipped != 2 {
		t.Errorf("snapshots --json: %+v", snaps)
	}
}

// TestMissingSources: a source that does not exist beside a readable one
// makes a partial snapshot; only missing sources make none and fail.
func TestMissingSources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "file"), "content\n", 0o644)
	missing := filepath.Join(e.dir, "missing")
	alsoMissing := filepath.Join(e.dir, "also-missing")

	b := e.backup(exitPartial, src, missing)
	if !b.Partial || b.FilesSkipped != 1 || len(b.Skipped) != 1 || b.Skipped[0].Path != missing {
		t.Errorf("one missing source: partial %v, skipped %+v", b.Partial, b.Skipped)
	}

	res := e.run("backup", missing, alsoMissing)
	if res.Code != exitFailure {
		t.Errorf("only missing sources: want exit %d:\n%s", exitFailure, res)
	}
	if len(lines(res.Stderr)) == 0 {
		t.Errorf("only missing sources: no message on stderr")
	}
	if snaps := e.snapshots(); len(snaps) != 1 {
		t.Errorf("only missing sources made a snapshot: %d snapshots, want the 1 from before", len(snaps))
	}
}

// TestUsageAndAccessErrors: every way to call nightjar wrongly exits with
// its own code and a one-line message, and leaves the repository as it
// was.
func TestUsageAndAccessErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "file"), "content\n", 0o644)
	e.backup(exitOK, src)

	wrongPw := filepath.Join(e.dir, "wrong-password")
	writeFile(t, wrongPw, "not the password\n", 0o600)
	emptyDir := filepath.Join(e.dir, "empty-dir")
	mkdirAll(t, emptyDir, 0o755)
	missingDir := filepath.Join(e.dir, "no-such-dir")

	cases := []struct {
		name    string
		env     []string
		args    []string
		want    int
		message string // a part of the one-line message
	}{
		{"wrong password", []string{"NIGHTJAR_PASSWORD_FILE=" + wrongPw}, []string{"snapshots"}, exitWrongPassword, "wrong password"},
		{"wrong password on backup", []string{"NIGHTJAR_PASSWORD_FILE=" + wrongPw}, []string{"backup", src}, exitWrongPassword, "wrong password"},
		{"no repository in an empty folder", nil, []string{"snapshots", "-r", emptyDir}, exitNoRepository, "no repository"},
		{"no repository at a missing path", nil, []string{"backup", "-r", missingDir, src}, exitNoRepository, "no repository"},
		{"bandwidth zero", nil, []string{"backup", "--bandwidth", "0", src}, exitUsage, "bandwidth"},
		{"bandwidth negative", nil, []string{"backup", "--bandwidth", "-5", src}, exitUsage, "bandwidth"},
		{"bandwidth unknown unit", nil, []string{"backup", "--bandwidth", "50XB", src}, exitUsage, "bandwidth"},
		{"bandwidth with wrong password", []string{"NIGHTJAR_PASSWORD_FILE=" + wrongPw}, []string{"backup", "--bandwidth=50XB", src}, exitUsage, "bandwidth"},
		{"unknown compression level", nil, []string{"backup", "--compression", "max", src}, exitUsage, "want off, fastest, default or better"},
		{"bad time", nil, []string{"backup", "--time", "yesterday", src}, exitUsage, "time"},
		{"time without zone", nil, []string{"backup", "--time", "2026-01-31T02:00:00", src}, exitUsage, "time"},
		{"password as a flag", nil, []string{"backup", "--password", "x", src}, exitUsage, "password"},
		{"password as a flag with =", nil, []string{"snapshots", "--password=x"}, exitUsage, "password"},
		{"no password at all", []string{"NIGHTJAR_PASSWORD_FILE="}, []string{"snapshots"}, exitUsage, "password"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := repoFiles(t, e.repo)
			e := *e
			e.t = t
			res := e.runEnv(c.env, c.args...)
			if res.Code != c.want {
				t.Fatalf("want exit %d:\n%s", c.want, res)
			}
			msg := lines(res.Stderr)
			if len(msg) == 0 || !strings.Contains(strings.ToLower(msg[len(msg)-1]), c.message) {
				t.Errorf("stderr does not end in a message about %q:\n%s", c.message, res)
			}
			if len(msg) != 1 || res.Stdout != "" {
				t.Errorf("want exactly one line on stderr and nothing on stdout:\n%s", res)
			}
			if strings.Contains(res.Stdout+res.Stderr, "panic") || strings.Contains(res.Stdout+res.Stderr, "goroutine ") {
				t.Errorf("crash output:\n%s", res)
			}
			after := repoFiles(t, e.repo)
			if len(before) != len(after) {
				t.Errorf("the repository changed: %d files before, %d after", len(before), len(after))
			}
			for p, size := range before {
				if after[p] != size {
					t.Errorf("repository file %s changed", p)
				}
			}
		})
	}
	if entries, err := os.ReadDir(emptyDir); err != nil || len(entries) != 0 {
		t.Errorf("a command on an empty folder wrote into it: %v %v", entries, err)
	}
	if _, err := os.Lstat(missingDir); err == nil {
		t.Errorf("a command on a missing repository path created %s", missingDir)
	}
}

// TestUsageErrorWithJSON: a command called with --json prints nothing but
// JSON on stdout, also when the command line is wrong.
func TestUsageErrorWithJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.run("snapshots", "--json", "--no-such-flag")
	if res.Code != exitUsage {
		t.Fatalf("want exit %d:\n%s", exitUsage, res)
	}
	if out := strings.TrimSpace(res.Stdout); out != "" && !jsonValid(out) {
		t.Errorf("snapshots --json with a bad flag printed text on stdout:\n%s", res)
	}
}

// TestCompressionLevels: --compression off stores text as it is, better
// stores it smaller, and a repository holding both restores both.
func TestCompressionLevels(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	text := strings.Repeat("the quick brown fox jumps over the lazy dog\n", 50000) // 2.2 MB
	added := map[string]int64{}
	snapshot := map[string]string{}
	for _, level := range []string{"off", "better"} {
		src := filepath.Join(e.dir, level)
		mkdirAll(t, src, 0o755)
		writeFile(t, filepath.Join(src, "text.txt"), level+text, 0o644)
		b := e.backup(exitOK, "--compression", level, src)
		added[level], snapshot[level] = b.BytesAdded, b.SnapshotID
	}
	if added["off"] < int64(len(text)) || added["better"] > added["off"]/10 {
		t.Errorf("bytes added: off %d, better %d, for %d bytes of repetitive text", added["off"], added["better"], len(text))
	}
	target := filepath.Join(e.dir, "restore")
	for _, level := range []string{"off", "better"} {
		src := filepath.Join(e.dir, level)
		e.expect(exitOK, "restore", snapshot[level], "--target", target, "--verify")
		if got := readFile(t, filepath.Join(target, src, "text.txt")); got != level+text {
			t.Errorf("%s: restored %d bytes that differ", level, len(got))
		}
	}
}
