package cmd

import (
	"bytes"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// runs show writes a run's times in the order they happen and its counters
// by name, the same every time (they were once ranged over from a map).
func TestPrintRunHasAFixedOrder(t *testing.T) {
	inZone(t, time.FixedZone("CEST", 2*60*60)) // human output shows local time
	at := time.Date(2026, 6, 10, 2, 0, 0, 0, time.UTC)
	r := pass.Run{ID: 4, Job: "daten", Kind: pass.KindBackup, Trigger: pass.TriggerSchedule, Attempt: 1, Status: pass.StatusSucceeded,
		ScheduledAt: at, StartedAt: at.Add(time.Minute), EndedAt: at.Add(time.Hour),
		Figures: pass.Figures{Counters: map[string]int64{"trees_checked": 2, "blobs_checked": 7, "packs_read": 1}}}
	want := `run 4 of job daten: succeeded
  kind backup, trigger schedule, attempt 1, missed slots before it: 0
  scheduled 2026-06-10 04:00:00
  started   2026-06-10 04:01:00
  ended     2026-06-10 05:00:00
  blobs_checked: 7
  packs_read: 1
  trees_checked: 2
`
	// Map order changes from one range to the next: many prints catch it.
	for i := range 20 {
		var out bytes.Buffer
		printRun(&printer{stdout: &out, stderr: &out}, r)
		if out.String() != want {
			t.Fatalf("print %d:\n%s\nwant:\n%s", i, out.String(), want)
		}
	}
}
