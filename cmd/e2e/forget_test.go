//go:build linux

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// forgetReport is forget --json.
type forgetReport struct {
	DryRun bool   `json:"dry_run"`
	Policy string `json:"policy"`
	Groups []struct {
		Group string `json:"group"`
		Keep  []struct {
			ID      string   `json:"id"`
			Reasons []string `json:"reasons"`
		} `json:"keep"`
		Remove []struct {
			ID string `json:"id"`
		} `json:"remove"`
	} `json:"groups"`
	Forgotten  []string `json:"forgotten"`
	Completed  []string `json:"completed"`
	KeptPinned []string `json:"kept_pinned"`
}

func (e *env) forget(want int, args ...string) forgetReport {
	e.t.Helper()
	res := e.expect(want, append([]string{"forget", "--json"}, args...)...)
	var out forgetReport
	decodeJSON(e.t, res, &out)
	return out
}

// snapshotIDs lists the IDs of the repository's snapshots, sorted.
func (e *env) snapshotIDs() []string {
	e.t.Helper()
	var ids []string
	for _, s := range e.snapshots() {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// repoBytes maps every file and folder below dir to a hash of its content,
// to show that a command changed no byte of a repository.
func repoBytes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// forgetFixture is a repository with backdated snapshots of one source
// whose file changes between them.
type forgetFixture struct {
	e        *env
	src      string
	ids      []string          // oldest first
	contents map[string]string // snapshot ID -> its file's content
}

// The snapshots' times (TZ=UTC): two on 1 Nov, one each on 2, 3 and 9 Nov,
// and one on 1 Dec.
var forgetTimes = []string{
	"2026-11-01T08:00:00Z", "2026-11-01T20:00:00Z", "2026-11-02T08:00:00Z",
	"2026-11-03T08:00:00Z", "2026-11-09T08:00:00Z", "2026-12-01T08:00:00Z",
}

func newForgetFixture(t *testing.T) *forgetFixture {
	t.Helper()
	e := newEnv(t)
	e.init()
	f := &forgetFixture{e: e, src: filepath.Join(e.dir, "src"), contents: map[string]string{}}
	mkdirAll(t, f.src, 0o755)
	for i, at := range forgetTimes {
		content := strings.Repeat(at+"\n", 100*(i+1))
		writeFile(t, filepath.Join(f.src, "file.txt"), content, 0o644)
		id := e.backup(exitOK, "--time", at, f.src).SnapshotID
		f.ids = append(f.ids, id)
		f.contents[id] = content
	}
	return f
}

// restoresAll restores every snapshot left and compares its file with what
// was backed up, then checks every byte of the repository.
func (f *forgetFixture) restoresAll(t *testing.T) {
	t.Helper()
	for _, id := range f.e.snapshotIDs() {
		target := filepath.Join(f.e.dir, "restore-"+id)
		f.e.expect(exitOK, "restore", id, "--target", target)
		if got := readFile(t, filepath.Join(target, f.src, "file.txt")); got != f.contents[id] {
			t.Errorf("snapshot %s restores a file of %d bytes, want the %d backed up", shortID(id), len(got), len(f.contents[id]))
		}
	}
	ck, res := f.e.check("--read-data")
	if res.Code != exitOK || !ck.OK {
		t.Errorf("check --read-data after forget:\n%s", res)
	}
}

// TestForgetPolicy: a dry run changes no byte and says what the real run
// then does; the real run removes exactly the snapshots the policy lets
// go, keeps the pinned one, and every snapshot left restores.
func TestForgetPolicy(t *testing.T) {
	t.Parallel()
	f := newForgetFixture(t)
	e := f.e
	pinned := f.ids[0] // the policy below would let it go
	e.expect(exitOK, "pin", pinned, "--reason", "first")

	before := repoBytes(t, e.repo)
	dry := e.forget(exitOK, "--keep-daily", "3", "--dry-run")
	if after := repoBytes(t, e.repo); !reflect.DeepEqual(after, before) {
		t.Fatalf("forget --dry-run changed the repository")
	}
	// Daily: 1 Dec, 9 Nov, 3 Nov; the newest is 1 Dec; the pin keeps 1 Nov 08:00.
	wantGone := []string{f.ids[1], f.ids[2]}
	slices.Sort(wantGone)
	if !dry.DryRun || !slices.Equal(dry.Forgotten, wantGone) {
		t.Fatalf("dry run would forget %v, want %v", dry.Forgotten, wantGone)
	}
	if len(dry.Groups) != 1 || len(dry.Groups[0].Keep) != 4 || len(dry.Groups[0].Remove) != 2 {
		t.Fatalf("dry run groups: %+v, want one group keeping 4 and removing 2", dry.Groups)
	}
	reasons := map[string][]string{}
	for _, k := range dry.Groups[0].Keep {
		reasons[k.ID] = k.Reasons
	}
	wantReasons := map[string][]string{
		f.ids[5]: {"daily", "newest"}, f.ids[4]: {"daily"}, f.ids[3]: {"daily"}, pinned: {"pinned"},
	}
	if !reflect.DeepEqual(reasons, wantReasons) {
		t.Errorf("reasons %v, want %v", reasons, wantReasons)
	}
	text := e.expect(exitOK, "forget", "--keep-daily", "3", "--dry-run").Stdout
	if !strings.Contains(text, "dry run: would forget 2 snapshots") || !strings.Contains(text, shortID(f.ids[1])+"  2026-11-01 20:00:00  forget") {
		t.Errorf("dry run text does not say what goes:\n%s", text)
	}

	got := e.forget(exitOK, "--keep-daily", "3")
	if got.DryRun || !slices.Equal(got.Forgotten, wantGone) {
		t.Fatalf("forget removed %v, want %v", got.Forgotten, wantGone)
	}
	want := []string{f.ids[0], f.ids[3], f.ids[4], f.ids[5]}
	slices.Sort(want)
	if left := e.snapshotIDs(); !slices.Equal(left, want) {
		t.Fatalf("snapshots left %v, want %v", left, want)
	}
	if n := len(objects(t, filepath.Join(e.repo, "locks"))) + len(objects(t, filepath.Join(e.repo, "forgetting"))); n != 0 {
		t.Errorf("forget left %d locks or marks", n)
	}
	f.restoresAll(t)
	// Again: nothing more to do.
	if again := e.forget(exitOK, "--keep-daily", "3"); len(again.Forgotten) != 0 {
		t.Errorf("a second forget removed %v", again.Forgotten)
	}
}

// TestForgetFilters: only snapshots the filters let through are
// considered; the others are neither shown nor touched.
func TestForgetFilters(t *testing.T) {
	t.Parallel()
	f := newForgetFixture(t)
	e := f.e
	other := filepath.Join(e.dir, "other")
	mkdirAll(t, other, 0o755)
	writeFile(t, filepath.Join(other, "o.txt"), "o\n", 0o644)
	old := e.backup(exitOK, "--time", "2026-10-01T00:00:00Z", "--tag", "keep", other).SnapshotID
	newer := e.backup(exitOK, "--time", "2026-10-02T00:00:00Z", "--tag", "keep", other).SnapshotID

	got := e.forget(exitOK, "--keep-last", "1", "--path", f.src)
	if len(got.Groups) != 1 || len(got.Forgotten) != len(f.ids)-1 {
		t.Fatalf("forget --path %s: %+v, want one group and %d forgotten", f.src, got, len(f.ids)-1)
	}
	want := []string{f.ids[5], old, newer}
	slices.Sort(want)
	if left := e.snapshotIDs(); !slices.Equal(left, want) {
		t.Errorf("snapshots left %v, want %v", left, want)
	}
	got = e.forget(exitOK, "--keep-last", "1", "--tag", "keep")
	if !slices.Equal(got.Forgotten, []string{old}) {
		t.Errorf("forget --tag keep removed %v, want %s", got.Forgotten, old)
	}
}

// TestForgetIDs: snapshots named by ID or prefix are forgotten without a
// policy; a pinned one, the newest of a group or a mix with a policy is
// refused and nothing is removed.
func TestForgetIDs(t *testing.T) {
	t.Parallel()
	f := newForgetFixture(t)
	e := f.e
	e.expect(exitOK, "pin", f.ids[1])

	refused := []struct {
		name string
		args []string
		code int
	}{
		{"pinned", []string{f.ids[0][:10], f.ids[1]}, exitFailure},
		{"newest of its group", []string{f.ids[5]}, exitFailure},
		{"unknown", []string{"ffffffffffff"}, exitFailure},
		{"with a policy", []string{"--keep-last", "2", f.ids[0]}, exitUsage},
		{"with a filter", []string{"--host", "x", f.ids[0]}, exitUsage},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			e := *e
			e.t = t
			before := repoBytes(t, e.repo)
			res := e.run(append([]string{"forget"}, tc.args...)...)
			if res.Code != tc.code {
				t.Errorf("forget %v: exit %d, want %d:\n%s", tc.args, res.Code, tc.code, res)
			}
			if msg := lines(res.Stderr); len(msg) != 1 {
				t.Errorf("forget %v: want one line of error:\n%s", tc.args, res)
			}
			if after := repoBytes(t, e.repo); !reflect.DeepEqual(after, before) {
				t.Errorf("a refused forget changed the repository")
			}
		})
	}

	res := e.expect(exitOK, "forget", f.ids[0][:10], f.ids[2])
	if !strings.Contains(res.Stdout, "forgot 2 snapshots") {
		t.Errorf("forget by IDs says:\n%s", res)
	}
	want := []string{f.ids[1], f.ids[3], f.ids[4], f.ids[5]}
	slices.Sort(want)
	if left := e.snapshotIDs(); !slices.Equal(left, want) {
		t.Fatalf("snapshots left %v, want %v", left, want)
	}
	f.restoresAll(t)
}

