package restore_test

import "path/filepath"

func (f *faultFS) RenameExclusive(root, oldname, newname string) error {
	if err := f.fault("Rename", filepath.Join(root, newname), 0, 0); err != nil {
		return err
	}
	return f.OS.RenameExclusive(root, oldname, newname)
}
