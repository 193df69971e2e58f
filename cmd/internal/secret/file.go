package secret

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrUnsafe marks a password source that others could change: a password
// file, or a config naming a command, that is writable by others.
var ErrUnsafe = errors.New("writable by others")

// ReadFile reads the password on the first line of file. A file that
// others can write is refused (ErrUnsafe); one that others can read is
// read, with a warning. Neither message holds the file's path.
func ReadFile(file string) (pw []byte, warning string, err error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, "", fmt.Errorf("cannot be read: %w", pathless(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("cannot be read: %w", pathless(err))
	}
	warning, err = CheckFileMode(fi)
	if err != nil {
		return nil, "", err
	}
	var l firstLine
	// One byte more than the longest line with its "\r\n" tells a line
	// too long from one that fits.
	if _, err := io.Copy(&l, io.LimitReader(f, MaxLine+3)); err != nil {
		return nil, "", fmt.Errorf("cannot be read: %w", pathless(err))
	}
	pw, err = l.line()
	return pw, warning, err
}

// CheckFileMode judges a password file's mode as ssh judges a key's: one
// that others can write is refused (ErrUnsafe), one that others can read
// gets a warning. Where the mode says nothing of who may write (Windows),
// it has nothing to say.
func CheckFileMode(fi fs.FileInfo) (warning string, err error) {
	if !modeBitsMeanAccess {
		return "", nil
	}
	mode := fi.Mode().Perm()
	if mode&0o002 != 0 {
		return "", fmt.Errorf("is %w (mode %04o): refused, as anyone could change the password it holds; fix: chmod o-w on it", ErrUnsafe, mode)
	}
	if mode&0o044 != 0 {
		return fmt.Sprintf("is readable by others (mode %04o): keep it private with chmod go-r on it", mode), nil
	}
	return "", nil
}

// CheckConfigMode refuses a config that names a command (a
// password_command, a hook, a command source) when others can write it:
// they could make nightjar run their command, as root.
func CheckConfigMode(fi fs.FileInfo) error {
	if !modeBitsMeanAccess {
		return nil
	}
	if mode := fi.Mode().Perm(); mode&0o002 != 0 {
		return fmt.Errorf("is %w (mode %04o)", ErrUnsafe, mode)
	}
	return nil
}

// pathless is err without the path an *fs.PathError adds: the path of a
// secret is one too.
func pathless(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}
