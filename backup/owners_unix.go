//go:build linux || darwin || freebsd

package backup

import "os"

// current is the name of the user running the backup.
func (o *ownerNames) current() string {
	return o.user(uint32(os.Getuid()))
}

// processOwner is the user and group that own what this process writes,
// as a stream's node records them.
func processOwner() (uid, gid uint32) {
	return uint32(os.Getuid()), uint32(os.Getgid())
}
