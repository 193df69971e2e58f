package runnerid

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
)

func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// With real processes: a child that ran and was waited for is gone; a live
// child is not dead; the same PID with another start time is a reused PID.
func TestDeadWithRealProcesses(t *testing.T) {
	self := Self()
	if self.Boot == "" || self.Start == 0 {
		t.Fatalf("Self() = %+v: want the boot ID and the start time on Linux", self)
	}
	probe := Prober{Gone: gone, StartTime: StartTime}
	live := exec.Command("cat")
	stdin, err := live.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = live.Wait() }()
	liveID := self
	liveID.PID, liveID.Start = live.Process.Pid, StartTime(live.Process.Pid)
	if liveID.Start == 0 {
		t.Fatal("no start time for a live child")
	}
	if self.Dead(liveID.String(), probe) {
		t.Errorf("live child %s taken for dead", liveID)
	}
	reused := liveID
	reused.Start++
	if !self.Dead(reused.String(), probe) {
		t.Errorf("runner %s, whose PID now belongs to a process started at another time, is not dead", reused)
	}

	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	endedID := self
	endedID.PID = ended.Process.Pid
	if !self.Dead(endedID.String(), probe) {
		t.Errorf("ended child %s is not dead", endedID)
	}
}
