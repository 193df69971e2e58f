//go:build unix

package jobs

import (
	"errors"
	"syscall"
)

// ProcessGone reports whether no process with pid exists on this host:
// a drill's or a scheduler runner's liveness.
func ProcessGone(pid int) bool {
	return pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
