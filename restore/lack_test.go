//go:build !windows

package restore_test

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/restore"
)

// lackingFS is a platform without symlinks or extended attributes, as
// Windows is to a user without the privilege to make symlinks.
type lackingFS struct{ faultFS }

func (lackingFS) Symlink(string, string, string) error {
	return restore.NewLackError("symlinks", "this platform makes none")
}

func (lackingFS) Lsetxattr(string, string, string, []byte) error {
	return restore.NewLackError("extended attributes", "this platform has none")
}

// What the platform cannot do at all is named once, with the number of
// times it was met, and the restore carries on: the files are restored,
// and nothing is reported as a skipped entry.
func TestRestoreNamesWhatThePlatformLacksOnce(t *testing.T) {
	b := newBuilder(t)
	withXattrs := func(n repo.Node, names ...string) repo.Node {
		for _, name := range names {
			n.Xattrs = append(n.Xattrs, repo.Xattr{Name: name, Value: []byte("v")})
		}
		return n
	}
	s := b.snapshot(
		withXattrs(b.file("/a", []byte("a")), "user.one", "user.two"),
		withXattrs(b.file("/b", []byte("b")), "user.one"),
		repo.Node{Name: "link1", Type: repo.NodeSymlink, LinkTarget: "a", MTime: mtime},
		repo.Node{Name: "link2", Type: repo.NodeSymlink, LinkTarget: "b", MTime: mtime},
	)
	res, err := run(t, b, s, restore.Options{FS: &lackingFS{}})
	if err != nil {
		t.Fatal(err)
	}
	// The order is the order they were met in, which the workers decide.
	slices.SortFunc(res.Lacks, func(a, b restore.Lack) int { return strings.Compare(a.What, b.What) })
	want := []restore.Lack{
		{What: "extended attributes", Reason: "this platform has none", Entries: 3},
		{What: "symlinks", Reason: "this platform makes none", Entries: 2},
	}
	if !reflect.DeepEqual(res.Lacks, want) {
		t.Errorf("lacks %+v, want %+v", res.Lacks, want)
	}
	if len(res.Skipped) > 0 || res.Files != 2 || res.Others != 0 {
		t.Errorf("restored %d files, %d others, skipped %v; want the 2 files restored and nothing skipped", res.Files, res.Others, res.Skipped)
	}
	if !res.HasLack("symlinks") || res.HasLack(restore.LackOwners) {
		t.Errorf("HasLack: symlinks %v, owners %v; want true, false", res.HasLack("symlinks"), res.HasLack(restore.LackOwners))
	}
}

// xattrRefusingFS answers as Linux does for a macOS attribute
// (com.apple.*: no such namespace) and, to a user, for a trusted.* one.
type xattrRefusingFS struct{ faultFS }

func (f *xattrRefusingFS) Lsetxattr(root, name, attr string, value []byte) error {
	switch {
	case strings.HasPrefix(attr, "com.apple."):
		return syscall.EOPNOTSUPP
	case strings.HasPrefix(attr, "trusted."):
		return syscall.EPERM
	}
	return f.faultFS.Lsetxattr(root, name, attr, value)
}

// An extended attribute the target cannot take (a macOS snapshot restored
// on Linux, a trusted.* attribute restored by a user) costs the attribute,
// never the file: the file is restored with the attributes it can hold,
// and each kind of refusal is named once with its count.
func TestAnAttributeTheTargetRefusesKeepsTheFile(t *testing.T) {
	b := newBuilder(t)
	n := b.file("/a", []byte("a"))
	n.Xattrs = []repo.Xattr{{Name: "com.apple.quarantine", Value: []byte("q")}}
	want := []string{"extended attributes the target does not take"}
	if os.Geteuid() != 0 { // root may set trusted.* attributes: a refusal is then a real failure
		n.Xattrs = append(n.Xattrs, repo.Xattr{Name: "trusted.x", Value: []byte("t")})
		want = append([]string{"extended attributes that need root"}, want...)
	}
	s := b.snapshot(n)
	res, err := run(t, b, s, restore.Options{FS: &xattrRefusingFS{}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 1 || len(res.Skipped) > 0 {
		t.Fatalf("restored %d files, skipped %v; want the file restored", res.Files, res.Skipped)
	}
	slices.SortFunc(res.Lacks, func(a, b restore.Lack) int { return strings.Compare(a.What, b.What) })
	var got []string
	for _, l := range res.Lacks {
		got = append(got, l.What)
		if l.Entries != 1 || !strings.Contains(l.Reason, "was the first met") {
			t.Errorf("lack %+v: want one entry and the attribute named", l)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("lacks %q, want %q", got, want)
	}
}
