//go:build linux || darwin || freebsd

package restore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nightjar-backup/nightjar/directio"
)

// SetMTime sets both times to the nanosecond, on a symlink its own and
// never those of what it points to.
func TestOSSetMTime(t *testing.T) {
	dir := t.TempDir()
	file, link := filepath.Join(dir, "file"), filepath.Join(dir, "link")
	mustDo(t, os.WriteFile(file, []byte("x"), 0o600))
	mustDo(t, os.Symlink(file, link))
	fileTime := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	linkTime := fileTime.Add(time.Hour + time.Nanosecond)
	mustDo(t, OS{}.SetMTime(dir, "file", fileTime))
	mustDo(t, OS{}.SetMTime(dir, "link", linkTime))
	for p, want := range map[string]time.Time{file: fileTime, link: linkTime} {
		var st unix.Stat_t
		mustDo(t, unix.Lstat(p, &st))
		mtime, atime := time.Unix(st.Mtim.Unix()).UTC(), time.Unix(st.Atim.Unix()).UTC()
		if !mtime.Equal(want) || !atime.Equal(want) {
			t.Errorf("%s: mtime %v, atime %v; want both %v", filepath.Base(p), mtime, atime, want)
		}
	}
}

// CreateExclusive never creates through a symlink, even a dangling one,
// nor over an existing file.
func TestOSCreateExclusive(t *testing.T) {
	dir := t.TempDir()
	dangling, existing := filepath.Join(dir, "dangling"), filepath.Join(dir, "existing")
	mustDo(t, os.Symlink(filepath.Join(dir, "pointee"), dangling))
	mustDo(t, os.WriteFile(existing, nil, 0o600))
	for _, p := range []string{dangling, existing} {
		if f, err := (OS{}).CreateExclusive(dir, filepath.Base(p)); !errors.Is(err, os.ErrExist) {
			if f != nil {
				f.Close()
			}
			t.Errorf("CreateExclusive(%s): %v, want it to exist", filepath.Base(p), err)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "pointee")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was created where the dangling symlink points: %v", err)
	}
}

// OpenDirect gives a second descriptor of the same file, where the
// platform and file system have direct writes, and never one of another
// file that its name now leads to: it refuses (by name, macOS) or opens
// the file's own inode (through its descriptor, Linux).
func TestOSOpenDirect(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	f, err := OS{}.CreateExclusive(dir, "f")
	mustDo(t, err)
	defer f.Close()
	d := OS{}.OpenDirect(dir, "f", f)
	if d == nil {
		t.Skipf("no direct writes here (FreeBSD, or a file system such as tmpfs): nothing to check")
	}
	block := directio.AlignedBuffer(directio.Align)
	copy(block, "direct")
	if _, err := d.WriteAt(block, 0); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if got, err := os.ReadFile(name); err != nil || string(got[:6]) != "direct" || len(got) != directio.Align {
		t.Errorf("the file holds %d bytes (%v), want the block the second descriptor wrote", len(got), err)
	}
	mustDo(t, os.WriteFile(filepath.Join(dir, "other"), nil, 0o600))
	mustDo(t, os.Rename(filepath.Join(dir, "other"), name))
	if d := (OS{}).OpenDirect(dir, "f", f); d != nil {
		copy(block, "second")
		_, err := d.WriteAt(block, 0)
		d.Close()
		mustDo(t, err)
		if got, err := os.ReadFile(name); err != nil || len(got) != 0 {
			t.Errorf("the other file now at the name holds %d bytes (%v): OpenDirect opened it", len(got), err)
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
