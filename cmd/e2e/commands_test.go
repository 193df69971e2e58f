//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJSONOutput: with --json, every command prints exactly one JSON
// document on stdout and nothing else.
func TestJSONOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := filepath.Join(e.dir, "src")
	rt := buildRichTree(t, src)

	res := e.expect(exitOK, "init", "--json")
	var initOut struct {
		ID string `json:"id"`
	}
	decodeJSON(t, res, &initOut)
	if len(initOut.ID) < 8 {
		t.Errorf("init --json: id %q", initOut.ID)
	}

	b := e.backup(exitOK, "--tag", "e2e", src)
	if b.SnapshotID == "" {
		t.Fatal("backup --json: no snapshot_id")
	}

	snaps := e.snapshots()
	if len(snaps) != 1 || snaps[0].ID != b.SnapshotID || len(snaps[0].Paths) != 1 || snaps[0].Paths[0] != src ||
		len(snaps[0].Tags) != 1 || snaps[0].Tags[0] != "e2e" {
		t.Errorf("snapshots --json: %+v", snaps)
	}

	res = e.expect(exitOK, "ls", "--json", "latest", src)
	var ls []lsEntry
	decodeJSON(t, res, &ls)
	byPath := map[string]lsEntry{}
	for _, l := range ls {
		byPath[l.Path] = l
	}
	if byPath[src].Type != "dir" || byPath[filepath.Join(src, "link-rel")].LinkTarget != "tiny.txt" ||
		byPath[filepath.Join(src, "random.bin")].Size != 3<<20 {
		t.Errorf("ls --json lacks or misdescribes entries: %+v", ls)
	}
	// Every entry of the tree is listed (the one with a name that is not
	// UTF-8 as well, if only in the replacement form JSON allows).
	if want := len(scanTree(t, src)); len(ls) != want {
		t.Errorf("ls --json lists %d entries below %s, the tree has %d", len(ls), src, want)
	}
	if e, ok := byPath[filepath.Join(src, "caf\xe9")]; ok {
		t.Logf("ls --json shows a non-UTF-8 name as %q", e.Path)
	} else {
		t.Logf("ls --json cannot show the non-UTF-8 name caf\\xe9 exactly (JSON strings are UTF-8)")
	}

	ck, res := e.check()
	if res.Code != exitOK || !ck.OK || ck.Snapshots != 1 || ck.Problems == nil {
		t.Errorf("check --json: %+v\n%s", ck, res)
	}

	res = e.expect(exitOK, "key", "list", "--json")
	var keys []keyReport
	decodeJSON(t, res, &keys)
	if len(keys) != 1 || !keys[0].Current {
		t.Errorf("key list --json: %+v", keys)
	}

	res = e.expect(exitOK, "restore", "--json", "latest", "--target", filepath.Join(e.dir, "restore"), "--verify")
	var rr restoreReport
	decodeJSON(t, res, &rr)
	if rr.Verified != int64(rt.files) {
		t.Errorf("restore --json: verified %d files, want %d", rr.Verified, rt.files)
	}

	// A partial backup still prints its JSON, and the exit code says so.
	unreadable := filepath.Join(e.dir, "does-not-exist")
	pb := e.backup(exitPartial, src, unreadable)
	if !pb.Partial || len(pb.Skipped) != 1 {
		t.Errorf("partial backup --json: %+v", pb)
	}

	// --time sets the snapshot's time, to the nanosecond.
	when := "2020-01-02T03:04:05.123456789Z"
	tb := e.backup(exitOK, "--time", when, src)
	found := false
	for _, s := range e.snapshots() {
		if s.ID == tb.SnapshotID {
			found = true
			if got := s.Time.UTC().Format(time.RFC3339Nano); got != when {
				t.Errorf("backup --time %s: snapshot time %s", when, got)
			}
		}
	}
	if !found {
		t.Errorf("snapshot %s of backup --time is not listed", tb.SnapshotID)
	}
}

