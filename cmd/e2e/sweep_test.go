//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// pausedRun is a run of the binary built with the crash point hook that is
// stopped before its first pack commit: alive, in the middle of writing
// its packs.
type pausedRun struct {
	t    *testing.T
	pid  int
	done chan struct{}
	kill func()
	conn net.Conn
}

// pauseAtFirstCommit runs bin with args, lets every step before the
// first commit of a data pack go on, and returns with the process waiting
// there.
func (e *env) pauseAtFirstCommit(bin string, args ...string) *pausedRun {
	e.t.Helper()
	dir, err := os.MkdirTemp("", "njsw")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	run := *e
	run.bin = bin
	cmd := run.command(ctx, []string{crashPointEnv + "=" + socket}, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		e.t.Fatalf("start nightjar %q: %v", args, err)
	}
	p := &pausedRun{t: e.t, pid: cmd.Process.Pid, done: make(chan struct{}), kill: func() { _ = cmd.Process.Signal(syscall.SIGKILL) }}
	go func() {
		_ = cmd.Wait()
		ln.Close()
		cancel()
		close(p.done)
	}()
	e.t.Cleanup(func() { p.kill(); <-p.done })
	conn, err := ln.Accept()
	if err != nil {
		e.t.Fatalf("nightjar %q announced no step:\n%s", args, stderr.String())
	}
	p.conn = conn
	lines := bufio.NewScanner(conn)
	for lines.Scan() {
		if strings.Contains(lines.Text(), " commit data/") {
			return p
		}
		if _, err := conn.Write([]byte{'.'}); err != nil {
			break
		}
	}
	e.t.Fatalf("nightjar %q ended before its first pack commit:\n%s", args, stderr.String())
	return nil
}

// openIn returns the names of the files in folder dir that the paused
// process has open, as the kernel tells (/proc/PID/fd): the oracle of
// which temporary files are a live writer's.
func (p *pausedRun) openIn(dir string) map[string]bool {
	p.t.Helper()
	fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(p.pid), "fd"))
	if err != nil {
		p.t.Fatal(err)
	}
	open := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(p.pid), "fd", fd.Name()))
		if err == nil && filepath.Dir(target) == dir {
			open[filepath.Base(target)] = true
		}
	}
	return open
}

// sigkill kills the paused run and waits for its end.
func (p *pausedRun) sigkill() {
	p.kill()
	<-p.done
	p.conn.Close()
}

// tmpFiles returns the files in the repository's tmp/ with their sizes.
func (e *env) tmpFiles() map[string]int64 {
	e.t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.repo, "tmp"))
	if err != nil {
		e.t.Fatal(err)
	}
	files := map[string]int64{}
	for _, d := range entries {
		fi, err := d.Info()
		if err != nil {
			e.t.Fatal(err)
		}
		files[d.Name()] = fi.Size()
	}
	return files
}

// TestTempSweep kills backups (SIGKILL, real processes) in the middle of
// writing their packs, and checks that the next check or backup removes
// the temporary files they left, counted and reported, while it never
// touches those of a backup that is alive beside it (issue 16, item 7:
// leftovers of interrupted backups stayed in tmp/ forever).
func TestTempSweep(t *testing.T) {
	t.Parallel()
	bin := sharedBinary(t, crashtestBinary)
	e := newEnv(t)
	e.bin = bin
	e.init()
	src := filepath.Join(e.dir, "src")
	mkdirAll(t, src, 0o755)
	writeRandom(t, filepath.Join(src, "big.bin"), 41, 40<<20)

	// A backup that stays alive, in the middle of its packs, beside all
	// that follows.
	live := e.pauseAtFirstCommit(bin, "backup", src)
	tmp := filepath.Join(e.repo, "tmp")
	liveFiles := live.openIn(tmp)
	if len(liveFiles) == 0 {
		t.Fatal("the live backup has no temporary file open")
	}
	stillThere := func(when string, files map[string]bool) {
		t.Helper()
		now := e.tmpFiles()
		for name := range files {
			if _, ok := now[name]; !ok {
				t.Fatalf("%s: the live backup's %s was removed", when, name)
			}
		}
	}
	// Backups killed in the middle of their packs; each one's start
	// sweeps what the one before left.
	const kills = 3
	var left map[string]int64
	for i := range kills {
		e.pauseAtFirstCommit(bin, "backup", src).sigkill()
		stillThere("after a killed backup's sweep", liveFiles)
		files := e.tmpFiles()
		liveFiles = live.openIn(tmp)
		left = map[string]int64{}
		for name, size := range files {
			if !liveFiles[name] {
				left[name] = size
			}
		}
		if len(left) == 0 {
			t.Fatalf("killed backup %d left no temporary files: nothing to sweep", i+1)
		}
	}
	var leftBytes int64
	for _, size := range left {
		leftBytes += size
	}
	t.Logf("%d SIGKILLs of backup beside a live one; the last left %d temporary files, %d bytes", kills, len(left), leftBytes)

	res := e.expect(exitOK, "check", "--json")
	var out struct {
		TempSwept struct {
			Removed      int   `json:"removed"`
			BytesRemoved int64 `json:"bytes_removed"`
			Live         int   `json:"live"`
		} `json:"temp_swept"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("check --json: %v\n%s", err, res)
	}
	if out.TempSwept.Removed != len(left) || out.TempSwept.BytesRemoved != leftBytes || out.TempSwept.Live < len(liveFiles) {
		t.Errorf("check swept %+v, want %d files of %d bytes removed and at least %d live kept", out.TempSwept, len(left), leftBytes, len(liveFiles))
	}
	stillThere("after check", liveFiles)
	after := e.tmpFiles()
	for name := range left {
		if _, ok := after[name]; ok {
			t.Errorf("check left %s of a killed backup", name)
		}
	}

	live.sigkill()
	killedLive := e.tmpFiles()
	res = e.expect(exitOK, "backup", src)
	if !strings.Contains(res.Stdout, "removed "+strconv.Itoa(len(killedLive))+" temporary files") {
		t.Errorf("backup does not report the %d temporary files it removed:\n%s", len(killedLive), res)
	}
	if got := e.tmpFiles(); len(got) != 0 {
		t.Errorf("after a backup tmp holds %v", got)
	}
	checkClean(t, e)
}
