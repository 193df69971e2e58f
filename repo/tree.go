package repo

import (
	"context"
	"encoding/json"
	"errors"
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
	Parts []ID       `json:"parts,omitempty"` // a tree list blob's (treeList)
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

// decodeTree reads a tree blob, or returns the parts of a tree list blob.
// parseTree (treecodec.go) decodes what encodeTree writes, several times
// faster than encoding/json; it declines whatever it cannot decode exactly
// as json.Unmarshal does (tree lists among it), and json.Unmarshal decides
// that, with its results and errors.
func decodeTree(data []byte) (*Tree, []ID, error) {
	tj, ok := parseTree(data)
	if !ok {
		if err := json.Unmarshal(data, &tj); err != nil {
			return nil, nil, err
		}
	}
	if tj.Parts != nil {
		parts, err := tj.list()
		return nil, parts, err
	}
	return tj.tree(), nil, nil
}

// list checks a decoded tree list blob and returns its parts.
func (tj *treeJSON) list() ([]ID, error) {
	if len(tj.Parts) == 0 {
		return nil, errors.New("tree list without parts")
	}
	if tj.Nodes != nil {
		return nil, errors.New("tree list with entries of its own")
	}
	return tj.Parts, nil
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

// A tree whose JSON is longer than splitTreeSize is stored split, in a
// repository of version 2 or later: the JSON is cut into parts
// (treesplit.go), each part is a tree blob, and a tree list blob names them
// in order. A change to a few entries of a big directory, or to the chunk
// list of a big file, then stores the parts around the change and a new
// list, instead of the whole tree again.
const splitTreeSize = 8 << 10

// treeList is a tree list blob: {"parts": [tree part blob ID, ...]}.
type treeList struct {
	Parts []ID `json:"parts"`
}

// SaveTree stores a tree and returns the ID of its blob: a tree blob, or a
// tree list blob when the tree is split.
func (w *Writer) SaveTree(ctx context.Context, t *Tree) (ID, error) {
	r := w.r
	data, err := encodeTree(t)
	if err != nil {
		return ID{}, fmt.Errorf("encode tree: %w", err)
	}
	if r.cfg.Version < splitTreesVersion || len(data) <= splitTreeSize {
		return w.saveTreeBlob(ctx, data)
	}
	var list treeList
	err = treePartRule.Split(data, r.treeGear(), func(part []byte) error {
		id, err := w.saveTreeBlob(ctx, part)
		list.Parts = append(list.Parts, id)
		return err
	})
	if err != nil {
		return ID{}, err
	}
	if len(list.Parts) == 1 {
		return list.Parts[0], nil // no cut: the part is the whole tree
	}
	listData, err := json.Marshal(&list)
	if err != nil {
		return ID{}, fmt.Errorf("encode tree list: %w", err)
	}
	return w.saveTreeBlob(ctx, listData)
}

func (w *Writer) saveTreeBlob(ctx context.Context, data []byte) (ID, error) {
	id := w.r.BlobID(data)
	_, err := w.SaveBlob(ctx, TreeBlob, id, data)
	return id, err
}

// LoadTree reads and verifies a tree, joining its parts when it is split.
func (r *Repository) LoadTree(ctx context.Context, id ID) (*Tree, error) {
	t, _, err := r.loadTree(ctx, id)
	return t, err
}

// loadTree reads and verifies a tree, joining its parts when it is split,
// and returns the IDs of those parts (nil for a tree stored whole).
func (r *Repository) loadTree(ctx context.Context, id ID) (*Tree, []ID, error) {
	t, parts, err := r.loadTreeBlob(ctx, id)
	if err != nil || parts == nil {
		return t, nil, err
	}
	var data []byte
	var buf BlobBuffer
	for _, part := range parts {
		plain, err := r.LoadBlobTo(ctx, part, &buf)
		if err != nil {
			return nil, nil, fmt.Errorf("load tree %s: part %s: %w", id.Short(), part.Short(), err)
		}
		if len(data)+len(plain) > maxTreeSize {
			return nil, nil, fmt.Errorf("tree %s: parts longer than %d bytes: %w", id.Short(), maxTreeSize, ErrIntegrity)
		}
		data = append(data, plain...)
	}
	t, nested, err := decodeTree(data)
	if err == nil && nested != nil {
		err = errors.New("a tree list made of parts")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tree %s: %v: %w", id.Short(), err, ErrIntegrity)
	}
	return t, parts, nil
}

// maxTreeSize bounds the JSON of a split tree, against a crafted tree list
// that names a part many times: about 3 million entries.
const maxTreeSize = 1 << 30

// loadTreeBlob reads one tree blob, or the parts of a tree list blob.
func (r *Repository) loadTreeBlob(ctx context.Context, id ID) (*Tree, []ID, error) {
	data, err := r.LoadBlob(ctx, id)
	if err != nil {
		return nil, nil, fmt.Errorf("load tree: %w", err)
	}
	t, parts, err := decodeTree(data)
	if err != nil {
		return nil, nil, fmt.Errorf("tree %s: %v: %w", id.Short(), err, ErrIntegrity)
	}
	return t, parts, nil
}
