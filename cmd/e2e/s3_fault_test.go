//go:build linux

package e2e

import (
	"errors"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// startFaultProxy starts a fault proxy in front of srv for the test's
// duration, with no rules yet.
func startFaultProxy(t *testing.T, srv *s3test.Server) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start("http://"+srv.Endpoint, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// expectFaults fails the test unless the proxy did want faults of each
// kind: a rule that never fired proves nothing.
func expectFaults(t *testing.T, p *faultproxy.Proxy, step string, want map[faultproxy.Fault]int64) {
	t.Helper()
	got := p.Counts().Faults
	for f, n := range want {
		if got[f.String()] != n {
			t.Errorf("%s: the proxy did %d faults %s, want %d (all: %v)", step, got[f.String()], f, n, got)
		}
	}
}

// TestS3Faults: through a proxy that answers 503 SlowDown and 500, drops
// connections before and after the server saw the request, and cuts
// bodies short, a backup completes by retrying and checks clean, a
// restore is bit-identical, and check --read-data reads every pack.
func TestS3Faults(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	proxy := startFaultProxy(t, srv)
	const bucket, prefix = "faults", "repo"
	e := newS3Env(t, srv, proxy.Addr(), bucket, prefix)
	direct := newS3Env(t, srv, srv.Endpoint, bucket, prefix)
	e.init()

	src := filepath.Join(e.dir, "src")
	writeFiles(t, src, 1, 6, 4<<20)
	want := scanTree(t, src)

	proxy.SetRules(
		faultproxy.Rule{Method: http.MethodPut, PathContains: "/data/", Times: 2, Fault: faultproxy.SlowDown},
		faultproxy.Rule{Method: http.MethodPut, PathContains: "/data/", Nth: 3, Fault: faultproxy.InternalError},
		faultproxy.Rule{Method: http.MethodPut, PathContains: "/data/", Nth: 4, Fault: faultproxy.Drop},
		faultproxy.Rule{Method: http.MethodPut, PathContains: "/index/", Nth: 1, Fault: faultproxy.DropAfter},
		faultproxy.Rule{Method: http.MethodPut, PathContains: "/snapshots/", Nth: 1, Fault: faultproxy.SlowDown},
	)
	// Every rule fires whatever the number of packs: the first four
	// uploads of a pack fail, so a fifth is made.
	proxy.ResetCounts()
	b := e.backup(exitOK, src)
	if b.Partial || b.FilesNew != 6 {
		t.Errorf("backup through faults: partial %v, %d new files, want 6", b.Partial, b.FilesNew)
	}
	expectFaults(t, proxy, "backup", map[faultproxy.Fault]int64{
		faultproxy.SlowDown: 3, faultproxy.InternalError: 1, faultproxy.Drop: 1, faultproxy.DropAfter: 1,
	})
	ck, res := direct.check("--read-data")
	if res.Code != exitOK || !ck.OK || ck.Snapshots != 1 || ck.PacksRead != ck.Packs {
		t.Fatalf("check --read-data after a backup through faults:\n%s", res)
	}

	// As for the uploads, the first five reads of pack data fail, so every
	// rule fires. The reads go to the server without the local cache
	// (--no-cache), which holds the index file and the tree pack the
	// backup wrote: the faults are the server's.
	readFaults := []faultproxy.Rule{
		{Method: http.MethodGet, PathContains: "/data/", Times: 2, Fault: faultproxy.Truncate},
		{Method: http.MethodGet, PathContains: "/data/", Nth: 4, Fault: faultproxy.SlowDown},
		{Method: http.MethodGet, PathContains: "/data/", Nth: 5, Fault: faultproxy.Drop},
		{Method: http.MethodGet, PathContains: "/index/", Nth: 1, Fault: faultproxy.InternalError},
		{Method: http.MethodGet, PathContains: "/snapshots/", Nth: 1, Fault: faultproxy.Truncate},
	}
	readWant := map[faultproxy.Fault]int64{
		faultproxy.Truncate: 3, faultproxy.SlowDown: 1, faultproxy.Drop: 1, faultproxy.InternalError: 1,
	}
	proxy.SetRules(readFaults...)
	proxy.ResetCounts()
	target := filepath.Join(e.dir, "restore")
	e.expect(exitOK, "restore", "--no-cache", "latest", "--target", target)
	expectFaults(t, proxy, "restore", readWant)
	compareTrees(t, want, scanTree(t, filepath.Join(target, src)), false)

	proxy.SetRules(readFaults...)
	proxy.ResetCounts()
	ck, res = e.check("--read-data", "--no-cache")
	if res.Code != exitOK || !ck.OK || ck.PacksRead != ck.Packs {
		t.Errorf("check --read-data through faults:\n%s", res)
	}
	expectFaults(t, proxy, "check", readWant)
}

// TestS3FaultOutlastsRetries: when every upload of a pack is refused with
// 503 SlowDown, the backup ends, after its retries, with exit code 1 (the
// README's S3_SERVER_ERROR) and one line that names the refusal; it leaves
// no snapshot and no lock, and the repository still checks clean. When
// every read of a pack is refused, a restore ends the same way: it stops
// at the first read that failed after its retries, reading nothing more
// than the reads under way, leaves no file under its final name that is
// not whole, and its --json summary counts no damage; with the faults
// gone, check --read-data passes.
func TestS3FaultOutlastsRetries(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	proxy := startFaultProxy(t, srv)
	const bucket, prefix = "outlast", "repo"
	e := newS3Env(t, srv, proxy.Addr(), bucket, prefix)
	direct := newS3Env(t, srv, srv.Endpoint, bucket, prefix)
	e.init()
	// Many more files than a restore has workers, each read on its own:
	// a restore that went on after the server failed would read each.
	first := filepath.Join(e.dir, "first")
	writeFiles(t, first, 1, restoredFiles, 64<<10)
	e.backup(exitOK, first)

	src := filepath.Join(e.dir, "src")
	writeFiles(t, src, 10, 3, 2<<20)
	proxy.SetRules(faultproxy.Rule{Method: http.MethodPut, PathContains: "/data/", Fault: faultproxy.SlowDown})
	res := e.run("backup", src)
	expectServerFailure(t, "backup whose every pack upload is refused", res.Code, lines(res.Stderr))
	if got := proxy.Counts().Faults[faultproxy.SlowDown.String()]; got < 2 {
		t.Errorf("the proxy refused %d uploads: the backup did not retry", got)
	}

	if n := len(direct.snapshots()); n != 1 {
		t.Errorf("%d snapshots after the failed backup, want the first only", n)
	}
	ck, res := direct.check("--read-data")
	if res.Code != exitOK || !ck.OK || ck.Snapshots != 1 {
		t.Errorf("check --read-data after the failed backup:\n%s", res)
	}
	if n := countPrefix(keysUnder(t, srv, bucket, prefix+"/"), "locks/"); n != 0 {
		t.Errorf("%d locks remain after the failed backup", n)
	}

	// The read side: every GET of a pack is refused. The local cache holds
	// the tree pack the backup wrote, so the restore makes its folders and
	// fails on the files' data; each file not restored is a warning, and
	// the error names the server's failure, not damage.
	proxy.SetRules(faultproxy.Rule{Method: http.MethodGet, PathContains: "/data/", Fault: faultproxy.SlowDown})
	proxy.ResetCounts()
	target := filepath.Join(e.dir, "restore")
	res = e.runEnv(restoreEnv, "restore", "latest", "--target", target)
	expectFewReadsAfterTheFailure(t, proxy)
	msg := lines(res.Stderr)
	if n := len(msg); n == 0 {
		t.Errorf("restore whose every pack read is refused printed nothing on stderr:\n%s", res)
	} else {
		expectServerFailure(t, "restore whose every pack read is refused", res.Code, msg[n-1:])
		for _, l := range msg[:n-1] {
			if !strings.HasPrefix(l, "warning: not restored ") {
				t.Errorf("restore whose every pack read is refused: a line on stderr is neither a file not restored nor the error: %q", l)
			}
		}
		if strings.Contains(msg[n-1], "damaged") || strings.Contains(msg[n-1], "check --read-data") {
			t.Errorf("restore whose every pack read is refused blames damage in the repository: %q", msg[n-1])
		}
	}
	want := scanTree(t, first)
	err := filepath.WalkDir(target, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(filepath.Join(target, first), p)
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Errorf("restore left %s, which is no file of the snapshot", p)
			return nil
		}
		if w, ok := want[rel]; !ok || fileSum(t, p) != w.Sum {
			t.Errorf("restore left %s under its final name, not whole", p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}

	// The same with --json: the summary says the restore is partial, and
	// counts no entry damaged nor skipped for the server's failure.
	proxy.ResetCounts()
	res = e.runEnv(restoreEnv, "restore", "latest", "--target", filepath.Join(e.dir, "restore-json"), "--json")
	expectFewReadsAfterTheFailure(t, proxy)
	var rr restoreReport
	decodeJSON(t, res, &rr)
	if res.Code != exitFailure || rr.Damaged != 0 || len(rr.Skipped) != 0 || rr.FilesSkipped != 0 || !rr.Partial {
		t.Errorf("restore --json whose every pack read is refused: exit %d, summary %+v; want exit %d, partial, nothing damaged or skipped", res.Code, rr, exitFailure)
	}
	if !strings.Contains(res.Stderr, "s3 server failed the request after retries") || strings.Contains(res.Stderr, "damaged") {
		t.Errorf("restore --json whose every pack read is refused: stderr does not name the server's failure, or blames damage:\n%s", res.Stderr)
	}

	proxy.SetRules()
	ck, res = e.check("--read-data", "--no-cache")
	if res.Code != exitOK || !ck.OK || ck.Snapshots != 1 || ck.PacksRead != ck.Packs {
		t.Errorf("check --read-data through the proxy with its faults cleared:\n%s", res)
	}
}

// restoredFiles is the number of files of the snapshot that
// TestS3FaultOutlastsRetries restores through a proxy refusing every read.
const restoredFiles = 24

// restoreEnv gives the restores of TestS3FaultOutlastsRetries the same
// number of file workers on any machine: twice GOMAXPROCS, 4.
var restoreEnv = []string{"GOMAXPROCS=2"}

// expectFewReadsAfterTheFailure fails the test unless a restore through
// proxy, which refused every read of a pack, stopped at the first read
// that failed after the client's tries (README: 10): the reads under way
// then, one per file worker, each perhaps followed by the repository's
// read of its first blob alone, are all it may have sent; a restore that
// went on would have read each of the restoredFiles files.
func expectFewReadsAfterTheFailure(t *testing.T, proxy *faultproxy.Proxy) {
	t.Helper()
	const tries, workers = 10, 4 // restoreEnv
	got := proxy.Counts().Faults[faultproxy.SlowDown.String()]
	if got < tries {
		t.Errorf("the proxy refused %d reads: the restore did not retry", got)
	}
	if most := int64(workers * 2 * tries); got > most {
		t.Errorf("the proxy refused %d reads, want at most %d (%d workers' reads and reads alone, %d tries each): the restore read on after the server failed", got, most, workers, tries)
	}
}

// expectServerFailure fails the test unless a command that exited with
// code and printed the error lines msg failed as the README documents a
// failure of the S3 server after the retries (S3_SERVER_ERROR): exit code
// 1 and one line that says so and names the server's code SlowDown.
func expectServerFailure(t *testing.T, what string, code int, msg []string) {
	t.Helper()
	if code != exitFailure || len(msg) != 1 ||
		!strings.Contains(msg[0], "s3 server failed the request after retries") || !strings.Contains(msg[0], "SlowDown") {
		t.Errorf("%s: exit %d with %q; want exit %d and one line naming the server's failure after retries and SlowDown", what, code, msg, exitFailure)
	}
}
