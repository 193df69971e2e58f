package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --path, --tag and --host narrow "latest" on ls, dump and restore, with
// restic's meaning; an ID names its snapshot whatever they say.
func TestLatestFilters(t *testing.T) {
	f := newReadFixture(t)
	tests := []struct {
		name    string
		filters []string
		want    string // the snapshot latest names
	}{
		{"no filter: the newest", nil, thirdID},
		{"--path", []string{"--path", f.src}, secondID},
		{"--path not clean", []string{"--path", f.src + "/"}, secondID},
		{"--tag", []string{"--tag", "daily"}, thirdID},
		{"--tag and --path", []string{"--tag", "daily", "--path", f.src}, firstID},
		{"--tag lists: any of them", []string{"--tag", "weekly", "--tag", "nosuch,daily"}, secondID},
		{"--host", []string{"--host", "h2"}, secondID},
		{"--host twice: any of them", []string{"--host", "h2", "--host", "h1"}, thirdID},
		{"--host and --path", []string{"--host", "h1", "--path", f.src}, firstID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := f.with(t)
			if got := f.lsLatest(tc.filters...); got != tc.want {
				t.Errorf("ls latest %s named %s, want %s", strings.Join(tc.filters, " "), got, tc.want)
			}
		})
	}
	t.Run("an ID whatever the filter", func(t *testing.T) {
		f := f.with(t)
		stdout, _ := f.expect(ExitOK, "ls", "--json", "--host", "h2", firstID, f.src+"/a.txt")
		if !strings.Contains(stdout, `"size": 6`) {
			t.Errorf("ls %s --host h2 did not list the first snapshot:\n%s", firstID, stdout)
		}
	})
	t.Run("dump", func(t *testing.T) {
		f := f.with(t)
		if stdout, _ := f.expect(ExitOK, "dump", "latest", f.src+"/a.txt", "--host", "h1", "--path", f.src); stdout != "alpha\n" {
			t.Errorf("dump latest --host h1 --path src: %q, want the first snapshot's a.txt", stdout)
		}
	})
	t.Run("restore", func(t *testing.T) {
		f := f.with(t)
		target := t.TempDir()
		f.expect(ExitOK, "restore", "latest", "--target", target, "--tag", "weekly")
		got, err := os.ReadFile(filepath.Join(target, f.src, "a.txt"))
		if err != nil || string(got) != "alpha 2\n" {
			t.Errorf("restore latest --tag weekly: a.txt %q, %v; want the second snapshot's", got, err)
		}
	})
	for _, cmd := range [][]string{{"ls", "latest"}, {"dump", "latest", "/"}, {"restore", "latest", "--target", t.TempDir()}} {
		t.Run(cmd[0]+" with a filter that matches nothing", func(t *testing.T) {
			f := f.with(t)
			stdout, stderr, code := f.run(append(cmd, "--host", "h2", "--path", f.other, "--tag", "weekly,daily")...)
			want := "nightjar: latest: no snapshot matches --host h2 --path " + f.other + " --tag weekly,daily: snapshot not found\n"
			if code != ExitFailure || stderr != want || stdout != "" {
				t.Errorf("exit %d, stderr %q, stdout %q; want exit 1, %q", code, stderr, stdout, want)
			}
		})
	}
}

// lsLatest returns which snapshot "ls latest" with filters lists, by the
// source it holds and the size of a.txt in it.
func (f *readFixture) lsLatest(filters ...string) string {
	f.t.Helper()
	stdout, _ := f.expect(ExitOK, append([]string{"ls", "--json", "latest"}, filters...)...)
	var entries []struct {
		Path string `json:"path"`
		Size int    `json:"size"`
	}
	if err := json.Unmarshal([]byte(stdout), &entries); err != nil {
		f.t.Fatalf("%v\n%s", err, stdout)
	}
	for _, e := range entries {
		switch {
		case e.Path == f.other:
			return thirdID
		case e.Path == f.src+"/a.txt" && e.Size == 6:
			return firstID
		case e.Path == f.src+"/a.txt" && e.Size == 8:
			return secondID
		}
	}
	f.t.Fatalf("ls latest %v lists no snapshot of the fixture:\n%s", filters, stdout)
	return ""
}

// ls prints a name with a control character escaped: no raw ESC reaches
// the terminal; --json carries the exact name.
func TestLsEscapesNames(t *testing.T) {
	f := newReadFixture(t)
	stdout, _ := f.expect(ExitOK, "ls", firstID, f.src)
	if strings.ContainsRune(stdout, 0x1b) || !strings.Contains(stdout, " "+f.src+`/esc\x1bname`+"\n") {
		t.Errorf("ls output:\n%q", stdout)
	}
	if stdout, _ := f.expect(ExitOK, "ls", "--json", firstID, f.src+"/esc\x1bname"); !strings.Contains(stdout, `esc\u001bname"`) {
		t.Errorf("ls --json:\n%s", stdout)
	}
	_, stderr, code := f.run("ls", firstID, f.src+"/no\x1b[2Jsuch")
	if want := "nightjar: " + f.src + `/no\x1b[2Jsuch is not in snapshot ` + shortID(firstID) + "\n"; code != ExitFailure || stderr != want {
		t.Errorf("exit %d, stderr %q; want exit 1, %q", code, stderr, want)
	}
}
