package jobs

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own
// (CREATE_NEW_PROCESS_GROUP), so that a Ctrl+C meant for nightjar's
// console does not reach it: nightjar stops it itself (signalGroup).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// signalGroup stops the process pid and every process it started:
// Windows has no signals, so taskkill /T ends the tree, asking first
// (SIGTERM: windows get a close message) and forcing with SIGKILL. When
// taskkill cannot run, only the process itself is killed.
func signalGroup(pid int, sig syscall.Signal) {
	args := []string{"/T", "/PID", strconv.Itoa(pid)}
	if sig == syscall.SIGKILL {
		args = append([]string{"/F"}, args...)
	}
	if exec.Command("taskkill", args...).Run() == nil || sig != syscall.SIGKILL {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
