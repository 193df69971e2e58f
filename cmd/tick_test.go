package cmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Runs the pass gave up leave a trace in tick's (and serve's) output: a
// warning on stderr in both modes, and the lost list of --json.
func TestReportPassShowsLostRuns(t *testing.T) {
	sum := pass.Summary{Lost: []pass.LostRun{{
		Run:    pass.Run{ID: 7, Job: "daten", Kind: pass.KindBackup, Status: pass.StatusRunning},
		Reason: pass.LostReclaimed,
	}}}
	for _, c := range []struct {
		name    string
		jsonOut bool
	}{{"text", false}, {"json", true}} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			p := &printer{stdout: &out, stderr: &errOut, jsonOut: c.jsonOut}
			if err := reportPass(p, sum); err != nil {
				t.Fatal(err)
			}
			if want := "run 7 of job daten was given up, nothing was recorded for it: " + pass.LostReclaimed; !strings.Contains(errOut.String(), want) {
				t.Errorf("stderr %q lacks %q", errOut.String(), want)
			}
			if !c.jsonOut {
				if strings.Contains(out.String(), "nothing was due") {
					t.Errorf("a pass that lost a run says nothing was due: %q", out.String())
				}
				return
			}
			var got struct {
				Lost []struct {
					ID         int64  `json:"id"`
					Job        string `json:"job"`
					Kind       string `json:"kind"`
					LostReason string `json:"lost_reason"`
				} `json:"lost"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("tick --json: %v\n%s", err, out.String())
			}
			if len(got.Lost) != 1 || got.Lost[0].ID != 7 || got.Lost[0].Job != "daten" || got.Lost[0].Kind != "backup" || got.Lost[0].LostReason != pass.LostReclaimed {
				t.Errorf("lost = %+v", got.Lost)
			}
		})
	}
}
