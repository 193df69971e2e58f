package cmd

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dump writes a file bit-exact, to stdout or --target.
func TestDumpFile(t *testing.T) {
	f := newReadFixture(t)
	stdout, stderr := f.expect(ExitOK, "dump", firstID, f.src+"/big.bin")
	if !bytes.Equal([]byte(stdout), f.big) || stderr != "" {
		t.Errorf("dump of big.bin: %d bytes, equal %v; stderr %q", len(stdout), bytes.Equal([]byte(stdout), f.big), stderr)
	}
	target := filepath.Join(t.TempDir(), "out.bin")
	if stdout, _ := f.expect(ExitOK, "dump", "--target", target, firstID, f.src+"/big.bin"); stdout != "" {
		t.Errorf("dump --target wrote %d bytes to stdout", len(stdout))
	}
	if got, err := os.ReadFile(target); err != nil || !bytes.Equal(got, f.big) {
		t.Errorf("dump --target: %d bytes, %v", len(got), err)
	}
	if stdout, _ := f.expect(ExitOK, "dump", secondID, f.src+"/a.txt"); stdout != "alpha 2\n" {
		t.Errorf("dump of a.txt: %q", stdout)
	}
}

// dump writes a folder as a tar stream, named by snapshot paths without
// the leading slash, with types, modes, times, owners, symlinks and data.
func TestDumpFolderAsTar(t *testing.T) {
	f := newReadFixture(t)
	stdout, _ := f.expect(ExitOK, "dump", firstID, f.src)
	tr := tar.NewReader(strings.NewReader(stdout))
	prefix := strings.TrimPrefix(f.src, "/")
	type entry struct {
		typ     byte
		mode    int64
		content string
		link    string
	}
	got := map[string]entry{}
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(fixtureTime) && h.Typeflag != tar.TypeSymlink {
			t.Errorf("%s: mtime %s, want %s", h.Name, h.ModTime, fixtureTime)
		}
		if h.Uid != os.Getuid() {
			t.Errorf("%s: uid %d, want %d", h.Name, h.Uid, os.Getuid())
		}
		names = append(names, strings.TrimPrefix(h.Name, prefix))
		got[strings.TrimPrefix(h.Name, prefix)] = entry{h.Typeflag, h.Mode, string(data), h.Linkname}
	}
	wantNames := []string{"/", "/a.txt", "/big.bin", "/docs/", "/docs/Readme.MD", "/docs/notes.txt", "/esc\x1bname", "/link"}
	if strings.Join(names, " ") != strings.Join(wantNames, " ") {
		t.Errorf("entries %q, want %q", names, wantNames)
	}
	want := map[string]entry{
		"/":               {tar.TypeDir, 0o755, "", ""},
		"/a.txt":          {tar.TypeReg, 0o644, "alpha\n", ""},
		"/big.bin":        {tar.TypeReg, 0o644, string(f.big), ""},
		"/docs/":          {tar.TypeDir, 0o755, "", ""},
		"/docs/Readme.MD": {tar.TypeReg, 0o644, "readme\n", ""},
		"/docs/notes.txt": {tar.TypeReg, 0o640, "notes\n", ""},
		"/esc\x1bname":    {tar.TypeReg, 0o644, "e\n", ""},
		"/link":           {tar.TypeSymlink, 0o777, "", "a.txt"},
	}
	for name, w := range want {
		if g := got[name]; g != w {
			t.Errorf("%q: type %c mode %o link %q, %d bytes; want type %c mode %o link %q, %d bytes",
				name, g.typ, g.mode, g.link, len(g.content), w.typ, w.mode, w.link, len(w.content))
		}
	}
}

// dump --archive zip writes a zip archive with modes and data.
func TestDumpFolderAsZip(t *testing.T) {
	f := newReadFixture(t)
	target := filepath.Join(t.TempDir(), "docs.zip")
	f.expect(ExitOK, "dump", "--archive", "zip", "--target", target, firstID, f.src+"/docs")
	z, err := zip.OpenReader(target)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	prefix := strings.TrimPrefix(f.src, "/")
	var got []string
	for _, zf := range z.File {
		rc, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.TrimPrefix(zf.Name, prefix)+" "+zf.Mode().String()+" "+strings.TrimSpace(string(data)))
	}
	want := []string{"/docs/ drwxr-xr-x ", "/docs/Readme.MD -rw-r--r-- readme", "/docs/notes.txt -rw-r----- notes"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("zip entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Bad input to dump is one line and its exit code.
func TestDumpBadInput(t *testing.T) {
	f := newReadFixture(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no path", []string{"dump", firstID}, ExitUsage, "nightjar: dump needs SNAPSHOT and PATH (a file or folder in the snapshot)\n"},
		{"an archive format that does not exist", []string{"dump", "--archive", "rar", firstID, f.src}, ExitUsage, "nightjar: --archive \"rar\": want tar or zip\n"},
		{"unknown snapshot", []string{"dump", "ffff", f.src}, ExitFailure, "nightjar: \"ffff\": snapshot not found\n"},
		{"a path not in the snapshot", []string{"dump", firstID, f.src + "/new.txt"}, ExitFailure, "nightjar: " + f.src + "/new.txt is not in snapshot " + shortID(firstID) + "\n"},
		{"a path below a file", []string{"dump", firstID, f.src + "/a.txt/x"}, ExitFailure, "nightjar: " + f.src + "/a.txt/x is not in snapshot " + shortID(firstID) + "\n"},
		{"a symlink", []string{"dump", firstID, f.src + "/link"}, ExitUsage, "nightjar: " + f.src + "/link is a symlink: dump writes files and folders\n"},
		{"a target that cannot be written", []string{"dump", "--target", filepath.Join(f.src, "missing", "x"), firstID, f.src + "/a.txt"}, ExitFailure,
			"nightjar: open --target: open " + filepath.Join(f.src, "missing", "x") + ": no such file or directory\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := f.with(t)
			stdout, stderr, code := f.run(tc.args...)
			if code != tc.code || stderr != tc.want || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit %d, stderr %q", code, stderr, stdout, tc.code, tc.want)
			}
		})
	}
}
