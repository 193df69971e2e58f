//go:build linux

package schede2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/cmd/internal/buildbin"
)

// vaultRepo is a second repository, "vault", whose password_command
// prints its token on standard error and fails, as a vault client whose
// token expired does.
const vaultRepo = `
[repository.vault]
path = "{{dir}}/vault-repo"
password_command = "echo 'vault: token s.LEAKED-TOKEN expired' >&2; exit 3"
create_if_missing = true
`

const vaultFailure = "repository vault: its password_command failed: exit status 3 (its standard error is not shown, as it may hold the password: run the command by hand to see why)"

// One repository whose password cannot be read fails only the runs of
// its own jobs, as class auth: the jobs of the other repository run, by
// hand and by tick, nothing stays queued, job explain says why, and the
// token the command printed on standard error is nowhere: not in the
// state database, runs --json, the tick's output or its JSON log.
func TestOneRepositorysPasswordFailsOnlyItsOwnJobs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := writeSource(t, w)
	// Its own source, so that the limit of runs per source does not hold
	// one job's run behind the other's.
	otherSrc := w.path("other-src")
	mustWrite(t, otherSrc, "data\n", 0o600)
	w.writeConfig(header("", "") + vaultRepo + hookJob("home", "[[job.source]]\npath = \""+src+"\"\n") +
		strings.Replace(hookJob("other", "[[job.source]]\npath = \""+otherSrc+"\"\n"), `repository = "main"`, `repository = "vault"`, 1))

	outputs := map[string]string{}
	home := w.must(exitOK, "job", "run", "home", "--wait")
	outputs["job run home"] = home.Stdout + home.Stderr
	other := w.must(exitFailure, "job", "run", "other", "--wait", "--json")
	outputs["job run other"] = other.Stdout + other.Stderr
	var failed runRec
	decodeWhole(t, other, &failed)
	if failed.Status != "failed" || failed.ErrorClass != "auth" || failed.ErrorCode != "PASSWORD_UNAVAILABLE" ||
		failed.Message != "open repository vault: "+vaultFailure {
		t.Errorf("run of other = %s %s/%s %q, want failed auth/PASSWORD_UNAVAILABLE saying %q",
			failed.Status, failed.ErrorClass, failed.ErrorCode, failed.Message, vaultFailure)
	}

	// Both due in one pass: home succeeds, other fails; the tick says so.
	w.must(exitOK, "job", "run", "home")
	w.must(exitOK, "job", "run", "other")
	tick := w.must(exitFailure, "tick", "--json", "--log-format", "json", "--log-level", "debug")
	outputs["tick"] = tick.Stdout + tick.Stderr
	var p passRec
	decodeWhole(t, tick, &p)
	got := map[string]string{}
	for _, r := range p.Finished {
		got[r.Job] = r.Status + " " + r.ErrorClass + "/" + r.ErrorCode
	}
	if got["home"] != "succeeded /" || got["other"] != "failed auth/PASSWORD_UNAVAILABLE" || len(got) != 2 {
		t.Errorf("tick finished %q, want home succeeded and other failed auth/PASSWORD_UNAVAILABLE", got)
	}

	for _, r := range w.runs() {
		if r.Status == "queued" || r.Status == "running" {
			t.Errorf("run %d of job %s is still %s: an auth failure is not retried", r.ID, r.Job, r.Status)
		}
	}
	explain := w.must(exitOK, "job", "explain", "other")
	outputs["job explain"] = explain.Stdout
	if !strings.Contains(explain.Stdout, "failed [auth/PASSWORD_UNAVAILABLE]: open repository vault: "+vaultFailure) {
		t.Errorf("job explain other does not say why its last run failed:\n%s", explain.Stdout)
	}
	runs := w.must(exitOK, "runs", "--json", "--limit", "0")
	outputs["runs --json"] = runs.Stdout
	if !strings.Contains(runs.Stdout, vaultFailure) {
		t.Errorf("runs --json does not say why:\n%s", runs.Stdout)
	}
	for _, f := range []string{w.state, w.state + "-wal"} {
		data, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		outputs["state database "+filepath.Base(f)] = string(data)
	}
	for where, text := range outputs {
		if strings.Contains(text, "LEAKED-TOKEN") || strings.Contains(text, "vault: token") {
			t.Errorf("%s shows what the password command printed on standard error:\n%s", where, text)
		}
	}
}

