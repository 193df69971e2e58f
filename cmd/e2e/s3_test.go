//go:build linux

package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// newS3Env is a test's world with its repository at prefix in bucket of
// srv, reached at endpoint (the server's host:port, or a proxy's in front
// of it), and the server's credentials in every run's environment.
func newS3Env(t *testing.T, srv *s3test.Server, endpoint, bucket, prefix string) *env {
	t.Helper()
	e := newEnv(t)
	e.repo = "s3:http://" + endpoint + "/" + bucket + "/" + prefix
	e.extra = srv.Env()
	return e
}

// keysUnder lists the object keys of bucket under prefix, without it.
func keysUnder(t *testing.T, srv *s3test.Server, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	for _, k := range srv.Keys(t, bucket, prefix) {
		keys = append(keys, strings.TrimPrefix(k, prefix))
	}
	slices.Sort(keys)
	return keys
}

// countPrefix counts the keys that start with p.
func countPrefix(keys []string, p string) int {
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, p) {
			n++
		}
	}
	return n
}

// TestS3Commands runs every command on a repository in a bucket of a real
// S3 server (versitygw on loopback): init creates the bucket, a tree of
// every kind of entry comes back bit-identical with its metadata, check
// reads every pack, a second password works, an unchanged re-backup reads
// nothing and a copy of a file adds no data, and forget and prune delete
// what only a forgotten snapshot used.
func TestS3Commands(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	const bucket, prefix = "nightjar-e2e", "hosts/repo"
	e := newS3Env(t, srv, srv.Endpoint, bucket, prefix)

	e.init()
	keys := keysUnder(t, srv, bucket, prefix+"/")
	if !slices.Contains(keys, "config") || countPrefix(keys, "keys/") != 1 {
		t.Fatalf("after init the bucket holds %q under %s/, want config and one key", keys, prefix)
	}

	src := filepath.Join(e.dir, "src")
	rt := buildRichTree(t, src)
	want := scanTree(t, src)
	first := e.backup(exitOK, src)
	if first.Partial || first.FilesNew != int64(rt.files) {
		t.Errorf("first backup: partial %v, %d new files, want %d", first.Partial, first.FilesNew, rt.files)
	}
	snaps := e.snapshots()
	if len(snaps) != 1 || snaps[0].ID != first.SnapshotID {
		t.Fatalf("snapshots lists %+v, want the one backed up, %s", snaps, first.SnapshotID)
	}
	res := e.expect(exitOK, "ls", "--json", "latest", src)
	if !strings.Contains(res.Stdout, filepath.Join(src, "random.bin")) {
		t.Errorf("ls does not list random.bin:\n%s", res)
	}

	target := filepath.Join(e.dir, "restore")
	res = e.expect(exitOK, "restore", "latest", "--target", target, "--verify", "--json")
	var rr restoreReport
	decodeJSON(t, res, &rr)
	if rr.Verified != int64(rt.files) || len(rr.Skipped) != 0 || len(rr.VerifyFailures) != 0 {
		t.Errorf("restore verified %d files of %d, skipped %+v, failures %+v", rr.Verified, rt.files, rr.Skipped, rr.VerifyFailures)
	}
	compareTrees(t, want, scanTree(t, filepath.Join(target, src)), rt.owners)

	ck, res := e.check("--read-data")
	if res.Code != exitOK || !ck.OK || ck.Snapshots != 1 || ck.Packs == 0 || ck.PacksRead != ck.Packs {
		t.Errorf("check --read-data: want ok, 1 snapshot and every pack read:\n%s", res)
	}

	pw2 := filepath.Join(e.dir, "password2")
	writeFile(t, pw2, "second password\n", 0o600)
	e.expect(exitOK, "key", "add", "--new-password-file", pw2)
	res = e.runEnv([]string{"NIGHTJAR_PASSWORD_FILE=" + pw2}, "key", "list", "--json")
	var keyList []keyReport
	decodeJSON(t, res, &keyList)
	if res.Code != exitOK || len(keyList) != 2 {
		t.Errorf("key list with the second password: want 2 keys:\n%s", res)
	}

	again := e.backup(exitOK, src)
	if again.BytesRead != 0 || again.FilesUnchanged != int64(rt.files) || again.Parent != first.SnapshotID {
		t.Errorf("unchanged re-backup: read %d bytes, %d unchanged of %d, parent %s", again.BytesRead, again.FilesUnchanged, rt.files, again.Parent)
	}
	copied := filepath.Join(e.dir, "copy")
	mkdirAll(t, copied, 0o755)
	writeFile(t, filepath.Join(copied, "random-copy.bin"), readFile(t, filepath.Join(src, "random.bin")), 0o644)
	dup := e.backup(exitOK, copied)
	if dup.BytesAdded > 64<<10 {
		t.Errorf("a copy of a 3 MiB file that is already stored added %d bytes", dup.BytesAdded)
	}

	// A snapshot of data nothing else holds, forgotten (a newer one of
	// the same folder keeps it from being the newest of its group), leaves
	// packs that prune would delete; on storage whose locks are leases it
	// keeps them while they are younger than the leftover age, since a
	// backup may still be writing them, and says so.
	other := filepath.Join(e.dir, "other")
	mkdirAll(t, other, 0o755)
	writeRandom(t, filepath.Join(other, "other.bin"), 99, 6<<20)
	lone := e.backup(exitOK, other)
	writeFile(t, filepath.Join(other, "other.bin"), "replaced\n", 0o644)
	e.backup(exitOK, other)
	packsBefore := countPrefix(keysUnder(t, srv, bucket, prefix+"/"), "data/")
	e.forget(exitOK, lone.SnapshotID)
	res = e.expect(exitOK, "prune", "--json")
	var pr struct {
		PacksDeleted   int   `json:"packs_deleted"`
		PacksKeptYoung int   `json:"packs_kept_young"`
		BytesKeptYoung int64 `json:"bytes_kept_young"`
	}
	decodeJSON(t, res, &pr)
	packsAfter := countPrefix(keysUnder(t, srv, bucket, prefix+"/"), "data/")
	if pr.PacksDeleted != 0 || pr.PacksKeptYoung == 0 || pr.BytesKeptYoung < 6<<20 || packsAfter != packsBefore {
		t.Errorf("prune of a young forgotten snapshot's 6 MiB: deleted %d packs, kept %d young (%d bytes); the bucket went from %d to %d packs",
			pr.PacksDeleted, pr.PacksKeptYoung, pr.BytesKeptYoung, packsBefore, packsAfter)
	}
	ck, res = e.check("--read-data")
	if res.Code != exitOK || !ck.OK || ck.Snapshots != 4 {
		t.Errorf("check --read-data after prune: want ok and 4 snapshots:\n%s", res)
	}
	if n := countPrefix(keysUnder(t, srv, bucket, prefix+"/"), "locks/"); n != 0 {
		t.Errorf("%d locks remain in the bucket after every command ended", n)
	}
}

