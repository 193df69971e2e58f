package hostid

import (
	"os"
	"strings"
)

// BootID returns the kernel's random ID of this boot, or "" when it cannot
// be read.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// PIDNamespace returns this process's PID namespace as the kernel names it
// ("pid:[4026531836]"), or "" when it cannot be read: containers on one
// kernel share its boot ID (and may share a host name), but a PID means the
// same process only inside one namespace.
func PIDNamespace() string {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return link
}

// NamespacesKnown is true: on Linux a PID names a process only within its
// PID namespace.
const NamespacesKnown = true
