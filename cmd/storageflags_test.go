package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unsetLimitEnv takes the bandwidth variables of whoever runs the tests out
// of the environment.
func unsetLimitEnv(t *testing.T) {
	for _, name := range []string{"NIGHTJAR_LIMIT_UPLOAD", "NIGHTJAR_LIMIT_DOWNLOAD"} {
		t.Setenv(name, "")
		os.Unsetenv(name)
	}
}

// Bandwidth caps, before or after the command or from the environment, let
// a backup and a restore through, bit for bit.
func TestBandwidthFlagsBackupAndRestore(t *testing.T) {
	e := newCLIEnv(t)
	unsetLimitEnv(t)
	dir := e.initRepo("repo")
	src := filepath.Join(e.dir, "src")
	if err := os.MkdirAll(src, 0o700); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("nightjar bandwidth "), 100_000) // 1.9 MB
	if err := os.WriteFile(filepath.Join(src, "file"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	e.expect(ExitOK, "--limit-upload", "1GB/s", "backup", "-r", dir, "--limit-download", "1GiB", src)
	t.Setenv("NIGHTJAR_LIMIT_DOWNLOAD", "800Mbit")
	target := filepath.Join(e.dir, "target")
	e.expect(ExitOK, "restore", "-r", dir, "latest", "--target", target, "--limit-upload=1GB")
	got, err := os.ReadFile(filepath.Join(target, src, "file"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Error("the file restored through bandwidth caps differs")
	}
}

// A bad rate or storage option is a usage error in one line that names the
// flag and what it takes, wherever it is given; init then creates nothing.
func TestBadStorageFlags(t *testing.T) {
	e := newCLIEnv(t)
	unsetLimitEnv(t)
	dir := e.initRepo("repo")
	for _, tt := range []struct {
		name string
		env  string // NIGHTJAR_LIMIT_UPLOAD
		args []string
		want string
	}{
		{"a rate that is no number", "", []string{"snapshots", "-r", dir, "--limit-upload", "fast"}, `--limit-upload: invalid bandwidth "fast": want a positive number with a unit`},
		{"a rate without a unit, before the command", "", []string{"--limit-download", "4096", "snapshots", "-r", dir}, `--limit-download: invalid bandwidth "4096": a number needs a unit`},
		{"a bad rate from the environment", "1,500MB", []string{"snapshots", "-r", dir}, `--limit-upload: invalid bandwidth "1,500MB"`},
		{"an unknown option", "", []string{"snapshots", "-r", dir, "-o", "s3.bucket=b"}, `--option "s3.bucket=b": unknown key "s3.bucket" (known: s3.bucket-lookup, s3.region, s3.ca-file)`},
		{"an option without a value", "", []string{"-o", "s3.region", "snapshots", "-r", dir}, `--option "s3.region": want KEY=VALUE`},
		{"a bad bucket lookup", "", []string{"snapshots", "-r", dir, "--option", "s3.bucket-lookup=virtual"}, `--option s3.bucket-lookup=virtual: want auto, path or dns`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NIGHTJAR_LIMIT_UPLOAD", tt.env)
			res := e.expect(ExitUsage, tt.args...)
			if lines := lines(res.stderr); len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line containing %q", res.stderr, tt.want)
			}
		})
	}
	fresh := filepath.Join(e.dir, "fresh")
	e.expect(ExitUsage, "init", "-r", fresh, "--limit-upload", "fast")
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("init with a bad rate left %s behind: %v", fresh, err)
	}
}

// bandwidthRate is the cap of the bandwidth tests: 256 KiB/s, whose
// limiter lets a burst of one second's worth (256 KiB) through at once;
// bandwidthFlag says it as the flags and the config do.
const (
	bandwidthRate = 256 << 10
	bandwidthFlag = "256KiB"
)

// bandwidthData is the size of the data of the bandwidth tests: 512 KiB,
// which takes 1 s at bandwidthRate after the first burst. Without a cap
// a backup or a restore of it took 0.32-0.41 s under -race, and a job's
// run 0.26-0.31 s (2 cores, load average 3.6-4.8; at load 7.5 a backup of
// 448 KiB once took 0.96 s, hence not less data), so a limiter that did
// nothing fails the tests.
const bandwidthData = 2 * bandwidthRate

// bandwidthSource writes bandwidthData bytes of random, incompressible data into a new
// folder of e and returns the folder.
func bandwidthSource(e *cliEnv) (dir string, data []byte) {
	e.t.Helper()
	dir = filepath.Join(e.dir, "src")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.t.Fatal(err)
	}
	data = make([]byte, bandwidthData)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "random.bin"), data, 0o600); err != nil {
		e.t.Fatal(err)
	}
	return dir, data
}

