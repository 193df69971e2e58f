//go:build linux

package schede2e

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo/backend/s3/faultproxy"
	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// s3World is a world whose repository "main" is the url location in the
// config, with the credentials of srv in every run's environment.
func s3World(t *testing.T, srv *s3test.Server, location string) *world {
	t.Helper()
	w := newWorldWithoutRepository(t)
	w.repo = location
	w.extra = srv.Env()
	return w
}

// s3Config is a config whose repository "main" is at w.repo by url, with
// one hourly job "nightly" of src.
func (w *world) s3Config(src string) {
	w.writeConfig(`[scheduler]
state = "{{state}}"

[repository.main]
url = "{{repo}}"
password_file = "{{pw}}"
create_if_missing = true
` + job("nightly", "hourly :00", "", src))
}

// dueTick runs the pass of the slot at 11:00 (the one at 10:30 only plans
// it) and returns its one finished run, which must have succeeded.
func (w *world) dueTick() runRec {
	w.t.Helper()
	w.tick(exitOK, "--at", "2026-05-01T10:30:00Z")
	p := w.tick(exitOK, "--at", "2026-05-01T11:00:05Z")
	if len(p.Finished) != 1 || p.Finished[0].Status != "succeeded" {
		w.t.Fatalf("the due tick did not finish one succeeded run: %+v", p)
	}
	return p.Finished[0]
}

// TestS3ScheduledJob: a job whose repository is an s3: url in the config
// runs from tick, creates the repository and its bucket (create_if_missing,
// as init makes a missing bucket), and its snapshot is listed and restores
// identical.
func TestS3ScheduledJob(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	w := s3World(t, srv, srv.Location("scheduled", "repo"))
	src := w.path("src")
	makeTree(t, src, 1)
	want := manifest(t, src)
	w.s3Config(src)

	run := w.dueTick()
	if len(run.Snapshots) != 1 {
		t.Fatalf("the run recorded %d snapshots, want 1: %+v", len(run.Snapshots), run)
	}
	snaps := w.snapshots()
	if len(snaps) != 1 || snaps[0].ID != run.Snapshots[0].SnapshotID || snaps[0].Job != "nightly" {
		t.Fatalf("snapshots lists %+v, want the run's %s of job nightly", snaps, run.Snapshots[0].SnapshotID)
	}
	target := w.restoreSnapshot(snaps[0].ID)
	compareTrees(t, want, manifest(t, filepath.Join(target, src)))
}

