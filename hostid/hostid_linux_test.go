package hostid

import (
	"os"
	"regexp"
	"testing"
)

// On Linux both are read from the kernel: the boot ID is a UUID that stays
// the same within one boot, and the PID namespace is the link's text.
func TestLinuxIDs(t *testing.T) {
	boot := BootID()
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(boot) {
		t.Errorf("BootID() = %q, want the kernel's UUID", boot)
	}
	if again := BootID(); again != boot {
		t.Errorf("BootID() changed within one boot: %q, then %q", boot, again)
	}
	want, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		// Without the link (an unusual /proc), the namespace is unknown.
		if got := PIDNamespace(); got != "" {
			t.Errorf("PIDNamespace() = %q without /proc/self/ns/pid (%v), want \"\"", got, err)
		}
		return
	}
	if got := PIDNamespace(); got != want || !regexp.MustCompile(`^pid:\[\d+\]$`).MatchString(got) {
		t.Errorf("PIDNamespace() = %q, want %q in the form pid:[N]", got, want)
	}
}