// treeSize is the bytes of the files under dir.
func treeSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// leastTime is the shortest time in which a limiter of bandwidthRate lets
// n bytes through: all but the first burst at the rate.
func leastTime(n int64) time.Duration {
	return time.Duration(float64(max(n-bandwidthRate, 0)) / bandwidthRate * float64(time.Second))
}

// --limit-upload caps what a backup writes: every byte that reaches the
// repository (512 KiB of incompressible data, and its index and
// snapshot) passed a 256 KiB/s limiter, so the backup lasts at least as long as that
// takes after the first burst (the repository's growth is a lower bound
// of what the limiter saw). Only this lower bound is asserted: a loaded
// machine makes a command slower, never faster.
func TestLimitUploadLimitsBackup(t *testing.T) {
	e := newCLIEnv(t)
	unsetLimitEnv(t)
	dir := e.initRepo("repo")
	src, _ := bandwidthSource(e)
	before := treeSize(t, dir)
	start := time.Now()
	e.expect(ExitOK, "backup", "-r", dir, "--limit-upload", bandwidthFlag, src)
	took := time.Since(start)
	written := treeSize(t, dir) - before
	if written < bandwidthData {
		t.Fatalf("the backup wrote %d bytes, want at least the %d bytes of data", written, bandwidthData)
	}
	if least := leastTime(written); took < least {
		t.Errorf("a backup that wrote %d bytes under --limit-upload %s took %v, want at least %v", written, bandwidthFlag, took, least)
	}
}

// --limit-download caps what a restore reads: the 512 KiB of data came
// through a 256 KiB/s limiter, so the restore lasts at least 1 s.
func TestLimitDownloadLimitsRestore(t *testing.T) {
	e := newCLIEnv(t)
	unsetLimitEnv(t)
	dir := e.initRepo("repo")
	src, data := bandwidthSource(e)
	e.expect(ExitOK, "backup", "-r", dir, src)
	target := filepath.Join(e.dir, "target")
	start := time.Now()
	e.expect(ExitOK, "restore", "-r", dir, "--limit-download", bandwidthFlag, "latest", "--target", target)
	took := time.Since(start)
	if least := leastTime(int64(len(data))); took < least {
		t.Errorf("a restore of %d bytes under --limit-download %s took %v, want at least %v", len(data), bandwidthFlag, took, least)
	}
	got, err := os.ReadFile(filepath.Join(target, src, "random.bin"))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("the file restored under --limit-download differs (%v)", err)
	}
}

// A repository's upload_bandwidth in the config caps the backups of its
// jobs as --limit-upload does: a job's run that writes 512 KiB of
// incompressible data at 256KiB lasts at least 1 s.
func TestConfigUploadBandwidthLimitsJobBackup(t *testing.T) {
	e := newCLIEnv(t)
	unsetLimitEnv(t)
	dir := e.initRepo("repo")
	src, _ := bandwidthSource(e)
	cfg := filepath.Join(e.dir, "nightjar.toml")
	writeTestFile(t, cfg, fmt.Sprintf(`[scheduler]
state = %q
[repository.main]
path = %q
password_file = %q
upload_bandwidth = %q
[[job]]
name = "capped"
repository = "main"
schedule = "daily 02:00"
retention = "off"
verify = "off"
  [[job.source]]
  path = %q
`, filepath.Join(e.dir, "state.db"), dir, e.pwFile, bandwidthFlag, src))
	before := treeSize(t, dir)
	e.expect(ExitOK, "job", "run", "--config", cfg, "--wait", "capped")
	written := treeSize(t, dir) - before
	// The run's own start and end, not the command's: opening the state
	// database and the pass cost about as much as the backup without a
	// cap (0.4-0.8 s under -race), and would hide a cap that did nothing.
	var run struct {
		StartedAt time.Time `json:"started_at"`
		EndedAt   time.Time `json:"ended_at"`
	}
	if err := json.Unmarshal([]byte(e.expect(ExitOK, "runs", "show", "1", "--config", cfg, "--json").stdout), &run); err != nil {
		t.Fatal(err)
	}
	took := run.EndedAt.Sub(run.StartedAt)
	if written < bandwidthData {
		t.Fatalf("the job's backup wrote %d bytes, want at least the %d bytes of data", written, bandwidthData)
	}
	if least := leastTime(written); took < least {
		t.Errorf("a job's backup that wrote %d bytes under upload_bandwidth %s took %v, want at least %v", written, bandwidthFlag, took, least)
	}
}
