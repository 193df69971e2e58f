//go:build linux

package schede2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// statusRec is what status --json prints.
type statusRec struct {
	Warnings []struct {
		Code       string `json:"code"`
		Severity   string `json:"severity"`
		Job        string `json:"job"`
		Repository string `json:"repository"`
		Message    string `json:"message"`
	} `json:"warnings"`
	Jobs []struct {
		Name             string  `json:"name"`
		LastGoodSnapshot *string `json:"last_good_snapshot"`
		NextRun          *string `json:"next_run"`
	} `json:"jobs"`
	Critical bool `json:"critical"`
}

// repositoriesRec is what repository list --json prints.
type repositoriesRec struct {
	Repositories []struct {
		Name           string   `json:"name"`
		Reachable      bool     `json:"reachable"`
		Error          string   `json:"error"`
		Encrypted      *bool    `json:"encrypted"`
		FreeBytes      *int64   `json:"free_bytes"`
		SizeBytes      *int64   `json:"size_bytes"`
		AcceptsBackups bool     `json:"accepts_backups"`
		WhyNot         []string `json:"why_not"`
	} `json:"repositories"`
}

// status runs status --json at a time and checks its exit code: 1 when a
// warning is critical, 0 when none is.
func (w *world) status(at string) statusRec {
	w.t.Helper()
	res := w.nj("status", "--json", "--at", at)
	var s statusRec
	decodeWhole(w.t, res, &s)
	if want := map[bool]int{true: exitFailure, false: exitOK}[s.Critical]; res.Code != want {
		w.t.Fatalf("status with critical = %v exited %d, want %d\n%s", s.Critical, res.Code, want, res)
	}
	return s
}

// codes lists the warnings as "severity code job/repository".
func (s statusRec) codes() []string {
	var out []string
	for _, w := range s.Warnings {
		out = append(out, w.Severity+" "+w.Code+" "+w.Job+"/"+w.Repository)
	}
	return out
}

func (s statusRec) has(code, job, repository string) bool {
	for _, w := range s.Warnings {
		if w.Code == code && w.Job == job && w.Repository == repository {
			return true
		}
	}
	return false
}

func writeSource(t *testing.T, w *world) string {
	t.Helper()
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f.txt"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return src
}

// A fresh config: the scheduler is offline (no pass yet) and the job has
// no backup, without a state database being made. After a pass with a
// succeeded backup, status is clean and exits 0; far later the backup is
// stale and the scheduler offline, and status exits 1. A repository gone
// (a disk not mounted) is unreachable in repository list, and status says
// repository_unavailable from the probe.
func TestStatusFromFreshToStale(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := writeSource(t, w)
	w.writeConfig(header("", "") + job("home", "daily 02:00", "", src))

	s := w.status("2026-12-01T01:00:00Z")
	if !s.Critical || !s.has("scheduler_offline", "", "") || !s.has("no_backup_yet", "home", "main") {
		t.Errorf("fresh config: %v, want scheduler_offline (critical) and no_backup_yet", s.codes())
	}
	if !strings.Contains(s.Warnings[0].Message, "no pass") {
		t.Errorf("scheduler_offline does not say that no pass ran: %q", s.Warnings[0].Message)
	}
	if _, err := os.Stat(w.state); !os.IsNotExist(err) {
		t.Errorf("status made the state database (%v)", err)
	}
	w.tick(exitOK, "--at", "2026-12-01T01:00:00Z") // stores the job: its first slot is 02:00
	w.tick(exitOK, "--at", "2026-12-01T02:00:05Z")
	if runs := w.runsOf("home"); len(runs) != 1 || runs[0].Status != "succeeded" {
		t.Fatalf("runs: %+v, want one succeeded backup", runs)
	}

	s = w.status("2026-12-01T02:01:00Z")
	if len(s.Warnings) != 0 || s.Critical {
		t.Errorf("after a good backup a minute ago: %v, want no warning", s.codes())
	}
	if len(s.Jobs) != 1 || s.Jobs[0].LastGoodSnapshot == nil || s.Jobs[0].NextRun == nil {
		t.Errorf("job lines: %+v, want home with its last good snapshot and next run", s.Jobs)
	}
	// The text says the same snapshot time as the JSON, in local time
	// (TZ=UTC here); the snapshot's second depends on how long the backup
	// took, so it is read from the JSON rather than assumed.
	text := w.must(exitOK, "status", "--at", "2026-12-01T02:01:00Z")
	if len(s.Jobs) == 1 && s.Jobs[0].LastGoodSnapshot != nil {
		good := at(t, *s.Jobs[0].LastGoodSnapshot).Format("2006-01-02 15:04:05")
		if !strings.Contains(text.Stdout, "job home (repository main): last good snapshot "+good+" (") {
			t.Errorf("status text has no line for job home with its last good snapshot at %s:\n%s", good, text)
		}
	}

	s = w.status("2026-12-05T00:00:00Z")
	if !s.Critical || !s.has("backup_stale", "home", "main") || !s.has("scheduler_offline", "", "") {
		t.Errorf("days later: %v, want backup_stale and scheduler_offline", s.codes())
	}
	text = w.must(exitFailure, "status", "--at", "2026-12-05T00:00:00Z")
	if !strings.HasPrefix(text.Stdout, "CRITICAL ") || !strings.Contains(text.Stdout, "CRITICAL backup_stale job=home repository=main: ") {
		t.Errorf("status text does not start with the critical warnings:\n%s", text)
	}

	// The disk is not mounted: the repository folder is an empty folder.
	if err := os.Rename(w.repo, w.path("repo.away")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(w.repo, 0o700); err != nil {
		t.Fatal(err)
	}
	res := w.nj("repository", "list", "--json", "--at", "2026-12-01T02:02:00Z")
	var list repositoriesRec
	decodeWhole(t, res, &list)
	if res.Code != exitFailure || len(list.Repositories) != 1 {
		t.Fatalf("repository list of a missing repository: want exit 1 and one repository\n%s", res)
	}
	r := list.Repositories[0]
	if r.Reachable || r.AcceptsBackups || !strings.Contains(r.Error, "no repository here") || len(r.WhyNot) == 0 || !strings.HasPrefix(r.WhyNot[0], "unreachable") {
		t.Errorf("repository list: %+v, want main unreachable, refusing backups because of it", r)
	}
	s = w.status("2026-12-01T02:02:30Z")
	if !s.Critical || !s.has("repository_unavailable", "", "main") {
		t.Errorf("after the probe of a missing repository: %v, want repository_unavailable", s.codes())
	}

	// Back in place: the next pass's probe (probe_every later) clears it.
	if err := os.Remove(w.repo); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w.path("repo.away"), w.repo); err != nil {
		t.Fatal(err)
	}
	w.tick(exitOK, "--at", "2026-12-01T02:12:30Z")
	s = w.status("2026-12-01T02:13:00Z")
	if len(s.Warnings) != 0 {
		t.Errorf("after the repository came back and a pass probed it: %v, want no warning", s.codes())
	}
}

