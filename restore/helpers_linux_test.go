package restore_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nightjar-backup/nightjar/restore"
)

func (f *faultFS) RenameExclusive(root, oldname, newname string) error {
	if err := f.fault("Rename", filepath.Join(root, newname), 0, 0); err != nil {
		return err
	}
	return f.OS.RenameExclusive(root, oldname, newname)
}

func (f *faultFS) CreateUnnamed(root, name string) (restore.UnnamedFile, error) {
	if !f.unnamed {
		return nil, fmt.Errorf("no files without a name here: %w", errors.ErrUnsupported)
	}
	file, err := f.create("CreateUnnamed", root, name, func(root, name string) (restore.File, error) {
		return f.OS.CreateUnnamed(root, name)
	})
	if err != nil {
		return nil, err
	}
	return &unnamedFaultFile{*file}, nil
}

// WrapsUnnamed says that a faultFS takes over the OS's files with no name
// and their metadata whole: the restore may use them through it.
func (*faultFS) WrapsUnnamed() {}

func (f *faultFS) LinkUnnamed(root, name string, file restore.File) error {
	if err := f.fault("LinkUnnamed", filepath.Join(root, name), 0, 0); err != nil {
		return err
	}
	return f.OS.LinkUnnamed(root, name, file.(*unnamedFaultFile).wrapped())
}

// unnamedFaultFile is a faultFile with no name, which sets its metadata
// through the file it wraps: it has no name to set it by.
type unnamedFaultFile struct{ faultFile }

func (f *unnamedFaultFile) Chown(uid, gid int) error {
	return f.File.(restore.UnnamedFile).Chown(uid, gid)
}
func (f *unnamedFaultFile) Setxattr(attr string, value []byte) error {
	return f.File.(restore.UnnamedFile).Setxattr(attr, value)
}
func (f *unnamedFaultFile) Chmod(mode uint32) error { return f.File.(restore.UnnamedFile).Chmod(mode) }
func (f *unnamedFaultFile) SetMTime(mtime time.Time) error {
	return f.File.(restore.UnnamedFile).SetMTime(mtime)
}
