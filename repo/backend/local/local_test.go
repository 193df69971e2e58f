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
	"syscall"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
)

// holderEnv, when set to "folder|lock name", makes the test binary a lock
// holder: it takes the lock with SaveHeld, says "held" and sleeps until it
// is killed.
const holderEnv = "NIGHTJAR_LOCAL_TEST_HOLDER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(holderEnv); spec != "" {
		os.Exit(holdLock(spec))
	}
	if folder := os.Getenv(writerEnv); folder != "" {
		os.Exit(writePack(folder))
	}
	os.Exit(m.Run())
}

func holdLock(spec string) int {
	folder, name, _ := strings.Cut(spec, "|")
	be, err := local.Open(folder)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := be.SaveHeld(context.Background(), repo.Handle{Type: repo.LockFile, Name: name}, []byte("held by child")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	time.Sleep(2 * time.Minute) // killed long before
	return 0
}

// newRepoFolder returns a prepared repository folder with a config object.
func newRepoFolder(t *testing.T) (*local.Backend, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	be, err := local.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.Save(context.Background(), repo.Handle{Type: repo.ConfigFile, Name: "config"}, []byte("config")); err != nil {
		t.Fatal(err)
	}
	return be, dir
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) repo.Backend {
		be, err := local.Create(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return be
	})
}

