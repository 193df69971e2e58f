package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
)

// platformLacks is what a backup on Windows cannot record, each left
// empty (or fixed) in every node.
var platformLacks = windowsLacks

// ctimeOf is the zero time: Windows tells no change time without opening
// each entry (windowsLacks).
func ctimeOf(fs.FileInfo) time.Time { return time.Time{} }

// nodeFrom records an entry's metadata as Windows gives it to Lstat: its
// type, the read-only attribute as the permission bits (windowsMode), the
// last write time, a file's size and a symlink's target. A junction or
// another reparse point that is no symlink is refused, not followed.
func (a *archiver) nodeFrom(p string, fi fs.FileInfo, prev *repo.Node) (*repo.Node, error) {
	attrs, ok := fi.Sys().(*syscall.Win32FileAttributeData)
	if !ok {
		return nil, errors.New("no windows metadata")
	}
	node := &repo.Node{
		Name:  fi.Name(),
		Mode:  windowsMode(attrs.FileAttributes),
		MTime: time.Unix(0, attrs.LastWriteTime.Nanoseconds()).UTC(),
	}
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		node.Type = repo.NodeSymlink
		target, err := a.fs.Readlink(p)
		if err != nil {
			return nil, fmt.Errorf("read symlink: %w", err)
		}
		node.LinkTarget = target
	case m.IsDir():
		node.Type = repo.NodeDir
	case m.IsRegular():
		node.Type = repo.NodeFile
		node.Size = uint64(fi.Size())
	default:
		return nil, errors.New("a junction, mount point or other reparse point that is not a symlink: not followed")
	}
	return node, nil
}
