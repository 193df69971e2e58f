package repo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrPathNotFound: a path is not in a snapshot.
var ErrPathNotFound = errors.New("path not in snapshot")

// NodeAt returns the entry at path p ("/a/b", cleaned) of the tree root (a
// snapshot's Tree), loading one tree per folder on the way (entries are
// sorted by name, so each is found by binary search). For "/" it
// returns a folder node without a name whose Subtree is root.
func (r *Repository) NodeAt(ctx context.Context, root ID, p string) (*Node, error) {
	node := &Node{Type: NodeDir, Subtree: &root}
	if p == "/" {
		return node, nil
	}
	names := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, name := range names {
		if node.Type != NodeDir || node.Subtree == nil {
			return nil, fmt.Errorf("%s: %w", p, ErrPathNotFound)
		}
		t, err := r.LoadTree(ctx, *node.Subtree)
		if err != nil {
			return nil, fmt.Errorf("folder /%s: %w", strings.Join(names[:i], "/"), err)
		}
		k, found := slices.BinarySearchFunc(t.Nodes, name, func(n Node, name string) int { return strings.Compare(n.Name, name) })
		if !found || !ValidName(name) {
			return nil, fmt.Errorf("%s: %w", p, ErrPathNotFound)
		}
		node = &t.Nodes[k]
	}
	return node, nil
}
