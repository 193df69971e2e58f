package restore_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/restore"
)

// A restored file gets exactly its metadata: mode with setuid and setgid
// (set after the owner, which clears them), owner (as root), extended
// attributes and the mtime to the nanosecond, small or big (written
// with direct I/O through a second descriptor): through the file's
// descriptor (restore.OS) and by name (a faultFS, whose files hide
// their descriptors).
func TestRestoreMetadataExact(t *testing.T) {
	b := newBuilder(t)
	mtime := time.Date(2021, 3, 4, 5, 6, 7, 123456789, time.UTC)
	withMeta := func(n repo.Node, mode uint32) repo.Node {
		n.Mode, n.MTime, n.UID, n.GID = mode, mtime, 1234, 5678
		n.Xattrs = []repo.Xattr{{Name: "user.nightjar", Value: []byte("value")}}
		return n
	}
	s := b.snapshot(
		withMeta(bigFile(b, "/big", -1), 0o2750),
		withMeta(b.file("/small", []byte("small file")), 0o4751),
	)
	for _, fsys := range []restore.FS{nil, &faultFS{}} {
		target := filepath.Join(t.TempDir(), "target")
		res, err := run(t, b, s, restore.Options{Target: target, FS: fsys})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Skipped) != 0 {
			t.Fatalf("%T: skipped %v", fsys, res.Skipped)
		}
		for name, mode := range map[string]uint32{"big": 0o2750, "small": 0o4751} {
			p := filepath.Join(target, name)
			sameContent(t, b, target, name)
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				t.Fatal(err)
			}
			if st.Mode&0o7777 != mode || st.Mtim.Nano() != mtime.UnixNano() {
				t.Errorf("%T: %s has mode %o, mtime %d; want %o, %d", fsys, name, st.Mode&0o7777, st.Mtim.Nano(), mode, mtime.UnixNano())
			}
			if os.Geteuid() == 0 && (st.Uid != 1234 || st.Gid != 5678) {
				t.Errorf("%T: %s is owned by %d:%d, want 1234:5678", fsys, name, st.Uid, st.Gid)
			}
			buf := make([]byte, 16)
			n, err := unix.Lgetxattr(p, "user.nightjar", buf)
			switch {
			case errors.Is(err, unix.EOPNOTSUPP):
			case err != nil:
				t.Errorf("%T: %s: extended attribute: %v", fsys, name, err)
			case !bytes.Equal(buf[:n], []byte("value")):
				t.Errorf("%T: %s: extended attribute %q, want %q", fsys, name, buf[:n], "value")
			}
		}
	}
}
