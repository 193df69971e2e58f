package lease

import (
	"os"
	"strings"
)

// bootID returns the kernel's random ID of this boot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidNamespace returns the PID namespace of this process ("pid:[inode]"):
// containers on one kernel share its boot ID (and may share its host
// name), but a PID means the same process only inside one namespace.
func pidNamespace() string {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return link
}

// namespacesKnown is true: on Linux a PID is judged only where the PID
// namespace of the lock's holder is known to be this process's.
const namespacesKnown = true
