package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
