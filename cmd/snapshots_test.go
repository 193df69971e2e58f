package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/repo/repotest"
)

// runCLI runs "nightjar ARGS..." as Main does and returns what Main would
// print and exit with. The flags must come before the arguments.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp(&out, &errOut)
	code = ExitOK
	if err := app.Run(append([]string{"nightjar"}, args...)); err != nil {
		code = exitCode(err)
		errOut.WriteString("nightjar: " + errorMessage(err) + "\n")
	}
	return out.String(), errOut.String(), code
}

// runIDsRepository is a repository, opened with the password "pw" from
// NIGHTJAR_PASSWORD, holding a command-line snapshot, a snapshot of run
// 12 of job home (on host nas), and one that the scheduler wrote before snapshots
// recorded their run: ID run-3-data, tagged job:db, without a run field.
type runIDsRepository struct {
	dir                 string
	cli, scheduled, old string // their IDs
}

func newRunIDsRepository(t *testing.T) runIDsRepository {
	t.Helper()
	ctx := context.Background()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("NIGHTJAR_PASSWORD", "pw")
	for _, v := range []string{"NIGHTJAR_REPOSITORY", "NIGHTJAR_PASSWORD_FILE", "NIGHTJAR_PASSWORD_COMMAND"} {
		t.Setenv(v, "")
	}
	w := runIDsRepository{dir: filepath.Join(t.TempDir(), "repo")}
	be, err := backend.Create(ctx, w.dir)
	if err != nil {
		t.Fatal(err)
	}
	r := repotest.New(t, be)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	snapshot := func(opts backup.Options) *repo.Snapshot {
		t.Helper()
		opts.Paths = []string{src}
		res, err := backup.Backup(ctx, r, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res.Snapshot
	}
	w.cli = snapshot(backup.Options{}).ID
	w.scheduled = snapshot(backup.Options{Run: 12, Tags: []string{jobs.JobTag("home")}, Hostname: "nas"}).ID
	old := snapshot(backup.Options{Tags: []string{jobs.JobTag("db")}})
	if err := be.Remove(ctx, repo.Handle{Type: repo.SnapshotFile, Name: old.ID}); err != nil {
		t.Fatal(err)
	}
	old.ID = "run-3-data"
	written, err := r.WriteSession(ctx, repo.WriteOptions{}, func(context.Context, *repo.Writer) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := written.SaveSnapshot(ctx, old); err != nil {
		t.Fatal(err)
	}
	w.old = old.ID
	return w
}

// snapshots shows and filters the run that made each snapshot, under
// the hex IDs every snapshot now has, and reads the run of an old
// run-N-SOURCE snapshot from its ID.
func TestSnapshotsShowAndFilterRuns(t *testing.T) {
	w := newRunIDsRepository(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string // the IDs listed, oldest first
	}{
		{"all", nil, []string{w.cli, w.scheduled, w.old}},
		{"by run", []string{"--run", "12"}, []string{w.scheduled}},
		{"by the run of an old ID", []string{"--run", "3"}, []string{w.old}},
		{"by runs", []string{"--run", "3", "--run", "12"}, []string{w.scheduled, w.old}},
		{"by job", []string{"--job", "home"}, []string{w.scheduled}},
		{"by the job of an old snapshot", []string{"--job", "db"}, []string{w.old}},
		{"by job and run", []string{"--job", "home", "--run", "3"}, nil},
		{"by the job tag", []string{"--tag", "job:db"}, []string{w.old}},
		{"by a run none made", []string{"--run", "4"}, nil},
		{"by host", []string{"--host", "nas"}, []string{w.scheduled}},
		{"by a host none ran on", []string{"--host", "elsewhere"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, append([]string{"snapshots", "-r", w.dir, "--json"}, tc.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var got []snapshotJSON
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("%v: %s", err, stdout)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
				want := map[string]struct {
					job string
					run int64
				}{w.cli: {"", 0}, w.scheduled: {"home", 12}, w.old: {"db", 3}}[s.ID]
				if s.Job != want.job || s.Run != want.run {
					t.Errorf("snapshot %s: job %q, run %d in JSON, want %q, %d", s.ID, s.Job, s.Run, want.job, want.run)
				}
			}
			if strings.Join(ids, " ") != strings.Join(tc.want, " ") {
				t.Errorf("listed %v, want %v", ids, tc.want)
			}
		})
	}

	stdout, stderr, code := runCLI(t, "snapshots", "-r", w.dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], " Run ") {
		t.Fatalf("table:\n%s\nwant a header with a Run column, 3 snapshots and a count", stdout)
	}
	header := lines[0]
	at := strings.Index(header, " Run ") + 1
	for _, tc := range []struct{ id, run string }{{w.cli, "-"}, {w.scheduled, "12"}, {w.old, "3"}} {
		i := 1 + map[string]int{w.cli: 0, w.scheduled: 1, w.old: 2}[tc.id]
		line := lines[i]
		if !strings.HasPrefix(line, shortID(tc.id)+" ") || len(line) < at+len(tc.run) || strings.Fields(line[at:])[0] != tc.run {
			t.Errorf("line %q: want snapshot %s with run %q under the Run column of %q", line, shortID(tc.id), tc.run, header)
		}
	}

	if _, stderr, code := runCLI(t, "snapshots", "-r", w.dir, "--run", "0"); code != ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "want a positive run number") {
		t.Errorf("--run 0: exit %d, %q; want exit %d and one line asking for a positive run number", code, stderr, ExitUsage)
	}
}
