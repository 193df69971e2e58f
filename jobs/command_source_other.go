//go:build !unix && !windows

package jobs

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup does nothing where there are no process groups.
func ownProcessGroup(*exec.Cmd) {}

// signalGroup kills the process pid: without process groups, only the
// process itself can be stopped.
func signalGroup(pid int, _ syscall.Signal) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
