package backup

import (
	"errors"
	"os"
)

// ErrNoXattr is how FS.GetXattr fails for an attribute that is not there.
var ErrNoXattr = errors.New("no such extended attribute")

// OpenFile opens name read-only.
func (OSFS) OpenFile(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ListXattrs lists none.
func (OSFS) ListXattrs(string) ([]string, error) { return nil, nil }

// GetXattr fails with ErrNoXattr: there are none to read.
func (OSFS) GetXattr(string, string) ([]byte, error) { return nil, ErrNoXattr }
