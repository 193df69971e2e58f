package local

import (
	"context"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestBlockUnitIsTheFragmentSize(t *testing.T) {
	cases := []struct {
		name          string
		bsize, frsize int64
		want          int64
	}{
		{"fragment smaller than the I/O size (zfs, nfs)", 131072, 512, 512},
		{"equal (ext4)", 4096, 4096, 4096},
		{"no fragment size given", 4096, 0, 4096},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := unix.Statfs_t{Bsize: tc.bsize, Frsize: tc.frsize}
			if got := blockUnit(&st); got != tc.want {
				t.Errorf("blockUnit(Bsize %d, Frsize %d) = %d, want %d", tc.bsize, tc.frsize, got, tc.want)
			}
		})
	}
}

// TestSpaceMatchesStatfs compares Space with what syscall.Statfs says of
// the same folder in fragment-size units, as df does. The total cannot
// change between the two calls; the free bytes can (other processes
// write), so they only have to be a whole number of fragments no larger
// than the total.
func TestSpaceMatchesStatfs(t *testing.T) {
	dir := t.TempDir()
	b := &Backend{root: dir}
	free, total, err := b.Space(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	unit := st.Frsize
	if unit == 0 {
		unit = st.Bsize
	}
	if want := int64(st.Blocks) * unit; total != want {
		t.Errorf("total = %d, want %d (%d blocks of %d bytes)", total, want, st.Blocks, unit)
	}
	if free%unit != 0 || free < 0 || free > total {
		t.Errorf("free = %d: not a whole number of %d-byte fragments within the total %d", free, unit, total)
	}
}
