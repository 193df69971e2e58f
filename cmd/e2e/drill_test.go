//go:build linux

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// drillRun is a run as drill --json and runs --json print it.
type drillRun struct {
	ID         int64            `json:"id"`
	Job        string           `json:"job"`
	Kind       string           `json:"kind"`
	Status     string           `json:"status"`
	ErrorClass string           `json:"error_class"`
	ErrorCode  string           `json:"error_code"`
	Message    string           `json:"message"`
	Counters   map[string]int64 `json:"counters"`
}

// drillConfig writes a config with the env's repository and the jobs
// nightly (of src) and idle (of idle, never backed up), and returns its
// path.
func (e *env) drillConfig(src, idle string) string {
	e.t.Helper()
	cfg := filepath.Join(e.dir, "nightjar.toml")
	text := fmt.Sprintf(`[scheduler]
state = %q

[repository.main]
path = %q
password_file = %q
create_if_missing = true
`, filepath.Join(e.dir, "state", "state.db"), e.repo, e.pwFile)
	for _, j := range [][2]string{{"nightly", src}, {"idle", idle}} {
		text += fmt.Sprintf("\n[[job]]\nname = %q\nrepository = \"main\"\nschedule = \"manual\"\nretention = \"off\"\nverify = \"off\"\n  [[job.source]]\n  path = %q\n", j[0], j[1])
	}
	writeFile(e.t, cfg, text, 0o600)
	return cfg
}

// nightjar drill JOB restores the job's newest snapshot and compares it
// with the repository, as a run of kind drill recorded in runs: after a
// backup it succeeds, with every file and byte counted, and leaves nothing
// in its folder; after a data pack is damaged it fails with class
// integrity and DRILL_UNREADABLE naming the file; a job that never made a
// snapshot fails with NO_SNAPSHOT.
func TestDrill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src, idle := filepath.Join(e.dir, "src"), filepath.Join(e.dir, "idle")
	big := make([]byte, 3<<20)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	mkdirAll(t, filepath.Join(src, "docs"), 0o755)
	mkdirAll(t, idle, 0o755)
	writeFile(t, filepath.Join(src, "docs", "letter.txt"), "dear operator\n", 0o644)
	if err := os.WriteFile(filepath.Join(src, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := e.drillConfig(src, idle)
	drills := filepath.Join(e.dir, "drills")
	mkdirAll(t, drills, 0o755)
	withDir := []string{"NIGHTJAR_DRILL_DIR=" + drills}
	drill := func(want int, job string) drillRun {
		t.Helper()
		res := e.runEnv(withDir, "drill", job, "--json", "--config", cfg)
		if res.Code != want {
			t.Fatalf("want exit %d\n%s", want, res)
		}
		var r drillRun
		decodeJSON(t, res, &r)
		if left, _ := os.ReadDir(drills); len(left) > 0 {
			t.Errorf("the drill left %s in its folder", left[0].Name())
		}
		return r
	}

	e.expect(exitOK, "job", "run", "nightly", "--wait", "--config", cfg)
	ok := drill(exitOK, "nightly")
	wantCounters := map[string]int64{"snapshots_checked": 1, "files_checked": 2, "bytes_checked": int64(len(big) + len("dear operator\n")), "mismatches": 0, "abandoned_removed": 0}
	if ok.Kind != "drill" || ok.Status != "succeeded" || fmt.Sprint(ok.Counters) != fmt.Sprint(wantCounters) {
		t.Errorf("drill run %+v, want a succeeded run of kind drill with counters %v", ok, wantCounters)
	}
	var runs []drillRun
	decodeJSON(t, e.expect(exitOK, "runs", "--json", "--job", "nightly", "--config", cfg), &runs)
	if len(runs) != 2 || runs[0].ID != ok.ID || runs[0].Kind != "drill" || runs[0].Status != "succeeded" || runs[1].Kind != "backup" {
		t.Errorf("runs of nightly %+v, want the backup and then the drill, succeeded", runs)
	}

	none := drill(exitFailure, "idle")
	if none.Status != "failed" || none.ErrorCode != "NO_SNAPSHOT" {
		t.Errorf("drill of a job without snapshots: %+v, want failed with NO_SNAPSHOT", none)
	}

	pack := largest(t, objects(t, filepath.Join(e.repo, "data")))
	fi, err := os.Stat(pack)
	if err != nil {
		t.Fatal(err)
	}
	flipByte(t, pack, fi.Size()/2)
	bad := drill(exitFailure, "nightly")
	if bad.Status != "failed" || bad.ErrorClass != "integrity" || bad.ErrorCode != "DRILL_UNREADABLE" || !strings.Contains(bad.Message, "big.bin") {
		t.Errorf("drill of a damaged repository: %+v, want failed, integrity, DRILL_UNREADABLE naming big.bin", bad)
	}
}
