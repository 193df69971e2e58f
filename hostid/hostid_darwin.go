package hostid

import "golang.org/x/sys/unix"

// BootID returns the UUID macOS gives this boot session, or "" when it
// cannot be read.
func BootID() string {
	id, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return ""
	}
	return id
}

// PIDNamespace returns "": macOS has no PID namespaces.
func PIDNamespace() string { return "" }

// NamespacesKnown is false: a host's PIDs are one set.
const NamespacesKnown = false