// TestReplacedRepository: a command that finds a different repository
// behind a path it knows says so.
func TestReplacedRepository(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	if res := e.expect(exitOK, "snapshots"); strings.Contains(res.Stderr, "different") {
		t.Errorf("warning for the repository it just made:\n%s", res)
	}
	other := filepath.Join(e.dir, "other")
	e.expect(exitOK, "init", "-r", other)
	if err := os.Rename(e.repo, filepath.Join(e.dir, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, e.repo); err != nil {
		t.Fatal(err)
	}
	res := e.expect(exitOK, "snapshots")
	if !strings.Contains(res.Stderr, "different repository") {
		t.Errorf("no warning about the replaced repository:\n%s", res)
	}
}

// TestKeys: several passwords open one repository; passwd replaces the
// current one; the key in use cannot be removed.
func TestKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	pw2 := filepath.Join(e.dir, "password2")
	pw3 := filepath.Join(e.dir, "password3")
	writeFile(t, pw2, "second password\n", 0o600)
	writeFile(t, pw3, "third password\n", 0o600)
	with := func(pw string) []string { return []string{"NIGHTJAR_PASSWORD_FILE=" + pw} }

	keysWith := func(pw string) []keyReport {
		t.Helper()
		res := e.runEnv(with(pw), "key", "list", "--json")
		if res.Code != exitOK {
			t.Fatalf("key list with %s:\n%s", filepath.Base(pw), res)
		}
		var keys []keyReport
		decodeJSON(t, res, &keys)
		return keys
	}
	current := func(keys []keyReport) string {
		for _, k := range keys {
			if k.Current {
				return k.ID
			}
		}
		t.Fatalf("no current key in %+v", keys)
		return ""
	}

	e.expect(exitOK, "key", "add", "--new-password-file", pw2)
	keys1 := keysWith(e.pwFile)
	keys2 := keysWith(pw2)
	if len(keys1) != 2 || len(keys2) != 2 {
		t.Fatalf("after key add: %d and %d keys, want 2", len(keys1), len(keys2))
	}
	key1, key2 := current(keys1), current(keys2)
	if key1 == key2 {
		t.Errorf("both passwords open the same key %s", key1)
	}

	// Removing the key in use fails and keeps it.
	res := e.run("key", "remove", key1)
	if res.Code == exitOK {
		t.Errorf("key remove of the key in use succeeded:\n%s", res)
	}
	if n := len(keysWith(e.pwFile)); n != 2 {
		t.Errorf("after refusing to remove the key in use: %d keys, want 2", n)
	}

	// passwd replaces the first password with the third.
	e.expect(exitOK, "key", "passwd", "--new-password-file", pw3)
	if res := e.run("snapshots"); res.Code != exitWrongPassword {
		t.Errorf("the old password still opens after key passwd:\n%s", res)
	}
	keys3 := keysWith(pw3)
	key3 := current(keys3)
	if len(keys3) != 2 || key3 == key1 || key3 == key2 {
		t.Errorf("after passwd: keys %+v (old %s, second %s)", keys3, key1, key2)
	}
	if current(keysWith(pw2)) != key2 {
		t.Error("passwd changed the second password's key")
	}

	// The second key can be removed with the third password.
	res = e.runEnv(with(pw3), "key", "remove", key2)
	if res.Code != exitOK {
		t.Fatalf("key remove of another key:\n%s", res)
	}
	if res := e.runEnv(with(pw2), "snapshots"); res.Code != exitWrongPassword {
		t.Errorf("a removed key still opens the repository:\n%s", res)
	}
	if keys := keysWith(pw3); len(keys) != 1 {
		t.Errorf("after removing: %+v", keys)
	}
}