// A paused job is job_paused (info: exit 0); a repository made with
// --insecure-no-encryption is repository_unencrypted once a pass probed it,
// and repository list says it is not encrypted.
func TestStatusPausedAndUnencrypted(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutRepository(t)
	src := writeSource(t, w)
	if res := w.run("init", "-r", w.repo, "--insecure-no-encryption"); res.Code != exitOK {
		t.Fatalf("init: %s", res)
	}
	w.writeConfig(header("", "") + job("home", "daily 02:00", "", src))
	w.tick(exitOK, "--at", "2026-12-01T01:00:00Z")
	w.tick(exitOK, "--at", "2026-12-01T02:00:05Z")
	w.must(exitOK, "job", "pause", "home")

	s := w.status("2026-12-01T02:01:00Z")
	if s.Critical || !s.has("job_paused", "home", "main") || !s.has("repository_unencrypted", "", "main") {
		t.Errorf("paused job, unencrypted repository: %v, want job_paused and repository_unencrypted, none critical", s.codes())
	}
	for _, warning := range s.Warnings {
		if warning.Code == "job_paused" && warning.Severity != "info" {
			t.Errorf("job_paused is %s, want info", warning.Severity)
		}
	}
	res := w.must(exitOK, "repository", "list", "--json", "--at", "2026-12-01T02:01:00Z")
	var list repositoriesRec
	decodeWhole(t, res, &list)
	r := list.Repositories[0]
	if !r.Reachable || r.Encrypted == nil || *r.Encrypted || r.FreeBytes == nil {
		t.Errorf("repository list: %+v, want main reachable, known unencrypted, with its free space", r)
	}
	if r.AcceptsBackups || len(r.WhyNot) != 1 || !strings.HasPrefix(r.WhyNot[0], "paused") {
		t.Errorf("repository list: accepts %v (%v), want no: its only job is paused", r.AcceptsBackups, r.WhyNot)
	}
	if want := repositoryBytes(t, w.repo); r.SizeBytes == nil || *r.SizeBytes != want {
		t.Errorf("repository list: size %v, want %d: the bytes of the repository's files but tmp/ and locks/", r.SizeBytes, want)
	}
	text := w.must(exitOK, "repository", "list", "--at", "2026-12-01T02:01:00Z")
	if !strings.Contains(text.Stdout, "; holds ") {
		t.Errorf("repository list does not say how much the repository holds:\n%s", text)
	}
}

// repositoryBytes sums the files of the repository in dir, but for its
// temporary files and locks: what a probe counts as its size.
func repositoryBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if top, _, _ := strings.Cut(rel, string(filepath.Separator)); top == "tmp" || top == "locks" {
			return nil
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
