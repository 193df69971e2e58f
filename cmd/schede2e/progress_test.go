//go:build linux

package schede2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// progressRec is what runs show --json prints of a run's progress.
type progressRec struct {
	ID         int64  `json:"id"`
	Status     string `json:"status"`
	Files      int64  `json:"files"`
	BytesRead  int64  `json:"bytes_read"`
	BytesAdded int64  `json:"bytes_added"`
	Current    string `json:"current"`
}

// A scheduled backup records its progress with its heartbeat: while the
// tick's backup is held (its big file read at 32 KiB/s, which would take
// two minutes), runs show and job show in other processes say how many
// files and bytes it has read so far, and in which source. The test ends
// the run by cancelling it.
func TestRunningRunShowsItsProgress(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.path("data")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if err := os.WriteFile(filepath.Join(src, "a"+strconv.Itoa(i)+".txt"), []byte(strings.Repeat("x", 1000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeRandomFile(t, filepath.Join(src, "zz.bin"), 5, 4<<20)
	w.writeConfig(header("heartbeat = \"1s\"\nstale_after = \"3s\"", "") + job("slow", "manual", `bandwidth = "32KiB"`, src))
	w.must(exitOK, "job", "run", "slow")
	runID := w.runsOf("slow")[0].ID
	id := strconv.FormatInt(runID, 10)

	tick := w.startNJ("tick", "--json")
	var rec progressRec
	eventually(t, patience, 200*time.Millisecond, "runs show says the small files are read and the big one is being read", func() bool {
		select {
		case <-tick.done:
			t.Fatalf("the tick ended while its backup should be held\n%s", tick.wait(t, patience))
		default:
		}
		rec = progressRec{}
		decodeWhole(t, w.must(exitOK, "runs", "show", id, "--json"), &rec)
		return rec.Status == "running" && rec.Files == 5 && rec.BytesRead > 5000
	})
	if rec.Current != "source "+src {
		t.Errorf("runs show --json: current %q, want %q", rec.Current, "source "+src)
	}

	line := regexp.MustCompile(`running: 5 files, [0-9.]+ (B|KiB|MiB) read, [0-9.]+ (B|KiB|MiB) added so far \(source ` + regexp.QuoteMeta(src) + `\)`)
	if res := w.must(exitOK, "runs", "show", id); !line.MatchString(res.Stdout) {
		t.Errorf("runs show of the running run does not say how far it got\n%s", res)
	}
	if res := w.must(exitOK, "job", "show", "slow"); !strings.Contains(res.Stdout, "active run: "+id+", ") || !line.MatchString(res.Stdout) {
		t.Errorf("job show of the job does not say how far its running run got\n%s", res)
	}

	w.must(exitOK, "runs", "cancel", id)
	tick.wait(t, patience)
	if got := runByID(t, w.runs(), runID); got.Status != "cancelled" {
		t.Errorf("the run ended %s after its cancellation, want cancelled", got.Status)
	}
}
