package repo_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// Node names and link targets are raw bytes: every one comes back exactly,
// valid UTF-8 or not.
func TestNodeNamesRoundTrip(t *testing.T) {
	ctx := context.Background()
	mtime := time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC)
	sub := repo.ID{9}
	tests := []struct {
		name string
		node repo.Node
	}{
		{"ascii", repo.Node{Name: "file.txt", Type: repo.NodeFile}},
		{"utf-8", repo.Node{Name: "caf\u00e9 \u65e5\u672c", Type: repo.NodeFile}},
		{"latin-1 byte", repo.Node{Name: "caf\xe9", Type: repo.NodeFile}},
		{"invalid bytes", repo.Node{Name: "\xff\xfe\x80", Type: repo.NodeFile}},
		{"lone surrogate", repo.Node{Name: "a\xed\xa0\x80b", Type: repo.NodeFile}},
		{"json specials", repo.Node{Name: "q\"b\\s\u2028<>&", Type: repo.NodeFile}},
		{"control bytes", repo.Node{Name: "\x01\x1f\x7f", Type: repo.NodeFile}},
		{"replacement char itself", repo.Node{Name: "\ufffd", Type: repo.NodeFile}},
		{"symlink, utf-8 target", repo.Node{Name: "l", Type: repo.NodeSymlink, LinkTarget: "../t\u00e9st"}},
		{"symlink, invalid target", repo.Node{Name: "l\xff", Type: repo.NodeSymlink, LinkTarget: "/tmp/\xc3\x28x"}},
		{"symlink, absolute target", repo.Node{Name: "l", Type: repo.NodeSymlink, LinkTarget: "/etc/passwd"}},
		{"everything set", repo.Node{
			Name: "d\xfe", Type: repo.NodeDir, Mode: 0o7755, UID: 1000, GID: 1001, User: "u", Group: "g",
			MTime: mtime, CTime: mtime.Add(time.Second), Inode: 1 << 40, Device: 66306, Links: 2,
			Subtree: &sub, Xattrs: []repo.Xattr{{Name: "user.k", Value: []byte{0, 1, 0xff}}},
		}},
		{"device", repo.Node{Name: "sda", Type: repo.NodeBlockDev, Rdev: 2049}},
		{"file with content", repo.Node{Name: "f", Type: repo.NodeFile, Size: 3, Content: []repo.ID{{1}, {2}}}},
	}
	r := initRepo(t, memory.New())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.node.MTime.IsZero() {
				tt.node.MTime = mtime
			}
			id, err := writer(t, r).SaveTree(ctx, &repo.Tree{Nodes: []repo.Node{tt.node}})
			if err != nil {
				t.Fatal(err)
			}
			flush(t, r)
			tree, err := r.LoadTree(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(tree.Nodes) != 1 || !reflect.DeepEqual(tree.Nodes[0], tt.node) {
				t.Errorf("tree round trip:\n got %+v\nwant %+v", tree.Nodes, tt.node)
			}
		})
	}
}

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"file", true},
		{".hidden", true},
		{"...", true},
		{"\xff", true},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"/", false},
		{"a\x00b", false},
	}
	for _, tt := range tests {
		if got := repo.ValidName(tt.name); got != tt.want {
			t.Errorf("ValidName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLoadTreeOfDataBlobThatIsNotJSON(t *testing.T) {
	r := initRepo(t, memory.New())
	id := saveBlob(t, r, []byte("not json"))
	flush(t, r)
	if _, err := r.LoadTree(context.Background(), id); err == nil {
		t.Error("LoadTree of a blob that is not a tree succeeded")
	}
}