// config validate checks, without running a command, that every password
// source can give a password, and names each repository with a problem;
// a password file others can read is a warning.
func TestConfigValidateChecksPasswordSources(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := writeSource(t, w)
	mustWrite(t, w.path("world-writable.pass"), "pw\n", 0o600)
	if err := os.Chmod(w.path("world-writable.pass"), 0o666); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w.path("readable.pass"), "pw\n", 0o600)
	if err := os.Chmod(w.path("readable.pass"), 0o644); err != nil {
		t.Fatal(err)
	}
	repos := map[string]string{
		"gone":     `password_file = "{{dir}}/gone.pass"`,
		"writable": `password_file = "{{dir}}/world-writable.pass"`,
		"readable": `password_file = "{{dir}}/readable.pass"`,
		"unset":    `password_env = "NIGHTJAR_TEST_UNSET_PASSWORD"`,
		"noprog":   `password_command = "nightjar-test-no-such-program --get offsite"`,
		"shell":    `password_command = "printf '%s' pw"`,
	}
	text := header("", "")
	for name, source := range repos {
		text += "\n[repository." + name + "]\npath = \"{{dir}}/" + name + "\"\n" + source + "\n"
	}
	w.writeConfig(text + hookJob("home", "[[job.source]]\npath = \""+src+"\"\n"))
	res := w.must(exitUsage, "config", "validate")
	want := []string{
		"repository gone: its password_file " + w.path("gone.pass") + " cannot be read: no such file or directory",
		"repository noprog: its password_command starts nightjar-test-no-such-program, which is not an executable found in PATH",
		"repository unset: its password_env NIGHTJAR_TEST_UNSET_PASSWORD is not set or empty here",
		"repository writable: its password_file " + w.path("world-writable.pass") + " is writable by others (mode 0666): refused, as anyone could change the password it holds; fix: chmod o-w on it",
		"repository readable: its password_file " + w.path("readable.pass") + " is readable by others (mode 0644): keep it private with chmod go-r on it",
	}
	for _, line := range want {
		if !strings.Contains(res.Stderr, line) {
			t.Errorf("config validate does not say %q:\n%s", line, res.Stderr)
		}
	}
	for _, fine := range []string{"repository main", "repository shell"} {
		if strings.Contains(res.Stderr, fine) {
			t.Errorf("config validate finds a problem with %s:\n%s", fine, res.Stderr)
		}
	}
}