func TestModes(t *testing.T) {
	ctx := context.Background()
	be, dir := newRepoFolder(t)
	for i, h := range []repo.Handle{
		{Type: repo.KeyFile, Name: "k1"},
		{Type: repo.PackFile, Name: strings.Repeat("ab", 32)},
		{Type: repo.IndexFile, Name: strings.Repeat("cd", 32)},
		{Type: repo.SnapshotFile, Name: "s1"},
		{Type: repo.LockFile, Name: "l1"},
	} {
		if err := be.Save(ctx, h, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	release, err := be.SaveHeld(ctx, repo.Handle{Type: repo.LockFile, Name: "l2"}, []byte("held"))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	s, err := be.NewPackStream(ctx, repo.DataPack)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("streamed")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, strings.Repeat("ef", 32)); err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = fs.ModeDir | 0o700
		} else {
			files++
		}
		if fi.Mode() != want {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode(), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files != 8 {
		t.Errorf("found %d files, want the config and 7 objects", files)
	}
}

// Objects lie where docs/FORMAT.md says: packs in a subfolder named by the
// first two hex digits of their name.
func TestLayout(t *testing.T) {
	be, dir := newRepoFolder(t)
	pack := "7f" + strings.Repeat("0", 62)
	tests := []struct {
		h    repo.Handle
		path string
	}{
		{repo.Handle{Type: repo.ConfigFile, Name: "config"}, "config"},
		{repo.Handle{Type: repo.KeyFile, Name: "k1"}, "keys/k1"},
		{repo.Handle{Type: repo.PackFile, Name: pack}, "data/7f/" + pack},
		{repo.Handle{Type: repo.IndexFile, Name: "i1"}, "index/i1"},
		{repo.Handle{Type: repo.SnapshotFile, Name: "s1"}, "snapshots/s1"},
		{repo.Handle{Type: repo.LockFile, Name: "l1"}, "locks/l1"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if err := be.Save(context.Background(), tt.h, []byte(tt.path)); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(dir, tt.path))
			if err != nil || string(got) != tt.path {
				t.Errorf("%s: file %s holds %q, %v", tt.h, tt.path, got, err)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		wantErr error // nil: success
	}{
		{"missing folder", func(t *testing.T, dir string) {}, nil},
		{"empty folder", func(t *testing.T, dir string) { mkdir(t, dir) }, nil},
		{"folder with a file", func(t *testing.T, dir string) {
			mkdir(t, dir)
			writeFile(t, filepath.Join(dir, "notes.txt"), "mine")
		}, repo.ErrNotEmpty},
		{"folder with an empty folder", func(t *testing.T, dir string) {
			mkdir(t, filepath.Join(dir, "photos"))
		}, repo.ErrNotEmpty},
		{"existing repository", func(t *testing.T, dir string) {
			be, err := local.Create(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := be.Save(context.Background(), repo.Handle{Type: repo.ConfigFile, Name: "config"}, []byte("c")); err != nil {
				t.Fatal(err)
			}
		}, repo.ErrAlreadyExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "a", "repo")
			tt.prepare(t, dir)
			before := listFolder(t, dir)
			be, err := local.Create(dir)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Create = %v, want %v", err, tt.wantErr)
				}
				if after := listFolder(t, dir); after != before {
					t.Errorf("a refused Create changed the folder from\n%s\nto\n%s", before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			if be.Location() != dir {
				t.Errorf("Location = %q, want %q", be.Location(), dir)
			}
			fi, err := os.Stat(dir)
			if err != nil || fi.Mode() != fs.ModeDir|0o700 {
				t.Errorf("repository folder: %v, %v; want a folder with mode 0700", fi, err)
			}
		})
	}
}

func TestCreateOnAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	writeFile(t, path, "x")
	if _, err := local.Create(path); err == nil {
		t.Error("Create on a regular file succeeded")
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		wantErr error
	}{
		{"empty folder", func(t *testing.T, dir string) { mkdir(t, dir) }, repo.ErrNoRepository},
		{"missing folder", func(t *testing.T, dir string) {}, repo.ErrNoRepository},
		{"folder without config", func(t *testing.T, dir string) {
			if _, err := local.Create(dir); err != nil {
				t.Fatal(err)
			}
		}, repo.ErrNoRepository},
		{"repository", func(t *testing.T, dir string) {
			be, err := local.Create(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := be.Save(context.Background(), repo.Handle{Type: repo.ConfigFile, Name: "config"}, []byte("c")); err != nil {
				t.Fatal(err)
			}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			tt.prepare(t, dir)
			be, err := local.Open(dir)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("Open = %v, want %v", err, tt.wantErr)
			}
			if err == nil && be.Location() != dir {
				t.Errorf("Location = %q, want %q", be.Location(), dir)
			}
		})
	}
}

// Rejected names write nothing, inside the repository or outside it.
func TestInvalidNamesWriteNothing(t *testing.T) {
	be, dir := newRepoFolder(t)
	parent := filepath.Dir(dir)
	before, inside := listFolder(t, parent), listFolder(t, dir)
	for _, name := range []string{"../x", "../../x", "a/b", ".hidden", ".."} {
		for _, ft := range []repo.FileType{repo.KeyFile, repo.PackFile, repo.LockFile} {
			if err := be.Save(context.Background(), repo.Handle{Type: ft, Name: name}, []byte("x")); err == nil {
				t.Errorf("save %s/%q accepted", ft, name)
			}
			if _, err := be.SaveHeld(context.Background(), repo.Handle{Type: ft, Name: name}, []byte("x")); err == nil {
				t.Errorf("save held %s/%q accepted", ft, name)
			}
		}
	}
	if after := listFolder(t, parent); after != before {
		t.Errorf("rejected saves changed the folder around the repository:\n%s\nnow:\n%s", before, after)
	}
	if after := listFolder(t, dir); after != inside {
		t.Errorf("rejected saves changed the repository:\n%s\nnow:\n%s", inside, after)
	}
}

// Objects are written under a temporary name and renamed: nothing is left
// in tmp afterwards.
func TestSaveLeavesNoTemporaryFiles(t *testing.T) {
	be, dir := newRepoFolder(t)
	ctx := context.Background()
	for i := range 10 {
		h := repo.Handle{Type: repo.PackFile, Name: fmt.Sprintf("%064x", i)}
		if err := be.Save(ctx, h, backendtest.RandomBytes(uint64(i), 1000)); err != nil {
			t.Fatal(err)
		}
	}
	// Streamed packs: committed, aborted, and one whose commit fails.
	for i, end := range []string{"commit", "abort", "bad name"} {
		s, err := be.NewPackStream(ctx, repo.TreePack)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write(backendtest.RandomBytes(uint64(100+i), 300<<10)); err != nil {
			t.Fatal(err)
		}
		switch end {
		case "commit":
			if err := s.Commit(ctx, fmt.Sprintf("%064x", 100+i)); err != nil {
				t.Fatal(err)
			}
		case "abort":
			s.Abort()
		case "bad name":
			if err := s.Commit(ctx, "not/a/name"); err == nil {
				t.Error("commit under an invalid name succeeded")
			}
		}
	}
	release, err := be.SaveHeld(ctx, repo.Handle{Type: repo.LockFile, Name: "l"}, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("tmp holds %d files after the saves finished", len(entries))
	}
	if _, err := os.Stat(filepath.Join(dir, "locks", "l")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("released lock file still exists: %v", err)
	}
}

func TestHeldWhileHolderHasItNotAfterRelease(t *testing.T) {
	ctx := context.Background()
	be, dir := newRepoFolder(t)
	h := repo.Handle{Type: repo.LockFile, Name: "mine"}
	release, err := be.SaveHeld(ctx, h, []byte("lock"))
	if err != nil {
		t.Fatal(err)
	}
	// Another Backend on the same folder, as another command would open it.
	other, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []*local.Backend{be, other} {
		if held, err := b.Held(ctx, h); err != nil || !held {
			t.Errorf("while held: Held = %v, %v; want true", held, err)
		}
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if held, err := other.Held(ctx, h); held || !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("after release: Held = %v, %v; want false, ErrNotFound (release removes it)", held, err)
	}
}

// A lock of a process that was killed is seen as not held at once: the
// kernel drops the flock with the process.
func TestLockOfKilledProcessIsNotHeld(t *testing.T) {
	ctx := context.Background()
	be, dir := newRepoFolder(t)
	h := repo.Handle{Type: repo.LockFile, Name: "child"}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+dir+"|"+h.Name)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if strings.TrimSpace(line) != "held" {
			t.Fatalf("child said %q, want held", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("child did not take the lock within 20s")
	}

	if held, err := be.Held(ctx, h); err != nil || !held {
		t.Fatalf("lock of the living child: Held = %v, %v; want true", held, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waited = true
	if held, err := be.Held(ctx, h); err != nil || held {
		t.Errorf("lock of the killed child: Held = %v, %v; want false, nil", held, err)
	}
	if _, err := be.Stat(ctx, h); err != nil {
		t.Errorf("the killed child's lock object should remain for the next locker to remove: %v", err)
	}
}

// The package promises never to follow a symlink out of the repository's
// folder: an object name that is a symlink to a file outside is not read,
// and saving to it does not write through it.
func TestSymlinkOutOfRepository(t *testing.T) {
	ctx := context.Background()
	pack := strings.Repeat("ab", 32)
	tests := []struct {
		name string
		h    repo.Handle
		path string // of the object, in the repository folder
	}{
		{"snapshot", repo.Handle{Type: repo.SnapshotFile, Name: "evil"}, "snapshots/evil"},
		{"key", repo.Handle{Type: repo.KeyFile, Name: "evil"}, "keys/evil"},
		{"pack", repo.Handle{Type: repo.PackFile, Name: pack}, "data/ab/" + pack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be, dir := newRepoFolder(t)
			outside := filepath.Join(filepath.Dir(dir), "outside-secret")
			writeFile(t, outside, "not repository data")
			if err := os.Symlink(outside, filepath.Join(dir, tt.path)); err != nil {
				t.Fatal(err)
			}
			if got, err := be.Load(ctx, tt.h, 0, -1); err == nil {
				t.Errorf("load read %q through a symlink to %s", got, outside)
			}
			err := be.List(ctx, tt.h.Type, func(name string, _ int64) error {
				t.Errorf("list shows the symlink %s", name)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := be.Save(ctx, tt.h, []byte("replaced")); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(outside); string(got) != "not repository data" {
				t.Errorf("save wrote through the symlink: outside file now %q", got)
			}
		})
	}
}

// A repository copied by a tool that skips empty folders (rclone, git,
// object-store sync) lacks tmp, locks and most data/xx folders. Open accepts
// it, so writing to it must work too.
func TestSaveWithMissingEmptyFolders(t *testing.T) {
	ctx := context.Background()
	_, dir := newRepoFolder(t)
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != dir {
			_ = os.Remove(p) // fails for folders that are not empty
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"tmp", "locks", "data/ab"} {
		if _, err := os.Stat(filepath.Join(dir, sub)); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s was not removed: %v", sub, err)
		}
	}
	be, err := local.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pack := repo.Handle{Type: repo.PackFile, Name: strings.Repeat("ab", 32)}
	if err := be.Save(ctx, pack, []byte("pack")); err != nil {
		t.Errorf("save pack: %v", err)
	}
	release, err := be.SaveHeld(ctx, repo.Handle{Type: repo.LockFile, Name: "l"}, []byte("lock"))
	if err != nil {
		t.Errorf("save held lock: %v", err)
	} else {
		_ = release()
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// listFolder describes every entry below dir, for comparing before and
// after; "" for a missing folder.
func listFolder(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d\n", p, fi.Mode(), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
