package restore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows"
)

// CreateExclusive creates a new file; O_EXCL refuses any entry at name,
// a symlink or junction included.
func (OS) CreateExclusive(root, name string) (File, error) {
	full, err := windowsFull(root, name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// OpenBeneath opens root/name for reading, never through a symlink or
// junction below root: each folder of name is opened without following a
// reparse point, checked to be a plain folder and held open without
// sharing deletion, so that nobody can rename or replace it before the
// next element, and the file is opened and checked the same way.
func (OS) OpenBeneath(root, name string) (ReadFile, error) {
	full := filepath.Join(root, filepath.FromSlash(name))
	f, err := openBeneath(root, name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: full, Err: err}
	}
	return f, nil
}

// errReparsePoint refuses a symlink or junction on the way of OpenBeneath.
var errReparsePoint = errors.New("a symlink or junction is in the way: not followed")

func openBeneath(root, name string) (*os.File, error) {
	elems := strings.Split(name, "/")
	for _, e := range elems {
		if e == "" || e == "." || e == ".." || windowsNameProblem(e) != "" {
			return nil, windows.ERROR_INVALID_NAME
		}
	}
	p := root
	for _, e := range elems[:len(elems)-1] {
		p = filepath.Join(p, e)
		h, err := openNoFollow(p, windows.FILE_FLAG_BACKUP_SEMANTICS, windows.FILE_ATTRIBUTE_DIRECTORY)
		if err != nil {
			return nil, err
		}
		defer windows.CloseHandle(h)
	}
	p = filepath.Join(p, elems[len(elems)-1])
	h, err := openNoFollow(p, 0, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(h), p), nil
}

// openNoFollow opens p for reading without following a reparse point,
// sharing reads and writes but not deletion, and refuses it if it is a
// reparse point or its folder attribute is not want.
func openNoFollow(p string, flags, want uint32) (windows.Handle, error) {
	name, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return 0, err
	}
	h, err := windows.CreateFile(name, windows.GENERIC_READ, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|flags, 0)
	if err != nil {
		return 0, err
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return 0, err
	}
	switch {
	case info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		err = errReparsePoint
	case info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != want:
		err = windows.ERROR_DIRECTORY
	}
	if err != nil {
		windows.CloseHandle(h)
		return 0, err
	}
	return h, nil
}

// Symlink makes a symlink. Windows lets only an administrator, or a user
// in Developer Mode, make one: without that privilege the restore names
// the Lack once.
func (OS) Symlink(root, target, name string) error {
	full, err := windowsFull(root, name)
	if err != nil {
		return err
	}
	err = os.Symlink(target, full)
	if errors.Is(err, windows.ERROR_PRIVILEGE_NOT_HELD) {
		return &lackError{what: "symlinks", reason: "Windows lets only an administrator, or a user in Developer Mode, make them"}
	}
	return err
}

// Mknod fails: Windows has no FIFOs or device nodes.
func (OS) Mknod(string, string, uint32, int) error {
	return errors.New("FIFOs and device nodes do not exist on Windows")
}

// Lchown fails with a Lack: Windows has no POSIX owners.
func (OS) Lchown(string, string, int, int) error {
	return &lackError{what: LackOwners, reason: "Windows has no POSIX owners: what is restored belongs to whoever restores it"}
}

// Lsetxattr fails with a Lack: Windows has no POSIX extended attributes.
func (OS) Lsetxattr(string, string, string, []byte) error {
	return &lackError{what: "extended attributes", reason: "Windows has none of the POSIX kind"}
}

// Chmod sets the read-only attribute from the owner's write bit
// (windowsAttributes); Windows has no other permission bits.
func (OS) Chmod(root, name string, mode uint32) error {
	full, err := windowsFull(root, name)
	if err != nil {
		return err
	}
	p, err := windows.UTF16PtrFromString(full)
	if err != nil {
		return err
	}
	attrs, err := windows.GetFileAttributes(p)
	if err != nil {
		return err
	}
	if want := windowsAttributes(attrs, mode); want != attrs {
		return windows.SetFileAttributes(p, want)
	}
	return nil
}

