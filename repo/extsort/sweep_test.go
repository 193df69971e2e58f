package extsort

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// childDirEnv, when set, makes the test binary a sorting child (see
// TestMain) that spills runs into the folder it names.
const childDirEnv = "NIGHTJAR_EXTSORT_CHILD_DIR"

// childReady is the line a sorting child writes once its runs exist.
const childReady = "spilled"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childDirEnv); dir != "" {
		os.Exit(sortingChild(dir))
	}
	os.Exit(m.Run())
}

// sortingChild spills two runs of one ID each into dir, says so on
// stdout, and holds them until its stdin ends (or it is killed).
func sortingChild(dir string) int {
	s := New(Options{Dir: dir, MemoryBudget: IDSize})
	for _, id := range randomIDs(7, 2, 0) {
		if err := s.Add(id); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	fmt.Println(childReady)
	io.Copy(io.Discard, os.Stdin)
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startSortingChild starts a sorting child in dir and returns once its
// runs exist. The child lives until it is killed or the test ends.
func startSortingChild(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != childReady {
		t.Fatalf("sorting child said %q (%v), want %q", line, err, childReady)
	}
	return cmd
}

// sortFiles lists the files in dir whose names a Sorter's files have.
func sortFiles(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for _, name := range filesIn(t, dir) {
		if strings.HasPrefix(name, namePrefix) {
			names = append(names, name)
		}
	}
	return names
}

// The runs of a sorting process that is killed (SIGKILL: it removes
// nothing) are removed by a Sweep, with its lock file, and counted; while
// it lives, its runs, and a file named as one of its runs that it did not
// make, are left. Older-style runs, whose process nothing tells, are left
// and counted.
func TestSweepRemovesTheRunsOfAKilledSort(t *testing.T) {
	dir := t.TempDir()
	child := startSortingChild(t, dir)
	files := sortFiles(t, dir)
	runs := runsIn(t, dir)
	if len(runs) != 2 || len(files) != 3 {
		t.Fatalf("the child made %v, want 2 runs and a lock", files)
	}
	token, _, _ := strings.Cut(strings.TrimPrefix(runs[0], namePrefix), "-")
	stranger := filepath.Join(dir, namePrefix+token+"-stranger"+runSuffix)
	older := filepath.Join(dir, namePrefix+"123456"+runSuffix)
	for _, name := range []string{stranger, older} {
		if err := os.WriteFile(name, make([]byte, 64), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	sw, err := Sweep(dir)
	if err != nil {
		t.Fatalf("sweep while the child sorts: %v", err)
	}
	if want := (Swept{Live: 3, Older: 1}); sw != want {
		t.Errorf("sweep while the child sorts: %+v, want %+v", sw, want)
	}
	if left := sortFiles(t, dir); len(left) != 5 {
		t.Errorf("after a sweep while the child sorts: %v, want all 5 files", left)
	}

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	child.Wait() // killed: its error says so

	sw, err = Sweep(dir)
	if err != nil {
		t.Fatalf("sweep after the kill: %v", err)
	}
	if want := (Swept{Sorts: 1, Runs: 3, Bytes: int64(2*IDSize + 64), Older: 1}); sw != want {
		t.Errorf("sweep after the kill: %+v, want %+v", sw, want)
	}
	if left, want := sortFiles(t, dir), []string{filepath.Base(older)}; !slices.Equal(left, want) {
		t.Errorf("after the kill and a sweep: %v, want only %v", left, want)
	}
}

// A Sweep leaves the runs of a Sorter of its own process, which sorts
// just as well afterwards and removes them itself.
func TestSweepLeavesASorterOfItsOwnProcess(t *testing.T) {
	dir := t.TempDir()
	s := New(Options{Dir: dir, MemoryBudget: 10 * IDSize})
	defer s.Close()
	ids := randomIDs(8, 35, 0)
	for _, id := range ids {
		if err := s.Add(id); err != nil {
			t.Fatal(err)
		}
	}
	sw, err := Sweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Swept{Live: 3}); sw != want {
		t.Errorf("sweep: %+v, want %+v", sw, want)
	}
	if got, want := collect(t, s), inMemory(ids); !slices.Equal(got, want) {
		t.Errorf("after a sweep the sorter returned %d IDs, want %d, in order", len(got), len(want))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if left := filesIn(t, dir); len(left) > 0 {
		t.Errorf("Close left %v", left)
	}
}

// A run whose lock file is gone (a sweep killed halfway, or a run its
// Sorter failed to remove) belongs to no running Sorter: it is removed.
// Files that only begin like a Sorter's are not touched.
func TestSweepRemovesRunsWithoutALock(t *testing.T) {
	dir := t.TempDir()
	orphan := namePrefix + "42-1" + runSuffix
	others := []string{namePrefix + "notes.txt", "nightjar-sorted-1-1.run"}
	for _, name := range append([]string{orphan}, others...) {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, 10), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sw, err := Sweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Swept{Runs: 1, Bytes: 10}); sw != want {
		t.Errorf("sweep: %+v, want %+v", sw, want)
	}
	if left := filesIn(t, dir); !slices.Equal(left, others) {
		t.Errorf("left %v, want %v", left, others)
	}
}

// Where locks of one process never conflict (flock emulated with POSIX
// locks on NFS or CIFS), a Sweep could take the lock of a Sorter of its
// own process: it still leaves that Sorter's runs, which it knows by
// their token.
func TestSweepLeavesItsOwnProcessWhateverTheLocks(t *testing.T) {
	dir := t.TempDir()
	claimed := 0
	claim = func(string) (lockState, func() error, error) {
		claimed++
		return lockClaimed, func() error { return nil }, nil
	}
	t.Cleanup(func() { claim = claimLock })
	s := New(Options{Dir: dir, MemoryBudget: 10 * IDSize})
	defer s.Close()
	ids := randomIDs(9, 25, 0)
	for _, id := range ids {
		if err := s.Add(id); err != nil {
			t.Fatal(err)
		}
	}
	sw, err := Sweep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Swept{Live: 2}); sw != want || claimed != 0 {
		t.Errorf("sweep: %+v after %d claimed locks, want %+v and no lock claimed", sw, claimed, want)
	}
	if got, want := collect(t, s), inMemory(ids); !slices.Equal(got, want) {
		t.Errorf("after a sweep the sorter returned %d IDs, want %d, in order", len(got), len(want))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed, its token is no longer this process's: a run it had left
	// would be swept.
	orphan := filepath.Join(dir, namePrefix+"7-1"+runSuffix)
	if err := os.WriteFile(orphan, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if sw, err := Sweep(dir); err != nil || sw.Runs != 1 {
		t.Errorf("sweep after Close: %+v, %v; want the orphan run removed", sw, err)
	}
}

// Failures of a Sweep make one line: the first, and how many more. A
// run without a lock file whose judging failed counts as one failed
// file, not two.
func TestSweepFailuresMakeOneLine(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"1-1", "2-1", "3-1"} {
		if err := os.WriteFile(filepath.Join(dir, namePrefix+name+runSuffix), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	claim = func(path string) (lockState, func() error, error) {
		return 0, nil, fmt.Errorf("lock %s: broken", filepath.Base(path))
	}
	t.Cleanup(func() { claim = claimLock })
	sw, err := Sweep(dir)
	if want := (Swept{Failed: 3}); sw != want {
		t.Errorf("sweep: %+v, want %+v", sw, want)
	}
	want := "sweep sort runs: lock nightjar-sort-1.lock: broken (and 2 more failures)"
	if err == nil || err.Error() != want {
		t.Errorf("sweep's error %q, want %q", err, want)
	}
}
