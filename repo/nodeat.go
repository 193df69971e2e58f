package repo

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrPathNotFound: a path is not in a snapshot.
var ErrPathNotFound = errors.New("path not in snapshot")

// NodeAt returns the entry at path p ("/a/b", cleaned) of the tree root (a
// snapshot's Tree), loading one tree per folder on the way. For "/" it
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
		node = nil
		for k := range t.Nodes {
			if t.Nodes[k].Name == name {
				node = &t.Nodes[k]
				break
			}
		}
		if node == nil || !ValidName(name) {
			return nil, fmt.Errorf("%s: %w", p, ErrPathNotFound)
		}
	}
	return node, nil
}
