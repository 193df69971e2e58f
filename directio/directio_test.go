package directio

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

func TestAlignedBuffer(t *testing.T) {
	for _, size := range []int{Align, 3 * Align, 2 << 20} {
		b := AlignedBuffer(size)
		if len(b) != size || cap(b) != size {
			t.Errorf("AlignedBuffer(%d): len %d, cap %d", size, len(b), cap(b))
		}
		if addr := uintptr(unsafe.Pointer(&b[0])); addr%Align != 0 {
			t.Errorf("AlignedBuffer(%d) starts at %#x, not aligned to %d", size, addr, Align)
		}
	}
}

// TestOpenSecond checks that the second descriptor writes into the same
// file, and that a name now leading to another file is refused.
func TestOpenSecond(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := OpenSecond(name, f)
	if d == nil {
		t.Skipf("no direct I/O on %s (tmpfs?): nothing to check", dir)
	}
	buf := AlignedBuffer(Align)
	buf[0], buf[Align-1] = 'a', 'z'
	w := NewWriter(f, d, buf, nil)
	if err := w.Stage(0, buf); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !w.Direct() {
		t.Error("the file system refused a direct write through the second descriptor")
	}
	d.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(name); err != nil || len(got) != Align || got[0] != 'a' || got[Align-1] != 'z' {
		t.Errorf("the file holds %d bytes (%v) after a direct write of one block", len(got), err)
	}

	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, name); err != nil {
		t.Fatal(err)
	}
	if d := OpenSecond(name, f); d != nil {
		d.Close()
		t.Error("OpenSecond opened a name that now leads to another file")
	}
}