// TestS3TwoHostsBackUpIntoOneBucket: two machines, each with its own
// config and state database, back up into one repository in one bucket
// at the same time: the first host's backup is held, by the proxy in
// front of its server, just before it writes its snapshot (its data and
// its lock are in the bucket) while the second host's backup runs from
// start to end; then the first is let go. Both succeed and the repository
// with both snapshots checks clean.
func TestS3TwoHostsBackUpIntoOneBucket(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	proxy, err := faultproxy.Start("http://"+srv.Endpoint, 1, faultproxy.Rule{
		Method: http.MethodPut, PathContains: "/snapshots/", Times: 1, Fault: faultproxy.Delay, Release: release,
		OnFault: func(string, string) { held <- struct{}{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })

	const bucket, prefix = "shared", "repo"
	// The bucket exists, as it does where hosts share one; making it is
	// TestS3ScheduledJob's.
	srv.MakeBucket(t, bucket)
	hostA := s3World(t, srv, "s3:"+proxy.URL()+"/"+bucket+"/"+prefix)
	hostB := s3World(t, srv, srv.Location(bucket, prefix))
	// One repository, two machines: newWorld gives both the same password.
	srcA, srcB := hostA.path("src"), hostB.path("src")
	makeTree(t, srcA, 1)
	makeTree(t, srcB, 2)
	wantA, wantB := manifest(t, srcA), manifest(t, srcB)
	hostA.s3Config(srcA)
	hostB.s3Config(srcB)

	hostA.tick(exitOK, "--at", "2026-05-01T10:30:00Z")
	hostB.tick(exitOK, "--at", "2026-05-01T10:30:00Z")

	// Host A's run creates the repository, stores its data and stops at
	// its snapshot, holding its lock.
	tickA := hostA.startNJ("tick", "--json", "--at", "2026-05-01T11:00:05Z")
	select {
	case <-held:
	case <-tickA.done:
		t.Fatalf("host A's tick ended before it wrote a snapshot:\n%s", tickA.wait(t, commandTimeout))
	}
	runB := hostB.tick(exitOK, "--at", "2026-05-01T11:00:05Z")
	if len(runB.Finished) != 1 || runB.Finished[0].Status != "succeeded" {
		t.Errorf("host B's backup beside host A's: %+v", runB.Finished)
	}
	close(release)
	res := tickA.wait(t, commandTimeout)
	var passA passRec
	decodeWhole(t, res, &passA)
	if res.Code != exitOK || len(passA.Finished) != 1 || passA.Finished[0].Status != "succeeded" {
		t.Fatalf("host A's backup, let go after host B's ended:\n%s", res)
	}

	snaps := hostB.snapshots()
	if len(snaps) != 2 {
		t.Fatalf("the bucket holds %d snapshots, want one of each host: %+v", len(snaps), snaps)
	}
	if res := hostB.run("check", "--read-data", "-r", hostB.repo); res.Code != exitOK {
		t.Errorf("check --read-data of both hosts' snapshots:\n%s", res)
	}
	for _, h := range []struct {
		run  runRec
		src  string
		want map[string]entry
	}{{passA.Finished[0], srcA, wantA}, {runB.Finished[0], srcB, wantB}} {
		if len(h.run.Snapshots) != 1 {
			t.Fatalf("a run recorded %d snapshots: %+v", len(h.run.Snapshots), h.run)
		}
		target := hostB.restoreSnapshot(h.run.Snapshots[0].SnapshotID)
		compareTrees(t, h.want, manifest(t, filepath.Join(target, h.src)))
	}
}

// TestS3MissingBucket: a scheduled run whose bucket is gone (removed
// after a run recorded the repository) fails as class repository with
// code S3_NO_BUCKET, naming the bucket; create_if_missing does not make
// it again (it creates only a repository never seen), and the run is
// retried as a missing disk is. Without create_if_missing, a bucket that
// never existed fails the run the same way.
func TestS3MissingBucket(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	w := s3World(t, srv, srv.Location("gone", "repo"))
	src := w.path("src")
	makeTree(t, src, 1)
	w.s3Config(src)
	w.must(exitOK, "job", "run", "nightly", "--wait")

	// The bucket is removed behind nightjar's back (versitygw keeps a
	// bucket as a folder).
	if err := os.Rename(filepath.Join(srv.Dir, "gone"), w.path("removed-bucket")); err != nil {
		t.Fatal(err)
	}
	res := w.must(exitFailure, "job", "run", "nightly", "--wait", "--json")
	var run runRec
	decodeWhole(t, res, &run)
	if run.ErrorClass != "repository" || run.ErrorCode != "S3_NO_BUCKET" ||
		!strings.Contains(run.Message, `s3 bucket does not exist "gone", where repository main (ID `) ||
		!strings.Contains(run.Message, "nothing was created") {
		t.Errorf("run into the removed bucket = %s/%s %q, want repository/S3_NO_BUCKET naming the bucket", run.ErrorClass, run.ErrorCode, run.Message)
	}
	if _, err := os.Stat(filepath.Join(srv.Dir, "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed bucket is there again after the run (%v): want nothing created", err)
	}
	retried := false
	for _, r := range w.runsOf("nightly") {
		retried = retried || r.Status == "queued" && r.Trigger == "retry"
	}
	if !retried {
		t.Errorf("no retry of the S3_NO_BUCKET run is queued: a bucket may be restored, as a disk may come back")
	}

	never := s3World(t, srv, srv.Location("never-made", "repo"))
	never.writeConfig(`[scheduler]
state = "{{state}}"

[repository.main]
url = "{{repo}}"
password_file = "{{pw}}"
` + job("nightly", "hourly :00", "", src))
	res = never.must(exitFailure, "job", "run", "nightly", "--wait", "--json")
	decodeWhole(t, res, &run)
	if run.ErrorClass != "repository" || run.ErrorCode != "S3_NO_BUCKET" || !strings.Contains(run.Message, `s3 bucket does not exist "never-made"`) {
		t.Errorf("run into a bucket never made, without create_if_missing = %s/%s %q, want repository/S3_NO_BUCKET naming the bucket", run.ErrorClass, run.ErrorCode, run.Message)
	}
}
