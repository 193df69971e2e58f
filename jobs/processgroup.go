package jobs

import (
	"os/exec"
	"syscall"
)

// OwnProcessGroup makes cmd, once started, lead a process group of its
// own, so that KillProcessGroup ends it with everything it started: cmd's
// password commands use it too.
func OwnProcessGroup(cmd *exec.Cmd) { ownProcessGroup(cmd) }

// KillProcessGroup kills, at once, the process group that pid leads (where
// there are no process groups, the process alone).
func KillProcessGroup(pid int) { signalGroup(pid, syscall.SIGKILL) }
