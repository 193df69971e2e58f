package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// lockHolderEnv names, in a child process of the test binary, the
// repository it locks (TestLockHolderProcess).
const lockHolderEnv = "NIGHTJAR_TEST_LOCK_HOLDER"

// TestLockHolderProcess is not a test: it is the body of the child process
// that startLockHolder starts. It takes a shared lock with the purpose in
// NIGHTJAR_TEST_LOCK_PURPOSE, says "locked" and holds the lock until its
// standard input closes.
func TestLockHolderProcess(t *testing.T) {
	dir := os.Getenv(lockHolderEnv)
	if dir == "" {
		return // run by go test, not as a child
	}
	r := openForTest(t, dir)
	lock, err := r.Lock(context.Background(), false, os.Getenv("NIGHTJAR_TEST_LOCK_PURPOSE"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// holderProcess is a child process that holds a lock of a repository.
type holderProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startLockHolder starts a process that locks the repository at dir for
// purpose, and returns once it holds the lock.
func startLockHolder(t *testing.T, dir, purpose string) *holderProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+dir, "NIGHTJAR_TEST_LOCK_PURPOSE="+purpose)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holderProcess{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { h.stdin.Close(); _ = h.cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("lock holder said %q, %v; want locked", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return h
}

// kill ends the holder the hard way: its lock object stays behind.
func (h *holderProcess) kill(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
}

// unlock removes the lock of a process that was killed and keeps the lock
// of one still at work, saying which and why; --remove-all removes that
// one too, with a warning.
func TestUnlock(t *testing.T) {
	e := newCLIEnv(t)
	dir := e.initRepo("repo")
	live := startLockHolder(t, dir, "check")
	liveLock := objectNames(t, dir, repo.LockFile)
	dead := startLockHolder(t, dir, "backup")
	var deadLock string
	for _, n := range objectNames(t, dir, repo.LockFile) {
		if !slices.Contains(liveLock, n) {
			deadLock = n
		}
	}
	dead.kill(t)
	if got := objectNames(t, dir, repo.LockFile); len(got) != 2 {
		t.Fatalf("locks %v: want the live one and the one the killed process left", got)
	}
	host, _ := os.Hostname()

	res := e.expect(ExitOK, "unlock", "-r", dir)
	got := lines(res.stdout)
	wantPrefix := map[string]string{
		deadLock[:8]:    fmt.Sprintf("removed lock %s: its holder is gone (shared lock for backup by pid %d of ", deadLock[:8], dead.cmd.Process.Pid),
		liveLock[0][:8]: fmt.Sprintf("kept lock %s: its holder is still at work (shared lock for check by pid %d of ", liveLock[0][:8], live.cmd.Process.Pid),
	}
	if len(got) != 3 || got[2] != "removed 1 locks, kept 1" {
		t.Fatalf("unlock said %q, want a line per lock and removed 1 locks, kept 1", got)
	}
	for _, l := range got[:2] {
		name := strings.Fields(l)[2]
		if !strings.HasPrefix(l, wantPrefix[name]) || !strings.Contains(l, "@"+host+", taken ") {
			t.Errorf("line %q, want it to start %q and name the host %s and the age", l, wantPrefix[name], host)
		}
	}
	if left := objectNames(t, dir, repo.LockFile); !slices.Equal(left, liveLock) {
		t.Errorf("locks left %v, want only the live one %v", left, liveLock)
	}

	res = e.expect(ExitOK, "unlock", "-r", dir, "--remove-all")
	if got := lines(res.stdout); len(got) != 2 || !strings.HasPrefix(got[0], "removed lock "+liveLock[0][:8]+" of a live process: shared lock for check") ||
		got[1] != "removed 1 locks, kept 0" {
		t.Errorf("unlock --remove-all said %q", got)
	}
	wantWarning := "warning: --remove-all removes the locks of processes still at work too: what they do is no longer protected from prune or forget"
	if got := lines(res.stderr); !slices.Equal(got, []string{wantWarning}) {
		t.Errorf("stderr %q, want %q", got, wantWarning)
	}
	if left := objectNames(t, dir, repo.LockFile); len(left) != 0 {
		t.Errorf("locks left after --remove-all: %v", left)
	}

	res = e.expect(ExitUsage, "unlock", "-r", dir, "all")
	if got := lines(res.stderr); !slices.Equal(got, []string{`nightjar: unlock takes no arguments, got "all" (see nightjar unlock --help)`}) {
		t.Errorf("stderr %q", got)
	}
}