// TestForgetFlags: bad flags and a policy that keeps nothing are usage
// errors; prune's limits need --prune; a missing repository and a wrong
// password have their codes. None of them removes a snapshot.
func TestForgetFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a"), "a\n", 0o644)
	e.backup(exitOK, "--time", "2026-11-01T00:00:00Z", src)
	e.backup(exitOK, src)
	cases := []struct {
		name  string
		extra []string
		args  []string
		code  int
		says  string
	}{
		{"no policy", nil, nil, exitUsage, "keeps nothing"},
		{"zero counts", nil, []string{"--keep-last", "0", "--keep-daily", "0"}, exitUsage, "keeps nothing"},
		{"prune limit without --prune", nil, []string{"--keep-last", "1", "--max-unused", "5%"}, exitUsage, "give it with --prune"},
		{"bad prune limit", nil, []string{"--keep-last", "1", "--prune", "--max-unused", "120%"}, exitUsage, "want a percentage below 100"},
		{"count out of range", nil, []string{"--keep-daily", "-2"}, exitUsage, "allowed 0 or more, or -1 for unlimited"},
		{"bad within", nil, []string{"--keep-within", "3 fortnights"}, exitUsage, "keep-within"},
		{"bad group-by", nil, []string{"--keep-last", "1", "--group-by", "user"}, exitUsage, "group-by"},
		{"no repository", []string{"NIGHTJAR_REPOSITORY=" + filepath.Join(e.dir, "none")}, []string{"--keep-last", "1"}, exitNoRepository, "no repository"},
		{"wrong password", []string{"NIGHTJAR_PASSWORD_FILE=", "NIGHTJAR_PASSWORD=nope"}, []string{"--keep-last", "1"}, exitWrongPassword, "wrong password"},
	}
	before := e.snapshotIDs()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := e.runEnv(tc.extra, append([]string{"forget"}, tc.args...)...)
			if res.Code != tc.code || !strings.Contains(res.Stderr, tc.says) {
				t.Errorf("forget %v: exit %d, want %d and a message with %q:\n%s", tc.args, res.Code, tc.code, tc.says, res)
			}
		})
	}
	if after := e.snapshotIDs(); !slices.Equal(after, before) {
		t.Errorf("snapshots after refused forgets: %v, want %v", after, before)
	}
}

