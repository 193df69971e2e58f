//go:build unix

package jobs

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup makes cmd the leader of a process group of its own, so
// that stopping it stops everything it started (a shell's children).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the process group that pid leads.
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
}