// TestS3Refusals: a wrong secret, a missing bucket: each one line naming
// it with its documented exit code; a refused init creates no bucket and a
// refused secret never appears in the output.
func TestS3Refusals(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	e := newS3Env(t, srv, srv.Endpoint, "present", "repo")
	e.init()

	const wrongSecret = "not-the-secret-4f9c2a"
	for _, args := range [][]string{{"snapshots"}, {"backup", e.dir}} {
		res := e.runEnv([]string{"AWS_SECRET_ACCESS_KEY=" + wrongSecret}, args...)
		msg := lines(res.Stderr)
		if res.Code != exitWrongPassword || len(msg) != 1 || !strings.Contains(msg[0], "access denied") {
			t.Errorf("%s with a wrong secret: want exit %d and one line saying access denied:\n%s", args[0], exitWrongPassword, res)
		}
		if strings.Contains(res.Stdout+res.Stderr, wrongSecret) {
			t.Errorf("%s prints the secret:\n%s", args[0], res)
		}
	}

	absent := newS3Env(t, srv, srv.Endpoint, "absent", "repo")
	res := absent.run("snapshots")
	msg := lines(res.Stderr)
	if res.Code != exitNoRepository || len(msg) != 1 || !strings.Contains(msg[0], "bucket does not exist") || !strings.Contains(msg[0], "absent") {
		t.Errorf("snapshots of a missing bucket: want exit %d and one line naming the bucket:\n%s", exitNoRepository, res)
	}

	refused := newS3Env(t, srv, srv.Endpoint, "never-made", "repo")
	res = refused.runEnv([]string{"AWS_SECRET_ACCESS_KEY=" + wrongSecret}, "init")
	if res.Code != exitWrongPassword || len(lines(res.Stderr)) != 1 {
		t.Errorf("init with a wrong secret: want exit %d and one line:\n%s", exitWrongPassword, res)
	}
	exists, err := srv.Client(t).BucketExists(context.Background(), "never-made")
	if err != nil || exists {
		t.Errorf("a refused init left bucket never-made (exists %v, %v)", exists, err)
	}
}

// writeFiles makes n files of size bytes of random data in dir, seeded
// from seed, enough for several packs.
func writeFiles(t *testing.T, dir string, seed uint64, n, size int) {
	t.Helper()
	mkdirAll(t, dir, 0o755)
	for i := range n {
		writeRandom(t, filepath.Join(dir, "f"+string(rune('a'+i))+".bin"), seed+uint64(i), size)
	}
}
