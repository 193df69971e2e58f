//go:build linux

package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// pinnedReport is what snapshots --json says about pins.
type pinnedReport struct {
	ID        string `json:"id"`
	Pinned    bool   `json:"pinned"`
	PinReason string `json:"pin_reason"`
}

func (e *env) pins() map[string]pinnedReport {
	e.t.Helper()
	res := e.expect(exitOK, "snapshots", "--json")
	var list []pinnedReport
	decodeJSON(e.t, res, &list)
	out := map[string]pinnedReport{}
	for _, s := range list {
		out[s.ID] = s
	}
	return out
}

// snapshotLine returns the line of the text listing of snapshots that
// shows the snapshot id.
func snapshotLine(t *testing.T, listing, id string) string {
	t.Helper()
	for _, l := range lines(listing) {
		if strings.HasPrefix(l, shortID(id)+" ") {
			return l
		}
	}
	t.Fatalf("snapshot %s is not in the listing:\n%s", shortID(id), listing)
	return ""
}

// TestPinUnpin: pin and unpin by prefix and latest, shown by snapshots in
// text and JSON, kept in the repository as private files.
func TestPinUnpin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a.txt"), "first\n", 0o644)
	first := e.backup(exitOK, src).SnapshotID
	writeFile(t, filepath.Join(src, "a.txt"), "second\n", 0o644)
	second := e.backup(exitOK, src).SnapshotID

	res := e.expect(exitOK, "pin", first[:8], "--reason", "tax records 2026")
	if got := strings.TrimSpace(res.Stdout); got != "pinned snapshot "+shortID(first) {
		t.Errorf("pin prints %q", got)
	}
	res = e.expect(exitOK, "pin", "--json", "latest")
	var out struct {
		ID       string `json:"id"`
		Pinned   bool   `json:"pinned"`
		Hostname string `json:"hostname"`
	}
	decodeJSON(t, res, &out)
	if out.ID != second || !out.Pinned || out.Hostname == "" {
		t.Errorf("pin --json latest: %+v, want snapshot %s pinned", out, second)
	}

	want := map[string]pinnedReport{
		first:  {ID: first, Pinned: true, PinReason: "tax records 2026"},
		second: {ID: second, Pinned: true},
	}
	if got := e.pins(); !reflect.DeepEqual(got, want) {
		t.Errorf("snapshots --json: %+v, want %+v", got, want)
	}
	for _, id := range []string{first, second} {
		fi, err := os.Stat(filepath.Join(e.repo, "pins", id))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("pin file of %s: %v %v, want mode 0600", shortID(id), fi, err)
		}
	}

	// A second pin updates the reason.
	e.expect(exitOK, "pin", first, "--reason", "audit")
	want[first] = pinnedReport{ID: first, Pinned: true, PinReason: "audit"}
	if got := e.pins(); !reflect.DeepEqual(got, want) {
		t.Errorf("after a second pin: %+v, want %+v", got, want)
	}
	listing := e.expect(exitOK, "snapshots").Stdout
	if l := snapshotLine(t, listing, first); !strings.Contains(l, " pinned ") || !strings.HasSuffix(l, "(pinned: audit)") {
		t.Errorf("text listing of a pinned snapshot: %q", l)
	}
	if l := snapshotLine(t, listing, second); !strings.Contains(l, " pinned ") {
		t.Errorf("text listing of a pinned snapshot without a reason: %q", l)
	}
	if ck, res := e.check(); !ck.OK || res.Code != exitOK {
		t.Errorf("check of a repository with pins:\n%s", res)
	}

	res = e.expect(exitOK, "unpin", first[:10])
	if got := strings.TrimSpace(res.Stdout); got != "unpinned snapshot "+shortID(first) {
		t.Errorf("unpin prints %q", got)
	}
	want[first] = pinnedReport{ID: first}
	if got := e.pins(); !reflect.DeepEqual(got, want) {
		t.Errorf("after unpin: %+v, want %+v", got, want)
	}
	if l := snapshotLine(t, e.expect(exitOK, "snapshots").Stdout, first); strings.Contains(l, "pinned") {
		t.Errorf("text listing of an unpinned snapshot: %q", l)
	}
	if _, err := os.Stat(filepath.Join(e.repo, "pins", first)); !os.IsNotExist(err) {
		t.Errorf("the pin file of an unpinned snapshot: %v", err)
	}
	res = e.expect(exitOK, "unpin", "--json", "latest")
	var unpinned struct {
		ID     string `json:"id"`
		Pinned bool   `json:"pinned"`
	}
	decodeJSON(t, res, &unpinned)
	if unpinned.ID != second || unpinned.Pinned {
		t.Errorf("unpin --json latest: %+v, want snapshot %s not pinned", unpinned, second)
	}
	if n := len(objects(t, filepath.Join(e.repo, "pins"))); n != 0 {
		t.Errorf("%d pins remain after unpinning both", n)
	}
	if n := len(objects(t, filepath.Join(e.repo, "locks"))); n != 0 {
		t.Errorf("%d locks remain", n)
	}
}