// SetMTime sets the access and modification times, to Windows' 100 ns,
// on the entry at name itself, never on what a symlink there points to.
func (OS) SetMTime(root, name string, mtime time.Time) error {
	full, err := windowsFull(root, name)
	if err != nil {
		return err
	}
	p, err := windows.UTF16PtrFromString(full)
	if err != nil {
		return err
	}
	h, err := windows.CreateFile(p, windows.FILE_WRITE_ATTRIBUTES, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_OPEN_REPARSE_POINT|windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	ft := windows.NsecToFiletime(mtime.UnixNano())
	return windows.SetFileTime(h, nil, &ft, &ft)
}

// windowsFull is root/name as a Windows path, after checking that no
// folder of name below root is a symlink or junction. Windows has no
// descriptor-relative calls in its usual API: a reparse point swapped in
// between this check and the call is followed (docs/ARCHITECTURE.md).
func windowsFull(root, name string) (string, error) {
	elems := strings.Split(name, "/")
	p := root
	for i, e := range elems {
		if e == "" || e == "." || e == ".." {
			return "", &fs.PathError{Op: "open", Path: filepath.Join(root, filepath.FromSlash(name)), Err: windows.ERROR_INVALID_NAME}
		}
		p = filepath.Join(p, e)
		if i == len(elems)-1 {
			break
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 || !fi.IsDir() {
			return "", &fs.PathError{Op: "open", Path: p, Err: errReparsePoint}
		}
	}
	return p, nil
}

// Mkdir creates a folder.
func (OS) Mkdir(root, name string, perm fs.FileMode) error {
	full, err := windowsFull(root, name)
	if err != nil {
		return err
	}
	return os.Mkdir(full, perm)
}

// Lstat describes name without following a symlink.
func (OS) Lstat(root, name string) (fs.FileInfo, error) {
	full, err := windowsFull(root, name)
	if err != nil {
		return nil, err
	}
	return os.Lstat(full)
}

// Rename moves oldname to newname.
func (OS) Rename(root, oldname, newname string) error {
	oldFull, err := windowsFull(root, oldname)
	if err != nil {
		return err
	}
	newFull, err := windowsFull(root, newname)
	if err != nil {
		return err
	}
	return os.Rename(oldFull, newFull)
}

// Remove removes a file or an empty folder.
func (OS) Remove(root, name string) error {
	full, err := windowsFull(root, name)
	if err != nil {
		return err
	}
	return os.Remove(full)
}

// Link makes a hard link.
func (OS) Link(root, oldname, newname string) error {
	oldFull, err := windowsFull(root, oldname)
	if err != nil {
		return err
	}
	newFull, err := windowsFull(root, newname)
	if err != nil {
		return err
	}
	return os.Link(oldFull, newFull)
}

// holdRoot does nothing on Windows: every call names its path whole.
func holdRoot(string) (release func()) { return func() {} }

// sameFile tells whether two of Lstat's answers are one file.
func sameFile(a, b fs.FileInfo) bool { return os.SameFile(a, b) }

// mtimeResolution is the precision of a file's times on Windows.
const mtimeResolution = 100 * time.Nanosecond

// localPath is where the entry at snapshot path p goes below the target.
func localPath(p string) string { return windowsLocalPath(p) }

// refusedName says why the last element of snapshot path p cannot be a
// name on Windows, or "".
func refusedName(p string) string { return windowsRefusedName(p) }

// platformLacks is what Windows never restores, whatever the snapshot.
func platformLacks() []Lack {
	return []Lack{
		{What: LackOwners, Reason: "Windows has no POSIX owners: what is restored belongs to whoever restores it"},
		{What: "permission bits", Reason: "Windows keeps only the read-only attribute, which files get when their owner could not write them"},
	}
}
