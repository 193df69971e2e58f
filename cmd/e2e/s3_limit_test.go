//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/nightjar-backup/nightjar/repo/backend/s3/s3test"
)

// The cap of the S3 bandwidth tests and the data they move: 2 MiB of
// incompressible data at 512 KiB/s, whose limiter lets a burst of one
// second's worth through at once, take at least 3 s.
const (
	s3LimitRate = 512 << 10
	s3LimitFlag = "512KiB"
	s3LimitData = 2 << 20
)

// s3LeastTime is the shortest time in which a limiter of s3LimitRate lets
// n bytes through: all but the first burst at the rate. Only this lower
// bound is asserted: a loaded machine makes a command slower, never
// faster.
func s3LeastTime(n int64) time.Duration {
	return time.Duration(float64(max(n-s3LimitRate, 0)) / s3LimitRate * float64(time.Second))
}

// s3LimitSource writes s3LimitData bytes of random data into a new folder
// of e and returns the folder.
func s3LimitSource(e *env) string {
	e.t.Helper()
	src := filepath.Join(e.dir, "src")
	mkdirAll(e.t, src, 0o755)
	writeRandom(e.t, filepath.Join(src, "random.bin"), 7, s3LimitData)
	return src
}

// bucketBytes is the bytes of the objects of bucket under prefix.
func bucketBytes(t *testing.T, srv *s3test.Server, bucket, prefix string) int64 {
	t.Helper()
	var n int64
	for obj := range srv.Client(t).ListObjectsIter(context.Background(), bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		n += obj.Size
	}
	return n
}

// --limit-upload caps what a backup writes into a bucket: every byte of
// the objects it added (2 MiB of incompressible data, its index and
// snapshot) passed a 512 KiB/s limiter, so the backup lasts at least as
// long as that takes after the first burst.
func TestS3LimitUploadLimitsBackup(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	const bucket, prefix = "limit-upload", "repo"
	e := newS3Env(t, srv, srv.Endpoint, bucket, prefix)
	e.init()
	src := s3LimitSource(e)
	before := bucketBytes(t, srv, bucket, prefix+"/")
	start := time.Now()
	e.expect(exitOK, "backup", "--limit-upload", s3LimitFlag, src)
	took := time.Since(start)
	written := bucketBytes(t, srv, bucket, prefix+"/") - before
	if written < s3LimitData {
		t.Fatalf("the backup added %d bytes to the bucket, want at least the %d bytes of data", written, s3LimitData)
	}
	if least := s3LeastTime(written); took < least {
		t.Errorf("a backup that added %d bytes to the bucket under --limit-upload %s took %v, want at least %v", written, s3LimitFlag, took, least)
	}
}

// --limit-download caps what a restore reads from a bucket: the 2 MiB of
// data came through a 512 KiB/s limiter, so the restore lasts at least
// 3 s, and the file comes back whole.
func TestS3LimitDownloadLimitsRestore(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	e := newS3Env(t, srv, srv.Endpoint, "limit-download", "repo")
	e.init()
	src := s3LimitSource(e)
	e.backup(exitOK, src)
	target := filepath.Join(e.dir, "target")
	start := time.Now()
	e.expect(exitOK, "restore", "--limit-download", s3LimitFlag, "latest", "--target", target)
	took := time.Since(start)
	if least := s3LeastTime(s3LimitData); took < least {
		t.Errorf("a restore of %d bytes under --limit-download %s took %v, want at least %v", s3LimitData, s3LimitFlag, took, least)
	}
	compareTrees(t, scanTree(t, src), scanTree(t, filepath.Join(target, src)), false)
}

// A repository's download_bandwidth in the config caps what the
// scheduler's runs read from its bucket: a drill (a restore of the job's
// newest snapshot, run by the executor) reads the 2 MiB of data through a
// 512 KiB/s limiter, so the run lasts at least 3 s.
func TestS3ConfigDownloadBandwidthLimitsDrill(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	e := newS3Env(t, srv, srv.Endpoint, "limit-config", "repo")
	src := s3LimitSource(e)
	cfg := filepath.Join(e.dir, "nightjar.toml")
	writeFile(t, cfg, fmt.Sprintf(`[scheduler]
state = %q

[repository.main]
url = %q
password_file = %q
create_if_missing = true
download_bandwidth = %q

[[job]]
name = "nightly"
repository = "main"
schedule = "manual"
retention = "off"
verify = "off"
  [[job.source]]
  path = %q
`, filepath.Join(e.dir, "state.db"), e.repo, e.pwFile, s3LimitFlag, src), 0o600)
	e.expect(exitOK, "job", "run", "nightly", "--wait", "--config", cfg)

	drills := filepath.Join(e.dir, "drills")
	mkdirAll(t, drills, 0o755)
	res := e.runEnv([]string{"NIGHTJAR_DRILL_DIR=" + drills}, "drill", "nightly", "--json", "--config", cfg)
	var drill drillRun
	decodeJSON(t, res, &drill)
	if res.Code != exitOK || drill.Kind != "drill" || drill.Status != "succeeded" {
		t.Fatalf("drill of the capped repository: want a succeeded drill run:\n%s", res)
	}
	// The run's own start and end: the command's would add the key
	// derivation and the state database's opening, and hide a cap that
	// did nothing.
	var run struct {
		StartedAt time.Time `json:"started_at"`
		EndedAt   time.Time `json:"ended_at"`
	}
	show := e.expect(exitOK, "runs", "show", fmt.Sprint(drill.ID), "--json", "--config", cfg)
	if err := json.Unmarshal([]byte(show.Stdout), &run); err != nil {
		t.Fatalf("runs show: %v\n%s", err, show)
	}
	if took, least := run.EndedAt.Sub(run.StartedAt), s3LeastTime(s3LimitData); took < least {
		t.Errorf("a drill that read %d bytes under download_bandwidth %s took %v, want at least %v", s3LimitData, s3LimitFlag, took, least)
	}
	if left, _ := os.ReadDir(drills); len(left) > 0 {
		t.Errorf("the drill left %d entries in its folder", len(left))
	}
}