// TestPinErrors: every refused pin or unpin exits with the documented
// code, says why in one line, and leaves the repository as it was.
func TestPinErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a.txt"), "a\n", 0o644)
	id := e.backup(exitOK, src).SnapshotID
	pinned := e.backup(exitOK, src).SnapshotID
	e.expect(exitOK, "pin", pinned, "--reason", "keep")
	wrongPw := filepath.Join(e.dir, "wrong")
	writeFile(t, wrongPw, "not the password\n", 0o600)

	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"pin of no such snapshot", []string{"pin", "ffffffffffff"}, exitFailure, "snapshot not found"},
		{"unpin of no such snapshot", []string{"unpin", "ffffffffffff"}, exitFailure, "snapshot not found"},
		{"unpin of an unpinned snapshot", []string{"unpin", id}, exitFailure, "not pinned"},
		{"pin without a snapshot", []string{"pin"}, exitUsage, "exactly one SNAPSHOT"},
		{"pin of two snapshots", []string{"pin", id, pinned}, exitUsage, "exactly one SNAPSHOT"},
		{"unpin without a snapshot", []string{"unpin"}, exitUsage, "exactly one SNAPSHOT"},
		{"reason of two lines", []string{"pin", id, "--reason", "one\ntwo"}, exitUsage, "one line"},
		{"no repository", []string{"pin", id, "-r", filepath.Join(e.dir, "none")}, exitNoRepository, "no repository"},
		{"wrong password", []string{"unpin", pinned, "--password-file", wrongPw}, exitWrongPassword, "wrong password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := repoFiles(t, e.repo)
			res := e.run(tt.args...)
			if res.Code != tt.code {
				t.Errorf("exit %d, want %d:\n%s", res.Code, tt.code, res)
			}
			if msg := lines(res.Stderr); len(msg) != 1 || !strings.Contains(msg[0], tt.says) {
				t.Errorf("want one line saying %q:\n%s", tt.says, res)
			}
			if after := repoFiles(t, e.repo); !reflect.DeepEqual(after, before) {
				t.Errorf("the repository changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	if got := e.pins(); !got[pinned].Pinned || got[pinned].PinReason != "keep" || got[id].Pinned {
		t.Errorf("pins after the refused commands: %+v", got)
	}
}

// TestPinBusy: beside a live exclusive lock (a forget or prune), pin and
// unpin answer busy at once and change nothing.
func TestPinBusy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a.txt"), "a\n", 0o644)
	id := e.backup(exitOK, src).SnapshotID
	pinned := e.backup(exitOK, src).SnapshotID
	e.expect(exitOK, "pin", pinned)
	pinsBefore := e.pins()

	e.holdExclusiveLock()

	pinFiles := filepath.Join(e.repo, "pins")
	before := objects(t, pinFiles)
	for _, args := range [][]string{{"pin", id}, {"unpin", pinned}} {
		res := e.run(args...)
		if res.Code != exitBusy {
			t.Errorf("%s beside an exclusive lock: exit %d, want %d:\n%s", args[0], res.Code, exitBusy, res)
		}
		if msg := lines(res.Stderr); len(msg) != 1 || !strings.Contains(msg[0], "busy") || !strings.Contains(msg[0], "exclusive") {
			t.Errorf("%s beside an exclusive lock: want one line naming the exclusive lock:\n%s", args[0], res)
		}
	}
	if after := objects(t, pinFiles); !reflect.DeepEqual(after, before) {
		t.Errorf("pins changed while the repository was busy: %v, before %v", after, before)
	}
	// Listing needs no lock.
	if got := e.pins(); !reflect.DeepEqual(got, pinsBefore) {
		t.Errorf("snapshots beside the exclusive lock: %+v, want %+v", got, pinsBefore)
	}
}

// TestDanglingPin: a pin whose snapshot was deleted by hand is a warning of
// check, not damage, and unpin removes it by its ID.
func TestDanglingPin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a.txt"), "a\n", 0o644)
	id := e.backup(exitOK, src).SnapshotID
	e.expect(exitOK, "pin", id)
	if err := os.Remove(filepath.Join(e.repo, "snapshots", id)); err != nil {
		t.Fatal(err)
	}
	res := e.run("check", "--json")
	var ck struct {
		OK           bool     `json:"ok"`
		DanglingPins []string `json:"dangling_pins"`
	}
	decodeJSON(t, res, &ck)
	if res.Code != exitOK || !ck.OK || !reflect.DeepEqual(ck.DanglingPins, []string{id}) {
		t.Errorf("check --json with a dangling pin: want ok, exit 0 and dangling_pins [%s]:\n%s", id, res)
	}
	if !strings.Contains(res.Stderr, "warning: pin of snapshot "+id) {
		t.Errorf("check gives no warning about the dangling pin:\n%s", res)
	}
	e.expect(exitOK, "unpin", id[:12])
	if n := len(objects(t, filepath.Join(e.repo, "pins"))); n != 0 {
		t.Errorf("%d pins remain after unpin", n)
	}
	res = e.expect(exitOK, "check")
	if strings.Contains(res.Stderr, "pin") {
		t.Errorf("check still warns after unpin:\n%s", res)
	}
}

