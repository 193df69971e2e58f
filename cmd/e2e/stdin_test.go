//go:build linux

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/cmd/internal/buildbin"
)

// backup --stdin and --stdin-from-command store a stream as one file at
// the snapshot's root, which restores bit-identical; a command that fails
// saves no snapshot.
func TestBackupStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	data := make([]byte, 400<<10)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	args := []string{"backup", "--json", "--stdin", "--stdin-filename", "db.sql", "--tag", "dump"}
	cmd := e.command(ctx, nil, args...)
	cmd.Stdin = bytes.NewReader(data)
	res, err := buildbin.Run(cmd, args)
	if err != nil || res.Code != exitOK {
		t.Fatalf("backup --stdin: %v\n%s", err, res)
	}
	var rep backupReport
	decodeJSON(t, res, &rep)
	if rep.BytesRead != int64(len(data)) || rep.FilesNew != 1 || rep.Partial {
		t.Errorf("report %+v: want one new file of %d bytes", rep, len(data))
	}
	snaps := e.snapshots()
	if len(snaps) != 1 || strings.Join(snaps[0].Paths, ",") != "/db.sql" || strings.Join(snaps[0].Tags, ",") != "dump" {
		t.Fatalf("snapshots %+v: want one of /db.sql tagged dump", snaps)
	}
	target := filepath.Join(e.dir, "restored")
	e.expect(exitOK, "restore", "latest", "--target", target, "--verify")
	if got, err := os.ReadFile(filepath.Join(target, "db.sql")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("restored %d bytes (%v), not the %d piped in", len(got), err, len(data))
	}

	dump := filepath.Join(e.dir, "dump")
	writeFile(t, dump, "CREATE TABLE t (id int);\n", 0o600)
	e.expect(exitOK, "backup", "--stdin-from-command", "--stdin-filename", "t.sql", "--", "cat", dump)
	target2 := filepath.Join(e.dir, "restored2")
	e.expect(exitOK, "restore", "latest", "--target", target2)
	if got := readFile(t, filepath.Join(target2, "t.sql")); got != "CREATE TABLE t (id int);\n" {
		t.Errorf("restored %q from the command's output", got)
	}

	res = e.expect(exitFailure, "backup", "--stdin-from-command", "--stdin-filename", "broken.sql", "--",
		"sh", "-c", "printf 'half a dump'; echo 'pg_dump: connection lost' >&2; exit 3")
	if !strings.Contains(res.Stderr, "pg_dump: connection lost") || !strings.Contains(res.Stderr, "exit status 3") ||
		!strings.Contains(res.Stderr, "no snapshot was saved") {
		t.Errorf("a failed command is not reported with its error:\n%s", res)
	}
	if n := len(e.snapshots()); n != 2 {
		t.Errorf("%d snapshots after a failed command, want the 2 before it", n)
	}

	for _, bad := range [][]string{
		{"backup", "--stdin", filepath.Join(e.dir, "dump")},
		{"backup", "--stdin", "--stdin-filename", "a/b"},
		{"backup", "--stdin", "--exclude", "*.tmp"},
		{"backup", "--stdin-from-command"},
		{"backup", "--stdin-filename", "x", e.dir},
	} {
		e.expect(exitUsage, bad...)
	}
}

// backup --stdin-from-command runs its command with nightjar's environment
// without the passwords (jobs.StartCommand, as command sources do): a
// command that prints its environment does not put the repository's
// password into the snapshot.
func TestBackupFromCommandGetsNoPassword(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	password := strings.TrimSpace(readFile(t, e.pwFile))
	res := e.runEnv([]string{"NIGHTJAR_PASSWORD=" + password, "NIGHTJAR_PASSWORD_FILE=", "KEEP=kept"},
		"backup", "--stdin-from-command", "--stdin-filename", "env.txt", "--", "env")
	if res.Code != exitOK {
		t.Fatalf("backup --stdin-from-command -- env:\n%s", res)
	}
	target := filepath.Join(e.dir, "restored")
	e.expect(exitOK, "restore", "latest", "--target", target)
	got := readFile(t, filepath.Join(target, "env.txt"))
	if !strings.Contains(got, "KEEP=kept\n") {
		t.Errorf("the command did not get nightjar's environment:\n%s", got)
	}
	if strings.Contains(got, "NIGHTJAR_PASSWORD") || strings.Contains(got, password) {
		t.Errorf("the command was given the password:\n%s", got)
	}
}
