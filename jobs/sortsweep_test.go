package jobs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// A prune run first removes the sorted runs a killed prune left in the
// temporary folder (an unlocked lock file and its run, a run without a
// lock), counts them, and still prunes; a run of an older nightjar is
// left and counted, and makes the run no partial failure.
func TestPruneRunSweepsSortFiles(t *testing.T) {
	w := newRetentionWorld(t)
	tmp := os.Getenv("TMPDIR")
	for _, name := range []string{"nightjar-sort-6.lock", "nightjar-sort-6-100.run", "nightjar-sort-7-200.run", "nightjar-sort-99.run"} {
		if err := os.WriteFile(filepath.Join(tmp, name), make([]byte, 32), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	backupsOfNewData(t, w, 1)
	res, err := w.prune(t, func(pass.Progress) {})
	if err != nil {
		t.Fatalf("prune run: %v", err)
	}
	if res.Output != "" {
		t.Errorf("the run's output %q, want none", res.Output)
	}
	if got := res.Figures.Counters[CounterSortFilesRemoved]; got != 2 {
		t.Errorf("%s = %d, want 2", CounterSortFilesRemoved, got)
	}
	if got := res.Figures.Counters[CounterSortFilesOlder]; got != 1 {
		t.Errorf("%s = %d, want 1", CounterSortFilesOlder, got)
	}
	if _, ok := res.Figures.Counters[CounterSortFilesNotRemoved]; ok || len(res.Figures.Skipped) > 0 {
		t.Errorf("counters %v, skipped %+v: want nothing failed or skipped", res.Figures.Counters, res.Figures.Skipped)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if len(left) != 1 || left[0] != "nightjar-sort-99.run" {
		t.Errorf("left in the temporary folder: %v, want only the older nightjar's run", left)
	}
}

// A sweep that fails (a temporary folder that cannot be listed) is no
// failure of the run, and not silent: it is counted, and one line of the
// run's output says why.
func TestPruneRunSaysItsSweepFailed(t *testing.T) {
	w := newRetentionWorld(t)
	missing := filepath.Join(t.TempDir(), "gone")
	t.Setenv("TMPDIR", missing)
	backupsOfNewData(t, w, 1)
	res, err := w.prune(t, func(pass.Progress) {})
	if err != nil {
		t.Fatalf("prune run: %v", err)
	}
	if got := res.Figures.Counters[CounterSortFilesNotRemoved]; got != 1 {
		t.Errorf("%s = %d, want 1", CounterSortFilesNotRemoved, got)
	}
	want := "warning: sort files of killed nightjar commands were not all swept: sweep sort runs: open " + missing + ": no such file or directory\n"
	if res.Output != want {
		t.Errorf("the run's output %q, want the one line %q", res.Output, want)
	}
	if len(res.Figures.Skipped) > 0 {
		t.Errorf("skipped %+v: want nothing skipped", res.Figures.Skipped)
	}
}

// isolateTemp points TMPDIR at a new folder of the test, so that the
// sweeps of prune and retention runs count only the test's files, never
// the machine's /tmp.
func isolateTemp(t *testing.T) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
}