// A repository recorded under its name and then missing (a backup disk not
// mounted: an empty folder in its place) fails the run as NO_REPOSITORY,
// retried, and nothing is created there; one replaced by another
// repository fails it as REPOSITORY_REPLACED, not retried, and nothing is
// written into it, until repository forget-id accepts the new one. The
// config says create_if_missing; the repository exists before the first
// run (newWorld), which records its ID (that a first run creates one is
// TestFirstRunsIntoANewRepositoryAllSucceed's).
func TestMissingOrReplacedRepository(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := writeSource(t, w)
	w.writeConfig(header("", "") + hookJob("home", "[[job.source]]\npath = \""+src+"\"\n") +
		hookJob("second", "[[job.source]]\npath = \""+src+"\"\n"))

	w.must(exitOK, "job", "run", "home", "--wait")
	if n := len(w.snapshots()); n != 1 {
		t.Fatalf("the first run made %d snapshots, want 1", n)
	}

	// The disk is not mounted: its mount point is an empty folder.
	if err := os.Rename(w.repo, w.path("repo-disk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(w.repo, 0o700); err != nil {
		t.Fatal(err)
	}
	res := w.must(exitFailure, "job", "run", "home", "--wait", "--json")
	var missing runRec
	decodeWhole(t, res, &missing)
	if missing.ErrorClass != "repository" || missing.ErrorCode != "NO_REPOSITORY" ||
		!strings.Contains(missing.Message, "no repository at "+w.repo+", where repository main (ID ") ||
		!strings.Contains(missing.Message, "is its disk mounted? nothing was created there") {
		t.Errorf("run on the unmounted disk = %s/%s %q, want repository/NO_REPOSITORY", missing.ErrorClass, missing.ErrorCode, missing.Message)
	}
	if entries, err := os.ReadDir(w.repo); err != nil || len(entries) != 0 {
		t.Errorf("the empty mount point holds %d entries (%v) after the run: want nothing created", len(entries), err)
	}
	var retry int64
	for _, r := range w.runsOf("home") {
		if r.Status == "queued" && r.Trigger == "retry" {
			retry = r.ID
		}
	}
	if retry == 0 {
		t.Fatalf("no retry of the NO_REPOSITORY run is queued: a disk may come back")
	}
	w.must(exitOK, "runs", "cancel", strconv.FormatInt(retry, 10)) // it would run beside the next steps

	// Another repository in its place.
	if err := os.Remove(w.repo); err != nil {
		t.Fatal(err)
	}
	if err := buildbin.CreateRepository(w.repo, testPassword); err != nil {
		t.Fatal(err)
	}
	res = w.must(exitFailure, "job", "run", "second", "--wait", "--json")
	var replaced runRec
	decodeWhole(t, res, &replaced)
	if replaced.ErrorClass != "repository" || replaced.ErrorCode != "REPOSITORY_REPLACED" ||
		!strings.Contains(replaced.Message, "it was replaced, and nothing is written into it") {
		t.Errorf("run into the other repository = %s/%s %q, want repository/REPOSITORY_REPLACED", replaced.ErrorClass, replaced.ErrorCode, replaced.Message)
	}
	for _, r := range w.runsOf("second") {
		if r.Status == "queued" {
			t.Errorf("run %d of second is queued (%s): REPOSITORY_REPLACED is not retried", r.ID, r.Trigger)
		}
	}
	if n := len(w.snapshots()); n != 0 {
		t.Errorf("the other repository holds %d snapshots, want none written into it", n)
	}
	locks, err := os.ReadDir(filepath.Join(w.repo, "locks"))
	if err != nil || len(locks) != 0 {
		t.Errorf("the other repository holds %d locks (%v): want nothing written into it", len(locks), err)
	}

	// The operator means the new one: forget-id, and the next run uses it.
	w.must(exitOK, "repository", "forget-id", "main")
	w.must(exitOK, "job", "run", "second", "--wait")
	if n := len(w.snapshots()); n != 1 {
		t.Errorf("after forget-id the new repository holds %d snapshots, want 1", n)
	}
}

// A run into a repository that takes no write (here its tmp folder, where
// the write probe writes, is a file: root writes anywhere a mode forbids)
// fails before any work, as REPOSITORY_UNWRITABLE.
func TestUnwritableRepositoryFailsBeforeWork(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := writeSource(t, w)
	w.writeConfig(header("", "") + hookJob("home", "[[job.source]]\npath = \""+src+"\"\n"))
	tmp := filepath.Join(w.repo, "tmp")
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, tmp, "not a folder\n", 0o600)
	res := w.must(exitFailure, "job", "run", "home", "--wait", "--json")
	var r runRec
	decodeWhole(t, res, &r)
	if r.ErrorClass != "repository" || r.ErrorCode != "REPOSITORY_UNWRITABLE" ||
		!strings.HasPrefix(r.Message, "open repository main: repository main cannot be written, so nothing was done: write probe: ") {
		t.Errorf("run = %s/%s %q, want repository/REPOSITORY_UNWRITABLE", r.ErrorClass, r.ErrorCode, r.Message)
	}
	if n := len(w.snapshots()); n != 0 {
		t.Errorf("%d snapshots were written", n)
	}
}

// A pass that runs a backup into an unencrypted repository warns of it,
// once per repository, and so does job show.
func TestUnencryptedRepositoryWarnings(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutRepository(t)
	src := writeSource(t, w)
	w.writeConfig(header("", "") + hookJob("home", "[[job.source]]\npath = \""+src+"\"\n"))
	if r := w.run("init", "--insecure-no-encryption", "-r", w.repo); r.Code != exitOK {
		t.Fatalf("init: %s", r)
	}
	w.must(exitOK, "job", "run", "home")
	p := w.tick(exitOK)
	want := "repository main is NOT ENCRYPTED (made with --insecure-no-encryption), and job home wrote into it: anyone who can read it can read the backups"
	if len(p.Warnings) != 1 || p.Warnings[0] != want {
		t.Errorf("tick warnings = %q, want %q", p.Warnings, want)
	}
	show := w.must(exitOK, "job", "show", "home")
	if !strings.Contains(show.Stderr, "job home writes into repository main, which is NOT ENCRYPTED") {
		t.Errorf("job show does not warn:\n%s", show)
	}
	// A pass that runs nothing says nothing (tick under cron mails any line).
	if p := w.tick(exitOK); len(p.Warnings) != 0 {
		t.Errorf("an idle tick warns %q", p.Warnings)
	}
}
