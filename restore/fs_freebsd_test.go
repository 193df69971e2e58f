package restore

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// An attribute in no FreeBSD namespace is a Lack; any other refusal stays
// the error it is.
func TestXattrError(t *testing.T) {
	for _, tt := range []struct {
		name, attr string
		err        error
		lack       bool
	}{
		{"a Linux security attribute", "security.selinux", unix.ENOATTR, true},
		{"a Linux trusted attribute", "trusted.x", unix.ENOATTR, true},
		{"a user attribute refused", "user.x", unix.ENOATTR, false},
		{"a system attribute without permission", "system.x", unix.EPERM, false},
		{"success", "user.x", nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := xattrError(tt.attr, tt.err)
			var l *lackError
			if got := errors.As(err, &l); got != tt.lack {
				t.Errorf("a lack: %v, want %v (%v)", got, tt.lack, err)
			}
			if !tt.lack && err != tt.err {
				t.Errorf("error %v, want %v as it is", err, tt.err)
			}
		})
	}
}