// TestDamagedPin: a pin whose object is damaged still marks its snapshot
// as pinned in the listing (what pins is the name), with a warning; check
// reports it as damage; unpin removes it.
func TestDamagedPin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "a.txt"), "a\n", 0o644)
	id := e.backup(exitOK, src).SnapshotID
	e.expect(exitOK, "pin", id, "--reason", "keep")
	pinFile := filepath.Join(e.repo, "pins", id)
	fi, err := os.Stat(pinFile)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, pinFile, fi.Size()-5)

	res := e.expect(exitOK, "snapshots", "--json")
	var list []pinnedReport
	decodeJSON(t, res, &list)
	if len(list) != 1 || !list[0].Pinned || list[0].PinReason != "" {
		t.Errorf("snapshots --json with a damaged pin: %+v, want the snapshot pinned without a reason", list)
	}
	if msg := lines(res.Stderr); len(msg) != 1 || !strings.Contains(msg[0], "warning: pin "+id) {
		t.Errorf("snapshots with a damaged pin: want one warning naming it:\n%s", res)
	}
	ck, res := e.check()
	if res.Code != exitFailure || ck.OK || len(ck.Problems) != 1 || ck.Problems[0].Object != "pin "+id {
		t.Errorf("check with a damaged pin: want exit 1 and one problem \"pin %s\":\n%s", id, res)
	}
	e.expect(exitOK, "unpin", id)
	if ck, res := e.check(); res.Code != exitOK || !ck.OK {
		t.Errorf("check after unpinning the damaged pin:\n%s", res)
	}
}

// TestPinsOfOldRepository: a repository written before pins existed (the
// golden repository, which has no pins folder) lists its snapshots, read
// only, as not pinned and without writing anything, and takes a pin.
func TestPinsOfOldRepository(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	copyDir(t, filepath.Join("..", "..", "testdata", "repo", "v2"), e.repo)
	pwFile := filepath.Join(e.dir, "golden-password")
	writeFile(t, pwFile, "nightjar golden repository\n", 0o644)
	withPw := []string{"NIGHTJAR_PASSWORD_FILE=" + pwFile}
	if _, err := os.Stat(filepath.Join(e.repo, "pins")); !os.IsNotExist(err) {
		t.Fatalf("the golden repository has a pins folder: %v", err)
	}

	// Read only: every folder and file of the repository, and as a user
	// who cannot write there when the tests run as root.
	setModes := func(dirMode, fileMode os.FileMode) {
		t.Helper()
		err := filepath.WalkDir(e.repo, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return os.Chmod(p, dirMode)
			}
			return os.Chmod(p, fileMode)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setModes(0o555, 0o444)
	ro := *e
	ro.t = t
	if isRoot() {
		uid, gid := nobody(t)
		ro.cred = &syscall.Credential{Uid: uid, Gid: gid}
		for _, d := range []string{filepath.Dir(e.dir), e.dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(e.home, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	before := repoFiles(t, e.repo)
	res := ro.runEnv(withPw, "snapshots", "--json")
	var list []pinnedReport
	decodeJSON(t, res, &list)
	if res.Code != exitOK || len(list) != 1 || list[0].ID != "golden-v2" || list[0].Pinned {
		t.Errorf("snapshots --json of the read-only golden repository: want golden-v2, not pinned:\n%s", res)
	}
	if after := repoFiles(t, e.repo); !reflect.DeepEqual(after, before) {
		t.Errorf("listing changed the repository:\nbefore %v\nafter  %v", before, after)
	}

	setModes(0o700, 0o600)
	if res := e.runEnv(withPw, "pin", "golden-v2", "--reason", "old"); res.Code != exitOK {
		t.Fatalf("pin in a repository made before pins:\n%s", res)
	}
	res = e.runEnv(withPw, "snapshots", "--json")
	decodeJSON(t, res, &list)
	if len(list) != 1 || !list[0].Pinned || list[0].PinReason != "old" {
		t.Errorf("snapshots --json after the pin: %+v", list)
	}
	if res := e.runEnv(withPw, "check"); res.Code != exitOK {
		t.Errorf("check after the pin:\n%s", res)
	}
}
