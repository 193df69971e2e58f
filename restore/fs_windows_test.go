package restore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// Chmod sets the read-only attribute of a file from the owner's write bit,
// and leaves a folder writable.
func TestOSChmodReadOnly(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(file, 0o600) })
	for _, tt := range []struct {
		name     string
		path     string
		mode     uint32
		readOnly bool
	}{
		{"a file without write", file, 0o444, true},
		{"a file with write", file, 0o644, false},
		{"a folder without write", dir, 0o555, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := (OS{}).Chmod(filepath.Dir(tt.path), filepath.Base(tt.path), tt.mode); err != nil {
				t.Fatal(err)
			}
			p, _ := windows.UTF16PtrFromString(tt.path)
			attrs, err := windows.GetFileAttributes(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := attrs&windows.FILE_ATTRIBUTE_READONLY != 0; got != tt.readOnly {
				t.Errorf("read-only %v, want %v", got, tt.readOnly)
			}
		})
	}
}

// SetMTime sets the time to Windows' 100 ns.
func TestOSSetMTime(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	if err := (OS{}).SetMTime(filepath.Dir(file), filepath.Base(file), when); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := when.Truncate(mtimeResolution); !fi.ModTime().Equal(want) {
		t.Errorf("mtime %v, want %v", fi.ModTime(), want)
	}
}

// OpenBeneath refuses a name Windows forbids or one that leaves root, and
// a symlink where a folder or the file should be (when this user may make
// symlinks at all).
func TestOSOpenBeneath(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "d", "f"), []byte("f"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OS{}.OpenBeneath(root, "d/f")
	if err != nil {
		t.Fatalf("a plain file: %v", err)
	}
	f.Close()
	for _, name := range []string{"d/../d/f", `d\f`, "d/f:stream", "/d/f"} {
		if f, err := (OS{}).OpenBeneath(root, name); err == nil {
			f.Close()
			t.Errorf("OpenBeneath(%q) opened it", name)
		}
	}
	if err := os.Symlink(filepath.Join(root, "d"), filepath.Join(root, "dlink")); err != nil {
		t.Skipf("this user cannot make symlinks (%v): the symlink cases are not checked", err)
	}
	if err := os.Symlink(filepath.Join(root, "d", "f"), filepath.Join(root, "d", "flink")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dlink/f", "d/flink"} {
		f, err := OS{}.OpenBeneath(root, name)
		if err == nil {
			f.Close()
		}
		if !errors.Is(err, errReparsePoint) {
			t.Errorf("OpenBeneath(%q): %v, want it refused as a reparse point", name, err)
		}
	}
}
