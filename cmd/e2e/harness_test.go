//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/nightjar-backup/nightjar/cmd/internal/buildbin"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Exit codes of nightjar (cmd/exitcode.go); the tests spell them out again
// on purpose: they are an interface that must not change by accident.
const (
	exitOK            = 0
	exitFailure       = 1
	exitUsage         = 2
	exitPartial       = 3
	exitNoRepository  = 10
	exitBusy          = 11
	exitWrongPassword = 12
	exitInterrupted   = 130
)

// commandTimeout bounds every run of the binary, so that a hang fails one
// test instead of the whole package. It is a safety net, never a
// verdict: far beyond what any command takes on a loaded machine (a
// 300 MB backup through the race-detecting build at load 38 took over
// 2 minutes), since tests decide by events.
const commandTimeout = 15 * time.Minute

// patience bounds every wait for an event that a test polls for, as a
// safety net like commandTimeout: on a loaded machine events come late,
// never wrongly.
const patience = 10 * time.Minute

// env is one test's world: a repository path, a password file, HOME and a
// cache folder, all under t.TempDir().
type env struct {
	t      *testing.T
	dir    string
	repo   string
	pwFile string
	home   string
	cred   *syscall.Credential // run the binary as this user; nil: as ourselves
	bin    string              // the binary to run; "": binPath
	extra  []string            // environment of every run, before a run's own (an S3 server's credentials)
}

const testPassword = "correct horse battery staple"

func newEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{
		t:      t,
		dir:    dir,
		repo:   filepath.Join(dir, "repo"),
		pwFile: filepath.Join(dir, "password"),
		home:   filepath.Join(dir, "home"),
	}
	writeFile(t, e.pwFile, testPassword+"\n", 0o600)
	mkdirAll(t, e.home, 0o700)
	// A temporary folder of its own, open to every user as /tmp is (some
	// tests run the binary as another user): check and prune sweep the
	// sort files that killed runs leave there, and a test that kills one
	// must not make another test's check report them.
	mkdirAll(t, filepath.Join(e.home, "tmp"), 0o700)
	if err := os.Chmod(filepath.Join(e.home, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	makeRemovable(t, dir)
	return e
}

// result is what one run of the binary did.
// result is one finished run of the binary.
type result = buildbin.Result

// environ is the environment of a run: nothing is inherited but PATH, so
// that a NIGHTJAR_* variable of whoever runs the tests cannot leak in.
// Later entries of extra override earlier ones.
func (e *env) environ(extra []string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.home,
		"XDG_CACHE_HOME=" + filepath.Join(e.home, ".cache"),
		"TMPDIR=" + filepath.Join(e.home, "tmp"),
		"NIGHTJAR_REPOSITORY=" + e.repo,
		"NIGHTJAR_PASSWORD_FILE=" + e.pwFile,
		"TZ=UTC",
		"LC_ALL=C",
		buildbin.RaceEnv(),
	}
	env = append(env, e.extra...)
	return append(env, extra...)
}

// command prepares a run of the binary; the caller starts it.
func (e *env) command(ctx context.Context, extra []string, args ...string) *exec.Cmd {
	bin := binPath
	if e.bin != "" {
		bin = e.bin
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.environ(extra)
	cmd.Dir = e.dir
	if e.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: e.cred}
	}
	return cmd
}

// runEnv runs the binary to its end with extra environment variables.
func (e *env) runEnv(extra []string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := e.command(ctx, extra, args...)
	res, err := buildbin.Run(cmd, args)
	if err != nil {
		e.t.Fatalf("run nightjar %q: %v\n%s", args, err, res)
	}
	return res
}

func (e *env) run(args ...string) result {
	e.t.Helper()
	return e.runEnv(nil, args...)
}

// expect runs the binary and fails the test unless it exits with want.
func (e *env) expect(want int, args ...string) result {
	e.t.Helper()
	res := e.run(args...)
	if res.Code != want {
		e.t.Fatalf("want exit %d, got:\n%s", want, res)
	}
	return res
}

// init creates the repository. A local one that the test itself may
// write is made in-process with a cheap key derivation
// (buildbin.CreateRepository): each later run of the binary then opens it
// in milliseconds instead of seconds. The tests of init itself run the
// binary's init; so does this, for a repository on S3 or one that another
// user must own.
func (e *env) init() {
	e.t.Helper()
	if e.cred != nil || !filepath.IsAbs(e.repo) {
		e.initWithBinary()
		return
	}
	if err := buildbin.CreateRepository(e.repo, testPassword); err != nil {
		e.t.Fatal(err)
	}
}

