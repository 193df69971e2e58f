package restore_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/restore"
)

// swapperEnv names the target a re-executed test binary swaps symlinks
// into (see TestMain's counterpart, runSwapper); swapperOutside the folder
// the symlinks point to.
const (
	swapperEnv     = "NIGHTJAR_TEST_SWAP_TARGET"
	swapperOutside = "NIGHTJAR_TEST_SWAP_OUTSIDE"
)

// TestSwapperProcess is not a test: run by TestRestoreUnderSymlinkRace in a
// process of its own, it is the attacker (see runSwapper).
func TestSwapperProcess(t *testing.T) {
	target := os.Getenv(swapperEnv)
	if target == "" {
		return
	}
	runSwapper(target, os.Getenv(swapperOutside))
	os.Exit(0)
}

// runSwapper replaces every real folder it finds in target (and one level
// below) by a symlink to outside, over and over, until its standard input
// closes; the folder itself is parked inside target under a dot name. It
// writes how many swaps it made on its standard output when it ends.
func runSwapper(target, outside string) {
	done := make(chan struct{})
	go func() {
		buf := make([]byte, 1)
		os.Stdin.Read(buf) // returns when the test closes the pipe
		close(done)
	}()
	fmt.Println("ready")
	swaps, parked := 0, 0
	swap := func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(dir, e.Name())
			parked++
			if os.Rename(p, filepath.Join(target, ".parked-"+strconv.Itoa(parked))) != nil {
				continue
			}
			if os.Symlink(outside, p) == nil {
				swaps++
			}
		}
	}
	for {
		select {
		case <-done:
			fmt.Println(swaps)
			return
		default:
		}
		swap(target)
		if entries, err := os.ReadDir(target); err == nil {
			for _, e := range entries {
				if e.IsDir() && strings.HasPrefix(e.Name(), ".parked-") {
					swap(filepath.Join(target, e.Name()))
				}
			}
		}
	}
}

// fingerprint is every entry below dir (dir included) with its type, mode,
// size and content hash or link target.
func fingerprint(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %v %d", p, fi.Mode(), fi.Size())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:])
		}
		out = append(out, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// A process that keeps replacing the folders restore makes by symlinks to
// a folder outside the target never gets restore to write there: no file,
// symlink, mode or time outside the target changes, over many restores,
// with openat2 and with the walk element by element. (Before restore
// walked with descriptors, the first restore wrote its files outside.)
func TestRestoreUnderSymlinkRace(t *testing.T) {
	restores := 20
	if n, err := strconv.Atoi(os.Getenv("NIGHTJAR_RACE_RESTORES")); err == nil && n > 0 {
		restores = n
	}
	b := newBuilder(t)
	var top []repo.Node
	for i := range 24 {
		name := fmt.Sprintf("d%02d", i)
		var inner []repo.Node
		for j := range 4 {
			inner = append(inner, b.file(fmt.Sprintf("/%s/f%d", name, j), randomBytes(uint64(i*10+j), 512)))
		}
		sub := b.dir("sub", b.file("/"+name+"/sub/g", randomBytes(uint64(1000+i), 256)))
		inner = append(inner, sub)
		inner = append(inner, repo.Node{Name: "z-link", Type: repo.NodeSymlink, LinkTarget: "f0", Mode: 0o777, MTime: mtime})
		top = append(top, b.dir(name, inner...))
	}
	s := b.snapshot(top...)

	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "keep", "f0"), []byte("outside's own"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := fingerprint(t, outside)

	totalSwaps := 0
	t.Cleanup(func() { restore.SetOpenat2(true) })
	for i := range restores {
		// Half the restores walk as kernels without openat2 do.
		restore.SetOpenat2(i%2 == 0)
		target := filepath.Join(base, fmt.Sprintf("target-%03d", i))
		if err := os.Mkdir(target, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestSwapperProcess$")
		cmd.Env = append(os.Environ(), swapperEnv+"="+target, swapperOutside+"="+outside)
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
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() || lines.Text() != "ready" {
			t.Fatalf("swapper did not start: %q", lines.Text())
		}
		// Errors and skips are expected (restore refuses the symlinks it
		// meets); what matters is where it wrote.
		restore.Run(context.Background(), b.r, s, restore.Options{Target: target})
		stdin.Close()
		if !lines.Scan() {
			t.Fatal("swapper ended without its count")
		}
		n, err := strconv.Atoi(lines.Text())
		if err != nil {
			t.Fatalf("swapper's count: %q", lines.Text())
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("swapper: %v", err)
		}
		totalSwaps += n
		if after := fingerprint(t, outside); !slices.Equal(before, after) {
			t.Fatalf("restore %d (%d swaps) changed the folder outside the target:\nbefore:\n%s\nafter:\n%s",
				i, n, strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
	}
	if totalSwaps == 0 {
		t.Fatal("the swapper never swapped a folder: the race was not run")
	}
	t.Logf("%d restores, %d folders swapped for symlinks, nothing outside the target changed", restores, totalSwaps)
}

// A crafted snapshot that holds an absolute symlink to a folder outside
// and then, under the same name, a folder with files (or a file below the
// symlink's name) writes nothing outside: the symlink is restored as a
// symlink, and what would go through it is refused.
func TestRestoreSnapshotSymlinkThenFolderOfTheSameName(t *testing.T) {
	b := newBuilder(t)
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	before := fingerprint(t, outside)
	link := repo.Node{Name: "x", Type: repo.NodeSymlink, LinkTarget: outside, Mode: 0o777, MTime: mtime}
	dir := b.dir("x", b.file("/x/f", []byte("through the symlink")), b.dir("y", b.file("/x/y/g", []byte("deeper"))))
	s := b.snapshot(link, dir)
	target := filepath.Join(base, "target")
	res, err := run(t, b, s, restore.Options{Target: target})
	if after := fingerprint(t, outside); !slices.Equal(before, after) {
		t.Fatalf("the restore wrote outside the target (%v):\n%s", err, strings.Join(after, "\n"))
	}
	if got, _ := os.Readlink(filepath.Join(target, "x")); got != outside {
		t.Errorf("/x is %q, want the symlink to %s", got, outside)
	}
	if r := skipReason(res, "/x"); !strings.Contains(r, "symlink") {
		t.Errorf("the folder /x is skipped with %q, want the symlink in its way named (skips: %v)", r, res.Skipped)
	}
}