// TestRestoreSafety: restore never writes outside its target through a
// symlink that is already there, does not overwrite without --overwrite,
// and restores only what --include and --exclude select.
func TestRestoreSafety(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	src := filepath.Join(e.dir, "src")
	files := map[string]string{
		"main.go":        "package main\n",
		"y.log":          "log y\n",
		"docs/a.txt":     "doc a\n",
		"docs/sub/b.txt": "doc b\n",
		"logs/x.log":     "log x\n",
	}
	files["hl/first"] = "one inode, two names\n"
	for rel, content := range files {
		mkdirAll(t, filepath.Dir(filepath.Join(src, rel)), 0o755)
		writeFile(t, filepath.Join(src, rel), content, 0o644)
	}
	if err := os.Link(filepath.Join(src, "hl/first"), filepath.Join(src, "hl/second")); err != nil {
		t.Fatal(err)
	}
	files["hl/second"] = files["hl/first"]
	e.backup(exitOK, src)

	// outsideEmpty fails the test if anything was written into dir.
	outsideEmpty := func(t *testing.T, dir string) {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			var names []string
			for _, en := range entries {
				names = append(names, en.Name())
			}
			t.Errorf("restore wrote outside its target, into %s: %q", dir, names)
		}
	}

	symlinkCases := []struct {
		name      string
		link      string // path below the target that is a symlink to outside
		overwrite bool
	}{
		{"first path component", strings.Split(strings.TrimPrefix(src, "/"), "/")[0], false},
		{"the source folder itself", strings.TrimPrefix(src, "/"), false},
		{"a sub folder", strings.TrimPrefix(filepath.Join(src, "docs"), "/"), false},
		{"a file, with --overwrite", strings.TrimPrefix(filepath.Join(src, "main.go"), "/"), true},
	}
	for i, c := range symlinkCases {
		t.Run("symlink in the target at "+c.name, func(t *testing.T) {
			base := filepath.Join(e.dir, "symlink-case", string(rune('a'+i)))
			target := filepath.Join(base, "target")
			outside := filepath.Join(base, "outside")
			mkdirAll(t, outside, 0o755)
			link := filepath.Join(target, c.link)
			mkdirAll(t, filepath.Dir(link), 0o755)
			// For a file the symlink points at a name outside that does
			// not exist yet: following it would create it.
			dest := outside
			if strings.HasSuffix(c.link, ".go") {
				dest = filepath.Join(outside, "planted")
			}
			if err := os.Symlink(dest, link); err != nil {
				t.Fatal(err)
			}
			args := []string{"restore", "latest", "--target", target}
			if c.overwrite {
				args = append(args, "--overwrite")
			}
			res := e.run(args...)
			t.Logf("restore exited %d", res.Code)
			outsideEmpty(t, outside)
			if c.overwrite {
				if res.Code != exitOK {
					t.Errorf("restore --overwrite over a symlink: want exit 0:\n%s", res)
				}
				fi, err := os.Lstat(link)
				if err != nil || !fi.Mode().IsRegular() || readFile(t, link) != files["main.go"] {
					t.Errorf("with --overwrite the symlink should be replaced by the file: %v %v", fi, err)
				}
			} else {
				if res.Code != exitPartial {
					t.Errorf("restore blocked by a symlink: want exit %d (incomplete):\n%s", exitPartial, res)
				}
				if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
					t.Errorf("the symlink in the target was replaced or removed: %v %v", fi, err)
				}
			}
		})
	}

	t.Run("existing files", func(t *testing.T) {
		target := filepath.Join(e.dir, "existing")
		e.expect(exitOK, "restore", "latest", "--target", target)
		mainGo := filepath.Join(target, src, "main.go")
		writeFile(t, mainGo, "local edit\n", 0o644)

		res := e.run("restore", "latest", "--target", target)
		if res.Code != exitPartial {
			t.Errorf("restore over existing files without --overwrite: want exit %d:\n%s", exitPartial, res)
		}
		if got := readFile(t, mainGo); got != "local edit\n" {
			t.Errorf("without --overwrite the existing file was changed to %q", got)
		}

		e.expect(exitOK, "restore", "latest", "--target", target, "--overwrite")
		if got := readFile(t, mainGo); got != files["main.go"] {
			t.Errorf("with --overwrite the file is %q, want the snapshot's %q", got, files["main.go"])
		}
	})

	hardlinkCases := []struct {
		name    string
		symlink bool // the first name is a symlink to a file outside the target
	}{
		{"a file", false},
		{"a symlink to outside", true},
	}
	for i, c := range hardlinkCases {
		t.Run("first name of a hardlink pair exists in the target as "+c.name, func(t *testing.T) {
			base := filepath.Join(e.dir, "hardlink-blocked", string(rune('a'+i)))
			target := filepath.Join(base, "target")
			outside := filepath.Join(base, "outside.txt")
			mkdirAll(t, base, 0o755)
			writeFile(t, outside, "outside the target\n", 0o644)
			first := filepath.Join(target, src, "hl", "first")
			second := filepath.Join(target, src, "hl", "second")
			mkdirAll(t, filepath.Dir(first), 0o755)
			local := "a local file that is not in the snapshot\n"
			if c.symlink {
				local = "outside the target\n"
				if err := os.Symlink(outside, first); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, first, local, 0o644)
			}

			res := e.run("restore", "latest", "--target", target)
			if res.Code != exitPartial {
				t.Errorf("want exit %d (first name not overwritten):\n%s", exitPartial, res)
			}
			if got := readFile(t, first); got != local {
				t.Errorf("the existing entry now reads %q", got)
			}
			if got := readFile(t, outside); got != "outside the target\n" {
				t.Errorf("the file outside the target was changed to %q", got)
			}
			// The second name is either not restored or restored as a file
			// with the snapshot's content; it must not become another name
			// of what was in the target.
			fi, err := os.Lstat(second)
			if err != nil {
				return
			}
			if !fi.Mode().IsRegular() {
				t.Errorf("hl/second, a file in the snapshot, was restored as %s (a hardlink to the pre-existing entry)", fi.Mode().Type())
			} else if got := readFile(t, second); got != files["hl/second"] {
				t.Errorf("hl/second was restored with the content of the entry that was in the target: %q", got)
			}
			var a, b syscall.Stat_t
			if syscall.Lstat(first, &a) == nil && syscall.Lstat(second, &b) == nil && a.Ino == b.Ino {
				t.Errorf("hl/second was restored as a hardlink to the pre-existing %s", first)
			}
		})
	}

	selectCases := []struct {
		name string
		args []string
		want []string
	}{
		{"include a folder", []string{"--include", "docs"}, []string{"docs/a.txt", "docs/sub/b.txt"}},
		{"include a file by full path", []string{"--include", filepath.Join(src, "main.go")}, []string{"main.go"}},
		{"exclude a pattern", []string{"--exclude", "*.log"}, []string{"docs/a.txt", "docs/sub/b.txt", "hl/first", "hl/second", "main.go"}},
		{"include one name of a hardlink pair", []string{"--include", "second"}, []string{"hl/second"}},
		{"include and exclude", []string{"--include", "docs", "--exclude", "sub"}, []string{"docs/a.txt"}},
	}
	for i, c := range selectCases {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(e.dir, "select", string(rune('a'+i)))
			e.expect(exitOK, append([]string{"restore", "latest", "--target", target, "--verify"}, c.args...)...)
			var got []string
			root := filepath.Join(target, src)
			_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					rel, _ := filepath.Rel(root, p)
					got = append(got, rel)
					if readFile(t, p) != files[rel] {
						t.Errorf("%s restored with wrong content", rel)
					}
				}
				return nil
			})
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("restored %q, want %q", got, c.want)
			}
		})
	}
}