// initWithBinary creates the repository with nightjar init, and so with
// the key derivation users get.
func (e *env) initWithBinary() {
	e.t.Helper()
	e.expect(exitOK, "init")
}

// backup runs backup --json with args and decodes its report. want is the
// expected exit code.
func (e *env) backup(want int, args ...string) backupReport {
	e.t.Helper()
	res := e.expect(want, append([]string{"backup", "--json"}, args...)...)
	var out backupReport
	decodeJSON(e.t, res, &out)
	if out.MessageType != "summary" {
		e.t.Errorf("backup --json ends with message_type %q, want summary\n%s", out.MessageType, res)
	}
	return out
}

// snapshots lists the snapshots with --json.
func (e *env) snapshots() []snapshotReport {
	e.t.Helper()
	res := e.expect(exitOK, "snapshots", "--json")
	var out []snapshotReport
	decodeJSON(e.t, res, &out)
	return out
}

// check runs check --json with args and decodes its report, whatever the
// exit code.
func (e *env) check(args ...string) (checkReport, result) {
	e.t.Helper()
	res := e.run(append([]string{"check", "--json"}, args...)...)
	var out checkReport
	decodeJSON(e.t, res, &out)
	return out, res
}

// decodeJSON decodes the last JSON document of stdout into v. stdout must
// hold nothing but JSON documents: one, or (backup --json) status objects,
// each on a line of its own and well formed, before the last.
func decodeJSON(t *testing.T, res result, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(res.Stdout))
	var docs []json.RawMessage
	for {
		var doc json.RawMessage
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stdout is not a stream of JSON documents: %v\n%s", err, res)
		}
		docs = append(docs, doc)
	}
	if len(docs) == 0 {
		t.Fatalf("stdout holds no JSON document\n%s", res)
	}
	for _, doc := range docs[:len(docs)-1] {
		var status backupStatus
		if err := json.Unmarshal(doc, &status); err != nil || status.MessageType != "status" || bytes.ContainsRune(doc, '\n') {
			t.Fatalf("before the last document, stdout holds one that is not a status object on one line (%v): %s\n%s", err, doc, res)
		}
		if status.FilesDone < 0 || status.BytesDone < 0 || status.PercentDone < 0 || status.PercentDone > 1 ||
			(status.TotalFiles > 0 && status.FilesDone > status.TotalFiles) {
			t.Errorf("status object with impossible figures: %s", doc)
		}
	}
	if err := json.Unmarshal(docs[len(docs)-1], v); err != nil {
		t.Fatalf("stdout's last JSON document does not decode: %v\n%s", err, res)
	}
}

// backupStatus is a status object of backup --json.
type backupStatus struct {
	MessageType      string   `json:"message_type"`
	SecondsElapsed   int64    `json:"seconds_elapsed"`
	SecondsRemaining int64    `json:"seconds_remaining"`
	PercentDone      float64  `json:"percent_done"`
	TotalFiles       int64    `json:"total_files"`
	FilesDone        int64    `json:"files_done"`
	TotalBytes       int64    `json:"total_bytes"`
	BytesDone        int64    `json:"bytes_done"`
	ErrorCount       int64    `json:"error_count"`
	CurrentFiles     []string `json:"current_files"`
}

// The JSON documents the commands print, as far as the tests read them.
// They are declared here, not taken from cmd, so that a renamed field
// breaks a test.

type skipReport struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// backupReport is the summary of backup --json (restic's field names
// where they mean the same).
type backupReport struct {
	MessageType    string       `json:"message_type"`
	SnapshotID     string       `json:"snapshot_id"`
	Parent         string       `json:"parent"`
	Partial        bool         `json:"partial"`
	FilesNew       int64        `json:"files_new"`
	FilesChanged   int64        `json:"files_changed"`
	FilesUnchanged int64        `json:"files_unmodified"`
	Dirs           int64        `json:"dirs"`
	OtherEntries   int64        `json:"other_entries"`
	BytesRead      int64        `json:"bytes_read"`
	BytesAdded     int64        `json:"data_added_packed"`
	TotalSize      int64        `json:"total_bytes_processed"`
	FilesSkipped   int64        `json:"files_skipped"`
	Skipped        []skipReport `json:"skipped"`
	ChangedDuring  []string     `json:"changed_during_read"`
	AdoptedPacks   int          `json:"adopted_packs"`
	Seconds        float64      `json:"total_duration"`
}

