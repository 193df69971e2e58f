//go:build linux

package schede2e

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// statusPasses is the passes part of status --json.
type statusPasses struct {
	statusRec
	Passes []struct {
		At   time.Time `json:"at"`
		Mode string    `json:"mode"`
		PID  int       `json:"pid"`
	} `json:"passes"`
}

// A tick held by a long run renews its pass's heartbeat every heartbeat,
// so that status does not call the scheduler offline while it runs (under
// systemd's timer no other tick starts meanwhile). The run is held by a
// before hook reading a FIFO; the test waits, by polling status, until the
// tick's pass row is more than offline_after newer than its first record:
// a pass recorded once would have been offline by then.
func TestHeldTickRenewsItsHeartbeat(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := writeSource(t, w)
	hold := w.path("hold")
	if err := syscall.Mkfifo(hold, 0o600); err != nil {
		t.Fatal(err)
	}
	// Whatever happens, the hook gets its end of file with the test.
	t.Cleanup(func() {
		if f, err := os.OpenFile(hold, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	const offlineAfter = 3 * time.Second
	w.writeConfig(header("heartbeat = \"1s\"\ntick_interval = \"1s\"\noffline_after = \""+offlineAfter.String()+"\"", "") +
		job("slow", "manual", "retention = \"off\"\nverify = \"off\"\n[job.hooks]\nbefore = \"cat "+hold+"\"", src) +
		"\n[metrics]\ntextfile = \"{{dir}}/nightjar.prom\"\n")
	w.must(exitOK, "job", "run", "slow")
	p := w.startNJ("tick", "--json")

	passesOf := func() statusPasses {
		var s statusPasses
		decodeWhole(t, w.nj("status", "--json"), &s)
		return s
	}
	eventually(t, patience, 200*time.Millisecond, "the slow run is running", func() bool {
		runs := w.runsOf("slow")
		return len(runs) == 1 && runs[0].Status == "running"
	})
	first := passesOf()
	if len(first.Passes) != 1 || first.Passes[0].Mode != "tick" || first.Passes[0].PID != p.cmd.Process.Pid {
		t.Fatalf("passes while the tick runs: %+v, want the tick's (pid %d)", first.Passes, p.cmd.Process.Pid)
	}
	var held statusPasses
	eventually(t, patience, 250*time.Millisecond, "the held tick renews its pass past offline_after", func() bool {
		held = passesOf()
		return len(held.Passes) == 1 && held.Passes[0].At.Sub(first.Passes[0].At) > offlineAfter
	})
	if held.has("scheduler_offline", "", "") {
		t.Errorf("status calls the scheduler offline while a tick runs and renews its heartbeat: %v", held.codes())
	}
	if runs := w.runsOf("slow"); len(runs) != 1 || runs[0].Status != "running" {
		t.Fatalf("the held run is no longer running: %+v", runs)
	}
	// The textfile is rewritten with the renewals too (node_exporter
	// would otherwise show the first pass's time all along).
	text, err := os.ReadFile(w.path("nightjar.prom"))
	if err != nil {
		t.Fatalf("no textfile while the tick runs: %v", err)
	}
	lastPass, ok := gauge(families(t, text), "nightjar_scheduler_last_pass_timestamp_seconds")
	if firstAt := float64(first.Passes[0].At.UnixNano()) / 1e9; !ok || lastPass <= firstAt {
		t.Errorf("the textfile's last pass while the tick runs = %v (%v), want after the first record %v", lastPass, ok, firstAt)
	}

	// Release the hook: the backup runs and the tick ends.
	f, err := os.OpenFile(hold, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if res := p.wait(t, patience); res.Code != exitOK {
		t.Fatalf("the released tick: exit %d\n%s", res.Code, res)
	}
	runs := w.runsOf("slow")
	if len(runs) != 1 || runs[0].Status != "succeeded" {
		t.Errorf("after the release: %+v, want the run succeeded", runs)
	}
}