// TestPasswordSources: the password comes from a file, a command or
// NIGHTJAR_PASSWORD, never from the command line.
func TestPasswordSources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.init()
	cases := []struct {
		name string
		env  []string
		args []string
		want int
	}{
		{"password file flag", []string{"NIGHTJAR_PASSWORD_FILE="}, []string{"snapshots", "--password-file", e.pwFile}, exitOK},
		{"password command", []string{"NIGHTJAR_PASSWORD_FILE="}, []string{"snapshots", "--password-command", "cat " + e.pwFile}, exitOK},
		{"password command env", []string{"NIGHTJAR_PASSWORD_FILE=", "NIGHTJAR_PASSWORD_COMMAND=cat " + e.pwFile}, []string{"snapshots"}, exitOK},
		{"password env", []string{"NIGHTJAR_PASSWORD_FILE=", "NIGHTJAR_PASSWORD=" + testPassword}, []string{"snapshots"}, exitOK},
		{"wrong password env", []string{"NIGHTJAR_PASSWORD_FILE=", "NIGHTJAR_PASSWORD=nope"}, []string{"snapshots"}, exitWrongPassword},
		{"failing password command", []string{"NIGHTJAR_PASSWORD_FILE="}, []string{"snapshots", "--password-command", "exit 3"}, exitUsage},
		{"missing password file", nil, []string{"snapshots", "--password-file", filepath.Join(e.dir, "nope")}, exitUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := *e
			e.t = t
			if res := e.runEnv(c.env, c.args...); res.Code != c.want {
				t.Errorf("want exit %d:\n%s", c.want, res)
			}
		})
	}
}

