package backup

import (
	"os/user"
)

// current is the name of the user running the backup (DOMAIN\name), or
// "" when Windows does not tell it.
func (o *ownerNames) current() string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return u.Username
}

// processOwner is 0, 0: Windows has no POSIX owners (see platformLacks).
func processOwner() (uid, gid uint32) { return 0, 0 }