// TestForgetBusy: beside an exclusive lock and beside a running backup
// (a shared lock), forget answers busy at once and removes nothing; a dry
// run takes no lock and still answers. Once the exclusive holder is
// killed, forget works.
func TestForgetBusy(t *testing.T) {
	t.Parallel()
	f := newForgetFixture(t)
	e := f.e
	before := e.snapshotIDs()

	helper := e.holdExclusiveLock()
	res := e.run("forget", "--keep-last", "1")
	if res.Code != exitBusy {
		t.Errorf("forget beside an exclusive lock: exit %d, want %d:\n%s", res.Code, exitBusy, res)
	}
	if msg := lines(res.Stderr); len(msg) != 1 || !strings.Contains(msg[0], "busy") || !strings.Contains(msg[0], "exclusive lock for e2e exclusive holder") {
		t.Errorf("forget beside an exclusive lock: want one line naming the holder:\n%s", res)
	}
	if dry := e.forget(exitOK, "--keep-last", "1", "--dry-run"); len(dry.Forgotten) != len(before)-1 {
		t.Errorf("a dry run beside the lock would forget %v", dry.Forgotten)
	}
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait()

	// A backup at 1 KiB/s cannot end while the test runs; it is ended by
	// SIGINT once forget has answered.
	big := filepath.Join(e.dir, "big")
	mkdirAll(t, big, 0o755)
	writeRandom(t, filepath.Join(big, "data.bin"), 11, 8<<20)
	bg := e.start("backup", "--bandwidth", "1KiB", big)
	locks := filepath.Join(e.repo, "locks")
	// The dead helper's lock may still be there: wait for a second one, or
	// for the backup to have removed the dead one and made its own.
	helperLocks := objects(t, locks)
	if !waitFor(commandTimeout, func() bool {
		now := objects(t, locks)
		for name := range now {
			if _, old := helperLocks[name]; !old {
				return true
			}
		}
		return !bg.running()
	}) || !bg.running() {
		t.Fatalf("the backup took no lock or ended early:\n%s", bg.Stderr.String())
	}
	res = e.run("forget", "--keep-last", "1")
	if res.Code != exitBusy || !strings.Contains(res.Stderr, "shared lock for backup") {
		t.Errorf("forget beside a running backup: exit %d, want %d naming the backup's lock:\n%s", res.Code, exitBusy, res)
	}
	if err := bg.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := bg.wait(); code != exitInterrupted {
		t.Fatalf("the interrupted backup exited %d:\n%s", code, bg.Stderr.String())
	}
	if after := e.snapshotIDs(); !slices.Equal(after, before) {
		t.Fatalf("a busy forget removed snapshots: %v, was %v", after, before)
	}
	if got := e.forget(exitOK, "--keep-last", "1"); len(got.Forgotten) != len(before)-1 {
		t.Errorf("forget after the holders ended removed %v", got.Forgotten)
	}
	f.restoresAll(t)
}