type snapshotReport struct {
	ID      string    `json:"id"`
	Time    time.Time `json:"time"`
	Paths   []string  `json:"paths"`
	Tags    []string  `json:"tags"`
	Summary struct {
		Partial      bool         `json:"partial"`
		FilesSkipped int64        `json:"files_skipped"`
		Skipped      []skipReport `json:"skipped"`
	} `json:"summary"`
}

type lsEntry struct {
	Path       string `json:"path"`
	Type       string `json:"type"`
	Mode       string `json:"mode"`
	Size       uint64 `json:"size"`
	LinkTarget string `json:"link_target"`
}

type checkReport struct {
	OK             bool `json:"ok"`
	IndexFiles     int  `json:"index_files"`
	Packs          int  `json:"packs"`
	Blobs          int  `json:"blobs"`
	Snapshots      int  `json:"snapshots"`
	PacksRead      int  `json:"packs_read"`
	UnindexedPacks int  `json:"unindexed_packs"`
	Problems       []struct {
		Object   string `json:"object"`
		Error    string `json:"error"`
		Affected []struct {
			Snapshot string `json:"snapshot"`
			Path     string `json:"path"`
		} `json:"affected"`
		Total int `json:"affected_total"`
	} `json:"problems"`
}

// restoreReport is the summary of restore --json (restic's field names
// where they mean the same).
type restoreReport struct {
	MessageType    string       `json:"message_type"`
	Files          int64        `json:"files_restored"`
	FilesSkipped   int64        `json:"files_skipped"`
	Dirs           int64        `json:"dirs"`
	Others         int64        `json:"others"`
	Bytes          int64        `json:"bytes_restored"`
	Verified       int64        `json:"files_verified"`
	Damaged        int64        `json:"damaged"`
	Partial        bool         `json:"partial"`
	Skipped        []skipReport `json:"skipped"`
	OwnershipKept  bool         `json:"ownership_restored"`
	VerifyFailures []skipReport `json:"verify_failures"`
}

type keyReport struct {
	ID      string `json:"id"`
	Current bool   `json:"current"`
}

// jsonValid reports whether s is exactly one JSON document.
func jsonValid(s string) bool { return json.Valid([]byte(s)) }

// repoFiles lists every file below a repository folder with its size, to
// compare a repository before and after a command that must not touch it.
func repoFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	files := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			files[rel+"/"] = 0
		} else {
			files[rel] = fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list repository files: %v", err)
	}
	return files
}

// objects lists the names of the regular files in a repository folder such
// as "snapshots", "index", "locks" or "data" (recursively), with sizes.
func objects(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			out[p] = fi.Size()
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("list %s: %v", dir, err)
	}
	return out
}

// largest returns the largest file of a listing.
func largest(t *testing.T, files map[string]int64) string {
	t.Helper()
	var best string
	var size int64 = -1
	for p, s := range files {
		if s > size || (s == size && p < best) {
			best, size = p, s
		}
	}
	if best == "" {
		t.Fatal("no files")
	}
	return best
}

// flipByte inverts one bit of the byte at offset in file p.
func flipByte(t *testing.T, p string, offset int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		// Repository objects are read-only to their owner on some systems.
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		if f, err = os.OpenFile(p, os.O_RDWR, 0); err != nil {
			t.Fatal(err)
		}
	}
	defer f.Close()
	var b [1]byte
	if _, err := f.ReadAt(b[:], offset); err != nil {
		t.Fatalf("read %s at %d: %v", p, offset, err)
	}
	b[0] ^= 0x01
	if _, err := f.WriteAt(b[:], offset); err != nil {
		t.Fatalf("write %s at %d: %v", p, offset, err)
	}
}

func writeFile(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func mkdirAll(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(p, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// makeRemovable makes every folder below dir writable again before
// t.TempDir's cleanup removes it: trees hold read-only folders.
func makeRemovable(t *testing.T, dir string) {
	t.Cleanup(func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
	})
}

// isRoot reports whether the tests run as root.
func isRoot() bool { return os.Geteuid() == 0 }

// nobody returns the uid and gid of the user nobody.
func nobody(t *testing.T) (uint32, uint32) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		return 65534, 65534
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return 65534, 65534
	}
	return uint32(uid), uint32(gid)
}

// shortID is the 8-digit form of a snapshot ID that text output uses.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// lines splits output into its non-empty lines.
func lines(s string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
