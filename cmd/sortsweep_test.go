package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Check and prune remove the sorted runs that a killed check or prune
// left in the temporary folder (an unlocked lock file and its runs, a run
// without a lock) and say so in one line on stderr; the command itself
// succeeds.
// prune --dry-run changes nothing: it leaves them, and says nothing of
// them.
func TestCheckAndPruneSweepSortRuns(t *testing.T) {
	e := newCLIEnv(t)
	dir := e.initRepo("repo")
	for _, command := range []string{"check", "prune"} {
		t.Run(command, func(t *testing.T) {
			tmp := filepath.Join(e.dir, "tmp-"+command)
			if err := os.Mkdir(tmp, 0o700); err != nil {
				t.Fatal(err)
			}
			t.Setenv("TMPDIR", tmp)
			left := map[string]int{
				"nightjar-sort-6.lock":       0,
				"nightjar-sort-6-100.run":    1000,
				"nightjar-sort-7-200.run":    24, // its lock is gone
				"nightjar-sort-notes.txt":    5,  // not a sorter's
				"nightjar-sort-8-300.run.gz": 5,  // nor this
			}
			for name, size := range left {
				if err := os.WriteFile(filepath.Join(tmp, name), make([]byte, size), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if command == "prune" {
				res := e.expect(ExitOK, command, "-r", dir, "--dry-run")
				if names := namesIn(t, tmp); len(names) != len(left) || strings.Contains(res.stderr, "sort files") {
					t.Errorf("prune --dry-run left %v of the %d files, and said %q; want every file left, and nothing said", names, len(left), res.stderr)
				}
			}
			res := e.expect(ExitOK, command, "-r", dir)
			want := "warning: removed 2 sort files (1.0 KiB) that killed nightjar commands left in " + tmp + "\n"
			if !strings.Contains(res.stderr, want) || strings.Count(res.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want the one line %q", res.stderr, want)
			}
			if names := namesIn(t, tmp); strings.Join(names, " ") != "nightjar-sort-8-300.run.gz nightjar-sort-notes.txt" {
				t.Errorf("left in the temporary folder: %v, want only the files that are no sorter's", names)
			}
		})
	}
}

// namesIn lists the names in dir.
func namesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, entry := range entries {
		names = append(names, entry.Name())
	}
	return names
}