// TestForgetCompletesAnInterruptedOne: the repository as a forget killed
// after marking leaves it (a forgetting/<ID> mark; what marks is the
// name). snapshots shows the snapshot as forgetting, a dry run says it
// would be completed, and the next forget removes it, also with a policy
// that would keep it, but not once it is pinned. The SIGKILL at every step
// of a real forget is in repo's TestForgetCompletesAfterACrashAtEveryStep:
// a process cannot be stopped between two of its writes by events alone.
func TestForgetCompletesAnInterruptedOne(t *testing.T) {
	t.Parallel()
	f := newForgetFixture(t)
	e := f.e
	marks := filepath.Join(e.repo, "forgetting")
	mkdirAll(t, marks, 0o700)
	writeFile(t, filepath.Join(marks, f.ids[3]), "", 0o600)
	writeFile(t, filepath.Join(marks, f.ids[2]), "", 0o600)
	e.expect(exitOK, "pin", f.ids[2])

	if line := snapshotLine(t, e.expect(exitOK, "snapshots").Stdout, f.ids[3]); !strings.Contains(line, "forgetting") {
		t.Errorf("snapshots shows a marked snapshot as %q, want forgetting", line)
	}
	// check warns of the marks (exit 0: they lose nothing) and names them.
	checkMarks := func(want []string) {
		t.Helper()
		var ck struct {
			OK         bool     `json:"ok"`
			Forgetting []string `json:"forgetting"`
		}
		res := e.run("check", "--json")
		decodeJSON(t, res, &ck)
		if res.Code != exitOK || !ck.OK || !slices.Equal(ck.Forgetting, want) {
			t.Errorf("check: want exit 0, ok and forgetting %q:\n%s", want, res)
		}
		if warned := strings.Contains(res.Stderr, "interrupted"); warned != (len(want) > 0) {
			t.Errorf("check warned of an interrupted forget: %v, want %v:\n%s", warned, len(want) > 0, res)
		}
	}
	checkMarks(slices.Sorted(slices.Values([]string{f.ids[2], f.ids[3]})))
	dry := e.forget(exitOK, "--keep-last", "10", "--dry-run")
	if !slices.Equal(dry.Completed, []string{f.ids[3]}) || len(dry.Forgotten) != 0 {
		t.Errorf("dry run: %+v, want only %s completed", dry, f.ids[3])
	}
	got := e.forget(exitOK, "--keep-last", "10")
	if !slices.Equal(got.Completed, []string{f.ids[3]}) || !slices.Equal(got.KeptPinned, []string{f.ids[2]}) || len(got.Forgotten) != 0 {
		t.Errorf("forget: %+v, want %s completed and pinned %s kept", got, f.ids[3], f.ids[2])
	}
	if left := objects(t, marks); len(left) != 0 {
		t.Errorf("marks left: %v", left)
	}
	checkMarks([]string{})
	want := slices.DeleteFunc(slices.Clone(f.ids), func(id string) bool { return id == f.ids[3] })
	slices.Sort(want)
	if left := e.snapshotIDs(); !slices.Equal(left, want) {
		t.Errorf("snapshots left %v, want %v", left, want)
	}
	f.restoresAll(t)
}