// TestInsecureRepository: a repository without encryption exists only on
// request, and every command that opens it warns, on stderr.
func TestInsecureRepository(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeFile(t, filepath.Join(src, "file"), "plain\n", 0o644)
	env := []string{"NIGHTJAR_PASSWORD_FILE="}
	for _, args := range [][]string{
		{"init", "--insecure-no-encryption", "--json"},
		{"backup", "--json", src},
		{"snapshots", "--json"},
		{"check", "--json"},
	} {
		res := e.runEnv(env, args...)
		if res.Code != exitOK {
			t.Fatalf("want exit 0:\n%s", res)
		}
		if !strings.Contains(res.Stderr, "NOT ENCRYPTED") {
			t.Errorf("%s on an unencrypted repository does not warn:\n%s", args[0], res)
		}
		if !jsonValid(res.Stdout) {
			t.Errorf("%s --json: stdout is not JSON:\n%s", args[0], res)
		}
	}
	if res := e.runEnv(env, "key", "add", "--new-password-file", e.pwFile); res.Code == exitOK {
		t.Errorf("key add on an unencrypted repository succeeded:\n%s", res)
	}
}

// TestBadCommandLines: an unknown command or repository scheme is a bad
// command line (exit 2, as the README says), told in one line, and nothing
// is created.
func TestBadCommandLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name    string
		args    []string
		message string // a part of the one-line message
	}{
		{"unknown command", []string{"foo"}, `unknown command "foo"`},
		{"unknown command with flags", []string{"foo", "--json"}, `unknown command "foo"`},
		{"unknown subcommand", []string{"job", "foo"}, `unknown command "foo": see nightjar job --help`},
		{"unknown scheme", []string{"snapshots", "-r", "sftp:host:/srv"}, `unknown scheme "sftp" (known: local, s3`},
		{"s3 location without a bucket", []string{"snapshots", "-r", "s3:https://host"}, "no bucket"},
		{"s3 location with a bad port", []string{"init", "-r", "s3:https://host:0/bucket"}, `bad port "0"`},
		{"unknown scheme on init", []string{"init", "-r", "nosuch:repo"}, `unknown scheme "nosuch"`},
		{"scheme without a path", []string{"snapshots", "-r", "local:"}, "no path after the scheme"},
		{"help of an unknown command", []string{"help", "nope"}, `no help for "nope"`},
		{"help of an unknown subcommand", []string{"job", "help", "nope"}, `no help for "nope": see nightjar job --help`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := *e
			e.t = t
			res := e.run(c.args...)
			if res.Code != exitUsage {
				t.Fatalf("want exit %d:\n%s", exitUsage, res)
			}
			msg := lines(res.Stderr)
			if len(msg) != 1 || !strings.Contains(msg[0], c.message) || res.Stdout != "" {
				t.Errorf("want one line on stderr saying %q and nothing on stdout:\n%s", c.message, res)
			}
		})
	}
	if entries, err := os.ReadDir(e.dir); err != nil {
		t.Fatal(err)
	} else {
		for _, entry := range entries {
			if name := entry.Name(); name != "password" && name != "home" {
				t.Errorf("a bad command line created %s", name)
			}
		}
	}
}

// TestHelp: help, help COMMAND and GROUP help COMMAND show the help of the
// program or of that command on stdout and exit 0, as restic's help does.
func TestHelp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		args []string
		want string // the NAME line of the help shown
	}{
		{[]string{"help"}, "nightjar - schedule and run"},
		{[]string{"help", "backup"}, "nightjar backup - "},
		{[]string{"help", "job"}, "nightjar job - "},
		{[]string{"job", "help", "run"}, "nightjar job run - "},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			e := *e
			e.t = t
			res := e.expect(exitOK, c.args...)
			if !strings.Contains(res.Stdout, c.want) {
				t.Errorf("want help saying %q on stdout:\n%s", c.want, res)
			}
		})
	}
}

// TestLocalScheme: -r local:PATH is the folder PATH, and a folder whose
// name has a colon is reached with ./ or local:.
func TestLocalScheme(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.expect(exitOK, "init", "-r", "local:"+e.repo)
	e.expect(exitOK, "snapshots", "-r", e.repo)
	e.expect(exitOK, "snapshots", "-r", "local:repo") // relative to the working folder
	e.expect(exitOK, "init", "-r", "./with:colon")
	e.expect(exitOK, "snapshots", "-r", "local:with:colon")
	if _, err := os.Stat(filepath.Join(e.dir, "with:colon", "config")); err != nil {
		t.Errorf("init -r ./with:colon made no repository in the folder with:colon: %v", err)
	}
}
