package runnerid

import (
	"golang.org/x/sys/unix"
)

// startTime is the process's start, in microseconds since the epoch.
func startTime(pid int) uint64 {
	p, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || p.Proc.P_pid != int32(pid) {
		return 0
	}
	t := p.Proc.P_starttime
	return uint64(t.Sec)*1_000_000 + uint64(t.Usec)
}
