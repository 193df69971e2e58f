package db

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Environment of a claiming helper process (see TestMain).
const (
	helperEnv  = "NIGHTJAR_DB_CLAIM_HELPER" // the database path
	helperDir  = "NIGHTJAR_DB_CLAIM_DIR"    // where to say ready and wait for go
	helperName = "NIGHTJAR_DB_CLAIM_NAME"
	claimers   = 4
	dueJobs    = 10
)

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		if err := claimHelper(path, os.Getenv(helperDir), os.Getenv(helperName)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// claimNow is the instant the claimers claim at: every job is due.
var claimNow = t0.Add(90 * time.Minute)

// setUpDueJobs makes a database with dueJobs due jobs.
func setUpDueJobs(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	clk := newClock()
	d := openAt(t, path, clk)
	var defs []pass.JobDef
	for i := range dueJobs {
		defs = append(defs, def(t, fmt.Sprintf("job%02d", i), "hourly"))
	}
	syncJobs(t, d, clk, defs...)
	return path
}

// checkClaims checks that every due job was claimed exactly once, and that
// the database agrees.
func checkClaims(t *testing.T, path string, claims [][]pass.Run) {
	t.Helper()
	seen := map[int64]int{}
	total := 0
	for i, runs := range claims {
		for _, r := range runs {
			seen[r.JobID]++
			total++
			if seen[r.JobID] > 1 {
				t.Errorf("job %s claimed twice (again by claimer %d)", r.Job, i)
			}
		}
	}
	if total != dueJobs || len(seen) != dueJobs {
		t.Errorf("%d runs claimed for %d jobs, want %d for %d", total, len(seen), dueJobs, dueJobs)
	}
	d := openAt(t, path, newClock())
	if n := count(t, d, `SELECT count(*) FROM runs WHERE status = 'queued'`); n != dueJobs {
		t.Errorf("%d queued runs in the database, want %d", n, dueJobs)
	}
	if n := count(t, d, `SELECT count(DISTINCT job_id) FROM runs`); n != dueJobs {
		t.Errorf("runs for %d jobs in the database, want %d", n, dueJobs)
	}
	if n := count(t, d, `SELECT count(*) FROM jobs WHERE next_run_at <= ?`, claimNow.UnixNano()); n != 0 {
		t.Errorf("%d jobs still due after the claims", n)
	}
}

// TestClaimDueConcurrentDBs: four *DB on one file claim at the same moment;
// every due job is claimed exactly once.
func TestClaimDueConcurrentDBs(t *testing.T) {
	path := setUpDueJobs(t)
	dbs := make([]*DB, claimers)
	for i := range dbs {
		dbs[i] = openAt(t, path, newClock())
	}
	claims := make([][]pass.Run, claimers)
	errs := make([]error, claimers)
	var ready, done sync.WaitGroup
	gate := make(chan struct{})
	for i, d := range dbs {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-gate
			claims[i], errs[i] = d.ClaimDue(context.Background(), claimNow, scheduledPlan)
		}()
	}
	ready.Wait()
	close(gate)
	done.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claimer %d: %v", i, err)
		}
	}
	checkClaims(t, path, claims)
}

// TestClaimDueConcurrentProcesses: four processes (this test binary run
// again as a helper) claim at the same moment; every due job is claimed
// exactly once.
func TestClaimDueConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := setUpDueJobs(t)
	dir := t.TempDir()
	cmds := make([]*exec.Cmd, claimers)
	outs := make([]*bytes.Buffer, claimers)
	stderrs := make([]*bytes.Buffer, claimers)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+path, helperDir+"="+dir, helperName+"="+strconv.Itoa(i))
		outs[i], stderrs[i] = new(bytes.Buffer), new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = outs[i], stderrs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	defer func() {
		for _, cmd := range cmds {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		}
	}()
	// Wait until every helper has opened the database, then let them go at once.
	deadline := time.Now().Add(20 * time.Second)
	for i := range claimers {
		for {
			if _, err := os.Stat(filepath.Join(dir, "ready"+strconv.Itoa(i))); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("helper %d never got ready: %s", i, stderrs[i])
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	claims := make([][]pass.Run, claimers)
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v: %s", i, err, stderrs[i])
		}
		if err := json.Unmarshal(outs[i].Bytes(), &claims[i]); err != nil {
			t.Fatalf("helper %d: %v: %s", i, err, outs[i])
		}
	}
	checkClaims(t, path, claims)
}

// claimHelper is a helper process: it opens the database, says it is
// ready, waits for the go, claims and prints its runs as JSON.
func claimHelper(path, dir, name string) error {
	clk := newClock()
	d, err := Open(context.Background(), path, clk.Now)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := os.WriteFile(filepath.Join(dir, "ready"+name), nil, 0o600); err != nil {
		return err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no go after 20s")
		}
		time.Sleep(time.Millisecond)
	}
	runs, err := d.ClaimDue(context.Background(), claimNow, scheduledPlan)
	if err != nil {
		return err
	}
	if runs == nil {
		runs = []pass.Run{}
	}
	return json.NewEncoder(os.Stdout).Encode(runs)
}
