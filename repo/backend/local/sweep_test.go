package local_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
)

// writerEnv, when set to a repository folder, makes the test binary a
// writer caught in the middle of a pack: it streams writerBytes into a
// pack, says "writing" and blocks until it is killed or its standard input
// closes.
const writerEnv = "NIGHTJAR_LOCAL_TEST_WRITER"

const writerBytes = 3 << 20

func writePack(folder string) int {
	be, err := local.Open(folder)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := be.NewPackStream(context.Background(), repo.DataPack)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := s.Write(backendtest.RandomBytes(1, writerBytes)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("writing")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until killed, or told to end
	s.Abort()
	return 0
}

// startWriter starts a writer process on the repository folder dir and
// returns once it is in the middle of its pack.
func startWriter(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), writerEnv+"="+dir)
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
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "writing" {
		t.Fatalf("writer said %q (%v), want writing", line, err)
	}
	return cmd
}

// tmpFiles lists the files in the repository's tmp/.
func tmpFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestSweepKeepsLiveWritersAndTakesKilledOnes runs two real writer
// processes in the middle of a pack, kills one with SIGKILL, and sweeps
// (issue 16, item 7): the live writer's temporary file stays, the killed
// one's goes, and so does nothing else; a file of an older nightjar (no
// proof of its writer) is left to prune's age rule.
func TestSweepKeepsLiveWritersAndTakesKilledOnes(t *testing.T) {
	ctx := context.Background()
	be, dir := newRepoFolder(t)
	older := filepath.Join(dir, "tmp", "0123456789abcdef01234567") // as nightjar named them before
	if err := os.WriteFile(older, []byte("an older nightjar's"), 0o600); err != nil {
		t.Fatal(err)
	}

	startWriter(t, dir) // lives on
	killed := startWriter(t, dir)
	if got := tmpFiles(t, dir); len(got) != 3 {
		t.Fatalf("tmp holds %q, want the two writers' files and the older one", got)
	}
	sw, err := be.SweepTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sw != (repo.TempSweep{Live: 2}) {
		t.Errorf("sweep beside two live writers: %+v, want 2 live and nothing removed", sw)
	}
	if got := tmpFiles(t, dir); len(got) != 3 {
		t.Fatalf("after a sweep beside live writers tmp holds %q", got)
	}

	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = killed.Wait()
	sw, err = be.SweepTemp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Removed != 1 || sw.BytesRemoved < writerBytes/2 || sw.Live != 1 {
		t.Errorf("sweep after a SIGKILL: %+v, want the killed writer's file (about %d bytes) removed and 1 live", sw, writerBytes)
	}
	got := tmpFiles(t, dir)
	if len(got) != 2 || !containsName(got, filepath.Base(older)) {
		t.Errorf("after the sweep tmp holds %q, want the live writer's file and the older one", got)
	}

	var listed []string
	if err := be.ListTemp(ctx, func(name string, _ int64, _ time.Time) error {
		listed = append(listed, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0] != filepath.Base(older) {
		t.Errorf("ListTemp (prune's age rule) lists %q, want only the older nightjar's file", listed)
	}
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// TestSweepRacesWriters sweeps without pause while writers save objects
// and stream packs in the same folder: no write fails and every object is
// complete (a sweep never takes a live writer's file, not even one just
// created and not yet locked).
func TestSweepRacesWriters(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	be, dir := newRepoFolder(t)
	sweeper, err := local.Open(dir) // as another process would open it
	if err != nil {
		t.Fatal(err)
	}
	const writers, saves = 4, 150
	var sweeps sync.WaitGroup
	sweepErr := make(chan error, 1)
	sweeps.Add(1)
	swept := 0
	go func() {
		defer sweeps.Done()
		for ctx.Err() == nil {
			if _, err := sweeper.SweepTemp(ctx); err != nil && ctx.Err() == nil {
				sweepErr <- err
				return
			}
			swept++
		}
	}()
	var g sync.WaitGroup
	errs := make(chan error, writers*saves)
	for w := range writers {
		g.Add(1)
		go func() {
			defer g.Done()
			for i := range saves {
				name := fmt.Sprintf("%060x%04x", w, i)
				data := backendtest.RandomBytes(uint64(w*saves+i), 4<<10)
				if i%2 == 0 {
					errs <- be.Save(ctx, repo.Handle{Type: repo.IndexFile, Name: name}, data)
					continue
				}
				s, err := be.NewPackStream(ctx, repo.TreePack)
				if err != nil {
					errs <- err
					continue
				}
				if _, err := s.Write(data); err != nil {
					errs <- err
					continue
				}
				errs <- s.Commit(ctx, name)
			}
		}()
	}
	g.Wait()
	cancel()
	sweeps.Wait()
	close(errs)
	select {
	case err := <-sweepErr:
		t.Fatalf("sweep: %v", err)
	default:
	}
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			if failed <= 3 {
				t.Errorf("write beside sweeps: %v", err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d writes failed beside sweeps", failed, writers*saves)
	}
	t.Logf("%d writes beside %d sweeps", writers*saves, swept)
	for w := range writers {
		for i := range saves {
			name := fmt.Sprintf("%060x%04x", w, i)
			typ := repo.IndexFile
			if i%2 == 1 {
				typ = repo.PackFile
			}
			if _, err := be.Stat(context.Background(), repo.Handle{Type: typ, Name: name}); errors.Is(err, fs.ErrNotExist) || err != nil {
				t.Fatalf("%s %s missing after the race: %v", typ, name, err)
			}
		}
	}
	if got := tmpFiles(t, dir); len(got) != 0 {
		t.Errorf("tmp holds %q after every write ended", got)
	}
}