// TestForgetTimeZone: calendar buckets are counted in the local zone (TZ).
// 1 Nov 2026 12:00 and 23:30 UTC and 2 Nov 00:30 UTC are two days in UTC but
// one day (1 Nov) in New York, so --keep-daily 2 lets a different snapshot
// go: in UTC the oldest (its day's count is used up), in New York the
// middle one (the oldest stays: the count was not used up).
func TestForgetTimeZone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a"), "a\n", 0o644)
	var ids []string
	for _, at := range []string{"2026-11-01T12:00:00Z", "2026-11-01T23:30:00Z", "2026-11-02T00:30:00Z"} {
		ids = append(ids, e.backup(exitOK, "--time", at, src).SnapshotID)
	}
	cases := []struct {
		zone string
		gone string
	}{
		{"UTC", ids[0]},
		{"America/New_York", ids[1]},
	}
	for _, tc := range cases {
		t.Run(tc.zone, func(t *testing.T) {
			res := e.runEnv([]string{"TZ=" + tc.zone}, "forget", "--json", "--dry-run", "--keep-daily", "2")
			var out forgetReport
			decodeJSON(t, res, &out)
			if !slices.Equal(out.Forgotten, []string{tc.gone}) {
				t.Errorf("TZ=%s: would forget %v, want %s", tc.zone, out.Forgotten, tc.gone)
			}
		})
	}
}
