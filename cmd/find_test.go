package cmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// find matches a pattern without a slash against names, one with a slash
// against whole paths, in every snapshot or those selected, and prints one
// line per match: snapshot, mode, size, time, path.
func TestFind(t *testing.T) {
	f := newReadFixture(t)
	mtime := fixtureTime.Local().Format("2006-01-02 15:04")
	line := func(snap, mode, size, p string) string {
		return fmt.Sprintf("%s  %s %8s %s %s", snap[:8], mode, size, mtime, p)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"a name glob in every snapshot", []string{"find", "*.txt"}, []string{
			line(firstID, "-rw-r--r--", "6 B", f.src+"/a.txt"),
			line(firstID, "-rw-r-----", "6 B", f.src+"/docs/notes.txt"),
			line(secondID, "-rw-r--r--", "8 B", f.src+"/a.txt"),
			line(secondID, "-rw-r--r--", "4 B", f.src+"/new.txt"),
			line(thirdID, "-rw-r--r--", "6 B", f.other+"/other.txt"),
			"5 matches in 3 of 3 snapshots",
		}},
		{"case matters", []string{"find", "readme.md"}, []string{"0 matches in 0 of 3 snapshots"}},
		{"--ignore-case", []string{"find", "--ignore-case", "readme.md"}, []string{
			line(firstID, "-rw-r--r--", "7 B", f.src+"/docs/Readme.MD"),
			line(secondID, "-rw-------", "7 B", f.src+"/docs/Readme.MD"),
			"2 matches in 2 of 3 snapshots",
		}},
		{"a pattern with a slash matches the whole path", []string{"find", f.src + "/docs/*"}, []string{
			line(firstID, "-rw-r--r--", "7 B", f.src+"/docs/Readme.MD"),
			line(firstID, "-rw-r-----", "6 B", f.src+"/docs/notes.txt"),
			line(secondID, "-rw-------", "7 B", f.src+"/docs/Readme.MD"),
			"3 matches in 2 of 3 snapshots",
		}},
		{"several patterns, one line per entry", []string{"find", "--snapshot", secondID[:6], "new*", "*.txt"}, []string{
			line(secondID, "-rw-r--r--", "8 B", f.src+"/a.txt"),
			line(secondID, "-rw-r--r--", "4 B", f.src+"/new.txt"),
			line(secondID, "drwxr-xr-x", "0 B", f.src+"/newdir"),
			"3 matches in 1 of 1 snapshots",
		}},
		{"--host selects snapshots", []string{"find", "--host", "h2", "a.txt"}, []string{
			line(secondID, "-rw-r--r--", "8 B", f.src+"/a.txt"),
			"1 matches in 1 of 1 snapshots",
		}},
		{"a name with a control character is printed escaped", []string{"find", "esc*"}, []string{
			line(firstID, "-rw-r--r--", "2 B", f.src+`/esc\x1bname`),
			line(secondID, "-rw-r--r--", "2 B", f.src+`/esc\x1bname`),
			"2 matches in 2 of 3 snapshots",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := f.with(t)
			stdout, _ := f.expect(ExitOK, tc.args...)
			if want := strings.Join(tc.want, "\n") + "\n"; stdout != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
			}
		})
	}
}

// find --json groups the matches by snapshot, as restic does, and carries
// the exact name.
func TestFindJSON(t *testing.T) {
	f := newReadFixture(t)
	stdout, _ := f.expect(ExitOK, "find", "--json", "esc*", "--tag", "weekly")
	var got []struct {
		Snapshot string `json:"snapshot"`
		Hits     int    `json:"hits"`
		Matches  []struct {
			Path string `json:"path"`
			Type string `json:"type"`
			Size int    `json:"size"`
		} `json:"matches"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(got) != 1 || got[0].Snapshot != secondID || got[0].Hits != 1 || len(got[0].Matches) != 1 ||
		got[0].Matches[0].Path != f.src+"/esc\x1bname" || got[0].Matches[0].Type != "file" || got[0].Matches[0].Size != 2 {
		t.Errorf("find --json: %+v", got)
	}
}

// Bad input to find is one line and its exit code.
func TestFindBadInput(t *testing.T) {
	f := newReadFixture(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no pattern", []string{"find"}, ExitUsage, "nightjar: find needs at least one PATTERN (a glob: *.txt, /home/*/notes)\n"},
		{"a malformed pattern", []string{"find", "[a"}, ExitUsage, "nightjar: pattern \"[a\": syntax error in pattern (allowed: *, ?, [...] and \\ to escape)\n"},
		{"unknown snapshot", []string{"find", "--snapshot", "ffff", "*"}, ExitFailure, "nightjar: \"ffff\": snapshot not found\n"},
		{"a filter that selects nothing", []string{"find", "--host", "nohost", "--tag", "a,b", "*"}, ExitFailure,
			"nightjar: no snapshot matches --host nohost --tag a,b: snapshot not found\n"},
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
