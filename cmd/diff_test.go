package cmd

import (
	"encoding/json"
	"strings"
	"testing"
)

// diff names every entry below the source that changed, with restic's
// letters, in path order, and sums up the counts and bytes; --json gives
// restic's change lines and then one statistics line.
func TestDiff(t *testing.T) {
	f := newReadFixture(t)
	stdout, _ := f.expect(ExitOK, "diff", firstID, secondID)
	var changes []string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.Contains(line, f.src+"/") {
			changes = append(changes, line)
		}
	}
	want := []string{
		"M    " + f.src + "/a.txt",
		"U    " + f.src + "/docs/Readme.MD",
		"-    " + f.src + "/docs/notes.txt",
		"T    " + f.src + "/link",
		"+    " + f.src + "/new.txt",
		"+    " + f.src + "/newdir/",
		"+    " + f.src + "/newdir/x",
	}
	if strings.Join(changes, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(changes, "\n"), strings.Join(want, "\n"))
	}
	// Added: new.txt, newdir/x, and link as a file (T counts on both
	// sides), and the bytes of a.txt's new content, "alpha 2\n" 8 +
	// "now a file\n" 11 + "new\n" 4 + "x\n" 2; removed: notes.txt, the
	// symlink, and a.txt's old content, "notes\n" 6 + "alpha\n" 6.
	summary := stdout[strings.Index(stdout, "\nFiles:")+1:]
	wantSummary := "Files:      3 new,     1 removed,     1 changed\n" +
		"Dirs:       1 new,     0 removed\n" +
		"Others:     0 new,     1 removed\n" +
		"Added:   25 B\n" +
		"Removed: 12 B\n"
	if summary != wantSummary {
		t.Errorf("summary:\n%s\nwant:\n%s", summary, wantSummary)
	}

	stdout, _ = f.expect(ExitOK, "diff", "--json", firstID, secondID)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	var last struct {
		MessageType    string `json:"message_type"`
		SourceSnapshot string `json:"source_snapshot"`
		TargetSnapshot string `json:"target_snapshot"`
		ChangedFiles   int    `json:"changed_files"`
		Added          struct {
			Files, Dirs, Others, Bytes int
		} `json:"added"`
		Removed struct {
			Files, Dirs, Others, Bytes int
		} `json:"removed"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if last.MessageType != "statistics" || last.SourceSnapshot != firstID || last.TargetSnapshot != secondID ||
		last.ChangedFiles != 1 || last.Added.Files != 3 || last.Added.Dirs != 1 || last.Added.Bytes != 25 ||
		last.Removed.Files != 1 || last.Removed.Others != 1 || last.Removed.Bytes != 12 {
		t.Errorf("statistics line: %+v", last)
	}
	var got []string
	for _, line := range lines[:len(lines)-1] {
		var c struct {
			MessageType string `json:"message_type"`
			Path        string `json:"path"`
			Modifier    string `json:"modifier"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("change line %q: %v", line, err)
		}
		if c.MessageType != "change" {
			t.Errorf("line %q: message_type %q, want change", line, c.MessageType)
		}
		if strings.HasPrefix(c.Path, f.src+"/") {
			got = append(got, c.Modifier+"    "+c.Path)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("--json changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	same := "comparing snapshot " + shortID(firstID) + " to " + shortID(firstID) + ":\n\n\n" +
		"Files:      0 new,     0 removed,     0 changed\n" +
		"Dirs:       0 new,     0 removed\n" +
		"Others:     0 new,     0 removed\n" +
		"Added:   0 B\n" +
		"Removed: 0 B\n"
	if stdout, _ := f.expect(ExitOK, "diff", firstID[:4], firstID); stdout != same {
		t.Errorf("a snapshot compared with itself:\n%s\nwant:\n%s", stdout, same)
	}
}

// Bad input to diff is one line and its exit code.
func TestDiffBadInput(t *testing.T) {
	f := newReadFixture(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"one snapshot", []string{"diff", firstID}, ExitUsage, "nightjar: diff needs exactly two snapshots: SNAPSHOT1 SNAPSHOT2 (IDs, prefixes of them, or latest)\n"},
		{"unknown snapshot", []string{"diff", firstID, "ffff"}, ExitFailure, "nightjar: \"ffff\": snapshot not found\n"},
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
