package repo

import "context"

// RestoreSize is what restoring snapshots would write.
type RestoreSize struct {
	Files  int64 `json:"total_file_count"` // regular files
	Dirs   int64 `json:"total_dir_count"`
	Others int64 `json:"total_other_count"` // symlinks, FIFOs, devices, sockets
	Bytes  int64 `json:"total_size"`        // the files' sizes
}

// AddRestoreSize adds to s the entries of the tree root (a snapshot's
// Tree) and the sizes of its files.
func (r *Repository) AddRestoreSize(ctx context.Context, root ID, s *RestoreSize) error {
	return r.Walk(ctx, root, WalkOptions{}, WalkVisitor{Node: func(e *WalkEntry) error {
		switch e.Node.Type {
		case NodeFile:
			s.Files++
			s.Bytes += int64(e.Node.Size)
		case NodeDir:
			s.Dirs++
		default:
			s.Others++
		}
		return nil
	}})
}

// RawData counts the distinct blobs that trees use, as the repository
// stores them.
type RawData struct {
	DataBlobs   int64 `json:"data_blobs"`
	TreeBlobs   int64 `json:"tree_blobs"`              // tree blobs and the parts of split trees
	StoredBytes int64 `json:"total_size"`              // sealed (compressed, encrypted) bytes in packs
	RawBytes    int64 `json:"total_uncompressed_size"` // plaintext bytes
	Missing     int64 `json:"missing_blobs"`           // blobs named but not in the index (run check)
}

// RawDataCounter adds up the blobs of several snapshots, each blob once.
// It remembers every blob it counted: memory grows with the blobs of the
// snapshots counted, as restic's stats does.
type RawDataCounter struct {
	r    *Repository
	seen map[ID]struct{}
	// Stats holds what was counted so far.
	Stats RawData
}

// NewRawDataCounter returns a counter of r's blobs. The index must be
// loaded.
func (r *Repository) NewRawDataCounter() *RawDataCounter {
	return &RawDataCounter{r: r, seen: map[ID]struct{}{}}
}

// Add counts the blobs of the tree root (a snapshot's Tree) not counted
// before; a tree counted before is not walked again.
func (c *RawDataCounter) Add(ctx context.Context, root ID) error {
	return c.r.Walk(ctx, root, WalkOptions{}, WalkVisitor{
		Enter: func(_ *WalkEntry, id ID) error {
			if _, ok := c.seen[id]; ok {
				return SkipTree
			}
			return nil
		},
		Tree: func(_ *WalkEntry, id ID, parts []ID, _ *Tree) error {
			c.blob(id, &c.Stats.TreeBlobs)
			for _, part := range parts {
				c.blob(part, &c.Stats.TreeBlobs)
			}
			return nil
		},
		Node: func(e *WalkEntry) error {
			for _, id := range e.Node.Content {
				c.blob(id, &c.Stats.DataBlobs)
			}
			return nil
		},
	})
}

func (c *RawDataCounter) blob(id ID, n *int64) {
	if _, ok := c.seen[id]; ok {
		return
	}
	c.seen[id] = struct{}{}
	b, ok := c.r.idx.Lookup(id)
	if !ok {
		c.Stats.Missing++
		return
	}
	*n++
	c.Stats.StoredBytes += int64(b.Length)
	c.Stats.RawBytes += int64(b.RawLength)
}
