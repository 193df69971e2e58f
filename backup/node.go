package backup

import (
	"errors"
	"fmt"

	"github.com/nightjar-backup/nightjar/repo"
)

// sameInodeAndCTime reports whether prev is cur's inode as the parent
// snapshot saw it, with nothing about it changed since: same type, device,
// inode and ctime (which every change of metadata or content moves).
func sameInodeAndCTime(prev, cur *repo.Node) bool {
	return prev != nil && prev.Type == cur.Type && prev.Device == cur.Device && prev.Inode == cur.Inode &&
		prev.CTime.Equal(cur.CTime)
}

// readXattrs lists an entry's extended attributes without following a
// symlink. File systems without them give none.
func (a *archiver) readXattrs(p string) ([]repo.Xattr, error) {
	names, err := a.fs.ListXattrs(p)
	if err != nil {
		return nil, err
	}
	var out []repo.Xattr
	for _, name := range names {
		value, err := a.fs.GetXattr(p, name)
		if errors.Is(err, ErrNoXattr) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, repo.Xattr{Name: name, Value: value})
	}
	return out, nil
}

// Lack is metadata that the platform the backup ran on does not have, or
// that nightjar cannot read there, such as owners on Windows: the backup
// names it once (Result.Lacks) and carries on, leaving the node field
// empty.
type Lack struct {
	What   string `json:"what"`
	Reason string `json:"reason"`
}
