package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Node types.
const (
	NodeFile     = "file"
	NodeDir      = "dir"
	NodeSymlink  = "symlink"
	NodeFIFO     = "fifo"
	NodeCharDev  = "chardev"
	NodeBlockDev = "blockdev"
	NodeSocket   = "socket"
)

// Node is one entry of a directory. Name and LinkTarget are raw bytes held
// in a string; names that are not valid UTF-8 are stored base64-encoded in
// name_raw (link_target_raw), so that every name comes back exactly.
type Node struct {
	Name       string    `json:"-"`
	Type       string    `json:"type"`
	Mode       uint32    `json:"mode"` // permission bits with setuid, setgid and sticky (07777)
	UID        uint32    `json:"uid"`
	GID        uint32    `json:"gid"`
	User       string    `json:"user,omitempty"`
	Group      string    `json:"group,omitempty"`
	Size       uint64    `json:"size,omitempty"`
	MTime      time.Time `json:"mtime"`
	CTime      time.Time `json:"ctime"`
	Inode      uint64    `json:"inode,omitempty"`
	Device     uint64    `json:"device,omitempty"`
	Links      uint64    `json:"links,omitempty"`
	Rdev       uint64    `json:"rdev,omitempty"` // device number of chardev and blockdev nodes
	LinkTarget string    `json:"-"`
	Content    []ID      `json:"content,omitempty"` // data blobs of a file, in order
	Subtree    *ID       `json:"subtree,omitempty"` // tree blob of a directory
	Xattrs     []Xattr   `json:"xattrs,omitempty"`
}

// Xattr is one extended attribute.
type Xattr struct {
	Name  string `json:"name"`
	Value []byte `json:"value"`
}

// nodeJSON is a node as trees store it: names and link targets that are
// not valid UTF-8 go into the _raw fields (base64), the rest as they are.
// The node's other fields are embedded by value, so that a whole tree is
// encoded and decoded in one pass (a MarshalJSON per node would make the
// encoder scan every node twice).
type nodeJSON struct {
	Name          string `json:"name,omitempty"`
	NameRaw       []byte `json:"name_raw,omitempty"`
	LinkTarget    string `json:"link_target,omitempty"`
	LinkTargetRaw []byte `json:"link_target_raw,omitempty"`
	nodeFields
}

// nodeFields is Node without its methods.
type nodeFields Node

type treeJSON struct {
	Nodes []nodeJSON `json:"nodes"`
}

// encodeTree writes a tree blob. appendTree (treecodec.go) writes the same
// bytes as encoding/json, several times faster; encoding/json is left the
// trees appendTree cannot write, for its error.
func encodeTree(t *Tree) ([]byte, error) {
	if b, ok := appendTree(make([]byte, 0, treeSizeHint(t)), t); ok {
		return b, nil
	}
	return marshalTree(t)
}

// marshalTree is encodeTree by encoding/json, whose output defines the
// format.
func marshalTree(t *Tree) ([]byte, error) {
	var tj treeJSON
	if t.Nodes != nil {
		tj.Nodes = make([]nodeJSON, len(t.Nodes))
	}
	for i := range t.Nodes {
		j := &tj.Nodes[i]
		j.nodeFields = nodeFields(t.Nodes[i])
		j.Name, j.NameRaw = splitRaw(t.Nodes[i].Name)
		j.LinkTarget, j.LinkTargetRaw = splitRaw(t.Nodes[i].LinkTarget)
	}
	return json.Marshal(&tj)
}

// decodeTree reads a tree blob. parseTree (treecodec.go) decodes what
// encodeTree writes, several times faster than encoding/json; it declines
// whatever it cannot decode exactly as json.Unmarshal does, and
// json.Unmarshal decides that, with its results and errors.
func decodeTree(data []byte) (*Tree, error) {
	tj, ok := parseTree(data)
	if !ok {
		if err := json.Unmarshal(data, &tj); err != nil {
			return nil, err
		}
	}
	return tj.tree(), nil
}

// tree turns a decoded treeJSON into a Tree.
func (tj *treeJSON) tree() *Tree {
	t := &Tree{}
	if tj.Nodes != nil {
		t.Nodes = make([]Node, len(tj.Nodes))
	}
	for i := range tj.Nodes {
		j := &tj.Nodes[i]
		t.Nodes[i] = Node(j.nodeFields)
		t.Nodes[i].Name = joinRaw(j.Name, j.NameRaw)
		t.Nodes[i].LinkTarget = joinRaw(j.LinkTarget, j.LinkTargetRaw)
	}
	return t
}

func splitRaw(s string) (string, []byte) {
	if utf8.ValidString(s) {
		return s, nil
	}
	return "", []byte(s)
}

func joinRaw(s string, raw []byte) string {
	if raw != nil {
		return string(raw)
	}
	return s
}

// ValidName reports whether name can be an entry of a directory: not
// empty, not "." or "..", and without '/' or NUL. Restore refuses others,
// so that a crafted tree cannot write outside the target.
func ValidName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// Tree is a directory listing, sorted by name (byte order).
type Tree struct {
	Nodes []Node `json:"nodes"`
}

// SaveTree stores a tree blob and returns its ID.
func (r *Repository) SaveTree(ctx context.Context, t *Tree) (ID, error) {
	data, err := encodeTree(t)
	if err != nil {
		return ID{}, fmt.Errorf("encode tree: %w", err)
	}
	id := r.BlobID(data)
	_, err = r.SaveBlob(ctx, TreeBlob, id, data)
	return id, err
}

// LoadTree reads and verifies a tree blob.
func (r *Repository) LoadTree(ctx context.Context, id ID) (*Tree, error) {
	data, err := r.LoadBlob(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load tree: %w", err)
	}
	t, err := decodeTree(data)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %v: %w", id.Short(), err, ErrIntegrity)
	}
	return t, nil
}
