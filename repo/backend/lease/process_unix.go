//go:build unix

package lease

import (
	"errors"
	"syscall"
)

// ProcessGone reports whether no process with pid exists on this host.
func ProcessGone(pid int) bool {
	return pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
