//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// backup --json prints one JSON object per line: status objects while it
// runs (one a second, so a short backup prints none), then the summary.
// The backup is throttled to last a few seconds, but the test asserts only
// the shape, whether status lines came or not.
func TestBackupJSONIsOneObjectPerLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeRandom(t, filepath.Join(src, "a.bin"), 1, 3<<20)
	writeRandom(t, filepath.Join(src, "b.bin"), 2, 1<<20)
	res := e.expect(exitOK, "backup", "--json", "--bandwidth", "1MiB", src)
	lines := strings.Split(strings.TrimSuffix(res.Stdout, "\n"), "\n")
	for i, line := range lines {
		var obj struct {
			MessageType string `json:"message_type"`
		}
		if err := json.Unmarshal([]byte(line), &obj); err != nil {
			t.Fatalf("line %d of backup --json is not a JSON object: %v\n%s", i+1, err, res)
		}
		want := "status"
		if i == len(lines)-1 {
			want = "summary"
		}
		if obj.MessageType != want {
			t.Errorf("line %d has message_type %q, want %q\n%s", i+1, obj.MessageType, want, res)
		}
	}
	t.Logf("%d status lines before the summary", len(lines)-1)
	var sum backupReport
	decodeJSON(t, res, &sum)
	if sum.SnapshotID == "" || sum.BytesRead != 4<<20 {
		t.Errorf("summary %+v: want a snapshot of 4 MiB read", sum)
	}

	// With --quiet, only the summary.
	res = e.expect(exitOK, "backup", "--json", "--quiet", "--bandwidth", "2MiB", src)
	if n := strings.Count(res.Stdout, "\n"); n != 1 || !strings.Contains(res.Stdout, `"message_type":"summary"`) {
		t.Errorf("backup --json --quiet: want the summary alone on one line\n%s", res)
	}
}

// backup --stdin --json prints status objects while the stream is read, as
// backup of paths does (without a total: a stream's size is known only at
// its end). Standard input stays open until a status object came, so the
// test waits for the event, not for a time.
func TestBackupStdinJSONPrintsStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := e.command(ctx, nil, "backup", "--json", "--stdin", "--stdin-filename", "db.sql")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, strings.Repeat("INSERT INTO t VALUES (1);\n", 1000)); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var status struct {
		MessageType string `json:"message_type"`
	}
	if !lines.Scan() {
		t.Fatalf("backup --stdin --json printed nothing while it read: %v", lines.Err())
	}
	if err := json.Unmarshal(lines.Bytes(), &status); err != nil || status.MessageType != "status" {
		t.Errorf("first line %q (%v): want a status object", lines.Text(), err)
	}
	stdin.Close()
	var last string
	for lines.Scan() {
		last = lines.Text()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("backup --stdin --json: %v", err)
	}
	if !strings.Contains(last, `"message_type":"summary"`) {
		t.Errorf("last line %q: want the summary", last)
	}
}

// Where stdout is not a terminal (here a pipe), backup, restore and check
// draw no progress line: no carriage return, no terminal escape. --quiet
// leaves out the summary too.
func TestNoProgressLineWithoutATerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeRandom(t, filepath.Join(src, "a.bin"), 3, 2<<20)
	for _, quiet := range []bool{false, true} {
		flags := []string{}
		if quiet {
			flags = []string{"--quiet"}
		}
		for _, args := range [][]string{
			{"backup", "--bandwidth", "1MiB", src},
			{"restore", "latest", "--verify", "--target", filepath.Join(e.dir, "out", strconv.FormatBool(quiet))},
			{"check", "--read-data"},
		} {
			res := e.expect(exitOK, append(args, flags...)...)
			if strings.ContainsAny(res.Stdout, "\r\x1b") || strings.ContainsAny(res.Stderr, "\r\x1b") {
				t.Errorf("%s drew progress into a pipe:\n%q", args[0], res.Stdout+res.Stderr)
			}
			if quiet != (res.Stdout == "") {
				t.Errorf("%s (quiet %v): want a summary exactly without --quiet\n%s", args[0], quiet, res)
			}
		}
	}
}

// check --quiet prints no summary of a sound repository, but it never
// leaves out what is damaged.
func TestQuietCheckStillNamesTheDamage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeRandom(t, filepath.Join(src, "a.bin"), 4, 1<<20)
	e.backup(exitOK, src)
	pack := largest(t, objects(t, filepath.Join(e.repo, "data")))
	flipByte(t, pack, objects(t, filepath.Join(e.repo, "data"))[pack]/2)
	res := e.expect(exitFailure, "check", "--read-data", "--quiet")
	if !strings.Contains(res.Stdout, "damaged: ") || !strings.Contains(res.Stderr, "damaged objects") {
		t.Errorf("check --quiet of a damaged repository does not name the damage\n%s", res)
	}
	if strings.Contains(res.Stdout, "index files,") {
		t.Errorf("check --quiet printed its summary\n%s", res)
	}
}
