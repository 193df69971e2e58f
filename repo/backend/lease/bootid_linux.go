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
