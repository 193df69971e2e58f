//go:build linux

package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// randomBytes returns n bytes from a seeded generator: incompressible and
// different for every seed.
func randomBytes(seed uint64, n int) []byte {
	var key [32]byte
	key[0], key[1] = byte(seed), byte(seed>>8)
	copy(key[2:], fmt.Sprintf("%016x", seed))
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

func writeRandom(t *testing.T, p string, seed uint64, n int) []byte {
	t.Helper()
	b := randomBytes(seed, n)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

// richTree describes what buildRichTree could make on this system.
type richTree struct {
	root    string
	xattrs  bool // extended attributes were set
	device  bool // a character device node was made
	owners  bool // entries belong to other users (as root)
	sparse  bool // the file system keeps holes in the source
	files   int  // regular files, counting each hardlink
	symlink string
}

const (
	sparseSize = 64 << 20
	sparseName = "sparse.img"
)

// buildRichTree makes a folder with every kind of entry a backup must bring
// back: files of several sizes, nested and empty folders, symlinks
// (relative, absolute, dangling), a hardlink pair, a FIFO, a sparse file, a
// name that is not UTF-8, special mode bits, nanosecond mtimes, extended
// attributes, a device node and foreign owners (as root).
func buildRichTree(t *testing.T, root string) richTree {
	t.Helper()
	rt := richTree{root: root}
	mkdirAll(t, root, 0o755)
	at := func(rel string) string { return filepath.Join(root, rel) }

	for _, d := range []string{"a/b/c", "empty", "setgid", "sticky", "readonly-dir", "other"} {
		mkdirAll(t, at(d), 0o755)
	}
	files := []struct {
		name    string
		content []byte
		mode    uint32
	}{
		{"empty-file", nil, 0o644},
		{"tiny.txt", []byte("hi\n"), 0o600},
		{"random.bin", randomBytes(1, 3<<20), 0o644},
		{"text.log", bytes.Repeat([]byte("2026-01-31 02:00:00 INFO nightjar compresses this line well\n"), 40000), 0o640},
		{"caf\xe9", []byte("a name that is not UTF-8\n"), 0o644},
		{"script.sh", []byte("#!/bin/sh\necho hi\n"), 0o755},
		{"setuid-prog", []byte("pretend binary\n"), 0o4755},
		{"read-only", []byte("do not touch\n"), 0o444},
		{"a/b/c/deep.txt", []byte("deep down\n"), 0o644},
		{"a/nested.bin", randomBytes(2, 100_000), 0o644},
		{"setgid/inside", []byte("group file\n"), 0o664},
		{"readonly-dir/kept", []byte("inside a read-only folder\n"), 0o644},
		{"hard1", []byte("one inode, two names\n"), 0o644},
	}
	for _, f := range files {
		if err := os.WriteFile(at(f.name), f.content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rt.files = len(files)
	if err := os.Link(at("hard1"), at("other/hard2")); err != nil {
		t.Fatal(err)
	}
	rt.files++

	// A sparse file: 64 MiB with data at two offsets.
	sp, err := os.Create(at(sparseName))
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Truncate(sparseSize); err != nil {
		t.Fatal(err)
	}
	for i, off := range []int64{1 << 20, 40 << 20} {
		if _, err := sp.WriteAt(randomBytes(uint64(10+i), 4096), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	rt.files++
	var st unix.Stat_t
	if err := unix.Stat(at(sparseName), &st); err != nil {
		t.Fatal(err)
	}
	rt.sparse = st.Blocks*512 < sparseSize/4
	if !rt.sparse {
		t.Logf("the file system under %s does not keep holes (%d blocks): the sparse check is skipped", root, st.Blocks)
	}

	rt.symlink = at("tiny.txt")
	links := map[string]string{
		"link-rel":      "tiny.txt",
		"a/b/link-up":   "../../random.bin",
		"link-abs":      rt.symlink,
		"link-dangling": "does/not/exist",
		"link-to-dir":   "a/b",
	}
	for name, target := range links {
		if err := os.Symlink(target, at(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(at("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if isRoot() {
		err := unix.Mknod(at("null-dev"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
		if err == nil {
			rt.device = true
		} else {
			t.Logf("cannot make a device node (%v): that part is skipped", err)
		}
	}

	// Extended attributes, on a file, a binary value and a folder.
	xattrs := []struct{ path, name, value string }{
		{"tiny.txt", "user.comment", "hello"},
		{"random.bin", "user.binary", "\x00\x01\xfe\xff"},
		{"a", "user.folder", "a folder attribute"},
		{"caf\xe9", "user.empty", ""},
	}
	rt.xattrs = true
	for _, x := range xattrs {
		if err := unix.Setxattr(at(x.path), x.name, []byte(x.value), 0); err != nil {
			if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
				t.Logf("the file system refuses extended attributes (%v): that part is skipped", err)
				rt.xattrs = false
				break
			}
			t.Fatalf("setxattr %s: %v", x.path, err)
		}
	}

	// Owners other than ourselves, before the modes (chown clears setuid).
	if isRoot() {
		owners := []struct {
			path     string
			uid, gid int
		}{
			{"tiny.txt", 1234, 5678},
			{"a", 4321, 8765},
			{"setgid", 0, 3333},
			{"setgid/inside", 2222, 3333},
			{"setuid-prog", 1000, 1000},
		}
		for _, o := range owners {
			if err := os.Lchown(at(o.path), o.uid, o.gid); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Lchown(at("link-rel"), 1111, 2222); err != nil {
			t.Fatal(err)
		}
		rt.owners = true
	}

	modes := map[string]uint32{
		"a/b/c":             0o750,
		"empty":             0o700,
		"setgid":            0o2775,
		"sticky":            0o1777,
		"readonly-dir":      0o555,
		"empty-file":        0o644,
		"tiny.txt":          0o600,
		"random.bin":        0o644,
		"text.log":          0o640,
		"caf\xe9":           0o644,
		"script.sh":         0o755,
		"setuid-prog":       0o4755,
		"read-only":         0o444,
		"setgid/inside":     0o664,
		"readonly-dir/kept": 0o644,
		sparseName:          0o640,
	}
	for _, rel := range sortedKeys(modes) {
		if err := unix.Chmod(at(rel), modes[rel]); err != nil {
			t.Fatalf("chmod %s: %v", rel, err)
		}
	}

	// Distinct mtimes with nanoseconds, deepest first so that folders keep
	// theirs.
	var all []string
	err = filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		all = append(all, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(all, func(i, j int) bool {
		di, dj := strings.Count(all[i], "/"), strings.Count(all[j], "/")
		if di != dj {
			return di > dj
		}
		return all[i] < all[j]
	})
	for i, p := range all {
		mt := time.Unix(1_600_000_000+int64(i)*3607, int64(123_456_789+i*1_000_003)%1e9)
		ts := []unix.Timespec{unix.NsecToTimespec(mt.UnixNano()), unix.NsecToTimespec(mt.UnixNano())}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatalf("set times of %s: %v", p, err)
		}
	}
	return rt
}

// fsEntry is what the independent walk records of one entry.
type fsEntry struct {
	Type   string
	Perm   uint32 // mode bits 07777; not compared for symlinks
	Size   int64  // regular files
	Sum    string // SHA-256 of a regular file's content
	MTime  int64  // nanoseconds
	Target string // symlinks, not followed
	Rdev   uint64 // device nodes
	UID    uint32
	GID    uint32
	Xattrs map[string]string

	ino    uint64
	nlink  uint64
	blocks int64
}

// scanTree walks root with lstat and readlink (never following a
// symlink) and records every entry by its path relative to root ("." is
// root itself).
func scanTree(t *testing.T, root string) map[string]fsEntry {
	t.Helper()
	out := map[string]fsEntry{}
	var walk func(rel string)
	walk = func(rel string) {
		p := filepath.Join(root, rel)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatalf("lstat %q: %v", p, err)
		}
		e := fsEntry{
			Perm:   st.Mode & 0o7777,
			MTime:  st.Mtim.Nano(),
			UID:    st.Uid,
			GID:    st.Gid,
			Xattrs: listXattrs(t, p),
			ino:    st.Ino,
			nlink:  uint64(st.Nlink),
			blocks: st.Blocks,
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			e.Type, e.Size, e.Sum = "file", st.Size, fileSum(t, p)
		case unix.S_IFDIR:
			e.Type = "dir"
		case unix.S_IFLNK:
			e.Type = "symlink"
			e.Perm = 0
			target, err := os.Readlink(p)
			if err != nil {
				t.Fatal(err)
			}
			e.Target = target
		case unix.S_IFIFO:
			e.Type = "fifo"
		case unix.S_IFCHR:
			e.Type, e.Rdev = "chardev", st.Rdev
		case unix.S_IFBLK:
			e.Type, e.Rdev = "blockdev", st.Rdev
		case unix.S_IFSOCK:
			e.Type = "socket"
		default:
			t.Fatalf("%q: unknown type %o", p, st.Mode&unix.S_IFMT)
		}
		out[rel] = e
		if e.Type != "dir" {
			return
		}
		d, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			walk(filepath.Join(rel, n))
		}
	}
	walk(".")
	return out
}

func fileSum(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func listXattrs(t *testing.T, p string) map[string]string {
	t.Helper()
	size, err := unix.Llistxattr(p, nil)
	if err != nil || size == 0 {
		return nil
	}
	buf := make([]byte, size)
	size, err = unix.Llistxattr(p, buf)
	if err != nil {
		t.Fatalf("llistxattr %q: %v", p, err)
	}
	out := map[string]string{}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:size]), "\x00"), "\x00") {
		n, err := unix.Lgetxattr(p, name, nil)
		if err != nil {
			t.Fatalf("lgetxattr %q %s: %v", p, name, err)
		}
		v := make([]byte, n)
		n, err = unix.Lgetxattr(p, name, v)
		if err != nil {
			t.Fatalf("lgetxattr %q %s: %v", p, name, err)
		}
		out[name] = string(v[:n])
	}
	return out
}

// linkGroups returns, for every inode that more than one path of the tree
// names, those paths joined, sorted.
func linkGroups(tree map[string]fsEntry) []string {
	byIno := map[uint64][]string{}
	for p, e := range tree {
		if e.Type == "file" && e.nlink > 1 {
			byIno[e.ino] = append(byIno[e.ino], p)
		}
	}
	var groups []string
	for _, paths := range byIno {
		sort.Strings(paths)
		groups = append(groups, strings.Join(paths, " = "))
	}
	sort.Strings(groups)
	return groups
}

// compareTrees reports every difference between the source walk and the
// restored walk: missing and extra paths, and for each path its type,
// mode, size, content, mtime, symlink target, device number, extended
// attributes and (with owners) uid and gid; and the hardlink groups.
func compareTrees(t *testing.T, want, got map[string]fsEntry, owners bool) {
	t.Helper()
	for _, p := range sortedKeys(want) {
		w := want[p]
		g, ok := got[p]
		if !ok {
			t.Errorf("%q (%s) was not restored", p, w.Type)
			continue
		}
		var diffs []string
		add := func(what string, got, want any) {
			diffs = append(diffs, fmt.Sprintf("%s %q, want %q", what, fmt.Sprint(got), fmt.Sprint(want)))
		}
		if g.Type != w.Type {
			add("type", g.Type, w.Type)
		}
		if g.Perm != w.Perm {
			diffs = append(diffs, fmt.Sprintf("mode %04o, want %04o", g.Perm, w.Perm))
		}
		if g.Size != w.Size {
			add("size", g.Size, w.Size)
		}
		if g.Sum != w.Sum {
			diffs = append(diffs, "content differs")
		}
		if g.MTime != w.MTime {
			diffs = append(diffs, fmt.Sprintf("mtime %s, want %s",
				time.Unix(0, g.MTime).UTC().Format(time.RFC3339Nano), time.Unix(0, w.MTime).UTC().Format(time.RFC3339Nano)))
		}
		if g.Target != w.Target {
			add("symlink target", g.Target, w.Target)
		}
		if g.Rdev != w.Rdev {
			add("device", g.Rdev, w.Rdev)
		}
		if !equalXattrs(g.Xattrs, w.Xattrs) {
			add("xattrs", g.Xattrs, w.Xattrs)
		}
		if owners && (g.UID != w.UID || g.GID != w.GID) {
			diffs = append(diffs, fmt.Sprintf("owner %d:%d, want %d:%d", g.UID, g.GID, w.UID, w.GID))
		}
		if len(diffs) > 0 {
			t.Errorf("%q: %s", p, strings.Join(diffs, "; "))
		}
	}
	for _, p := range sortedKeys(got) {
		if _, ok := want[p]; !ok {
			t.Errorf("%q (%s) was restored but is not in the source", p, got[p].Type)
		}
	}
	wg, gg := linkGroups(want), linkGroups(got)
	if strings.Join(wg, "\n") != strings.Join(gg, "\n") {
		t.Errorf("hardlinks: restored groups %q, want %q", gg, wg)
	}
}

func equalXattrs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
