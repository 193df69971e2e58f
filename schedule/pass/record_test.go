package pass_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// lockingExecutor takes the state database's write lock on a connection of
// its own, as another nightjar process writing would, and lets it go after
// hold, in the background, so that the pass finds the database busy when it
// records the result.
type lockingExecutor struct {
	t        *testing.T
	path     string
	hold     time.Duration
	released chan struct{}
}

// Execute closes released once the lock is gone, or at once when it could
// not take the lock.
func (e *lockingExecutor) Execute(ctx context.Context, _ pass.JobDef, _ pass.Run, _ func(pass.Progress)) (pass.Result, error) {
	other, err := sql.Open("sqlite", "file:"+e.path)
	if err != nil {
		close(e.released)
		return pass.Result{}, err
	}
	conn, err := other.Conn(ctx)
	if err == nil {
		if _, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			conn.Close()
		}
	}
	if err != nil {
		other.Close()
		close(e.released)
		return pass.Result{}, err
	}
	go func() {
		defer close(e.released)
		defer other.Close()
		defer conn.Close()
		time.Sleep(e.hold)
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			e.t.Errorf("release the write lock: %v", err)
		}
	}()
	return pass.Result{Figures: pass.Figures{Files: 1}}, nil
}

// A result written while another process holds the database's write lock
// for most of RecordTimeout is recorded once the lock is released: the run
// ends succeeded, and is not left running for orphan reclaim to fail.
func TestResultWaitsOutABusyDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a write lock for several seconds")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	now := func() time.Time { return time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC) }
	d, err := db.Open(ctx, path, now)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	exec := &lockingExecutor{t: t, path: path, hold: pass.RecordTimeout - 3*time.Second, released: make(chan struct{})}
	p := &pass.Pass{
		Store:    d,
		Executor: exec,
		Jobs:     map[string]pass.JobDef{"j": {Name: "j", Priority: "normal", Repository: "local"}},
		Now:      now,
		Runner:   "host-a:100",
	}
	if _, err := p.Run(ctx); err != nil { // creates the job
		t.Fatal(err)
	}
	queued, err := d.QueueRun(ctx, "j", pass.Run{Trigger: pass.TriggerManual}, db.Actor{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}

	sum, err := p.Run(ctx)
	if len(sum.Started) > 0 {
		<-exec.released // the lock holder reports to t
	}
	if err != nil {
		t.Fatalf("pass: %v", err)
	}
	if len(sum.Finished) != 1 || sum.Finished[0].Status != pass.StatusSucceeded {
		t.Errorf("pass finished %+v, want run %d succeeded", sum.Finished, queued.ID)
	}
	got, err := d.Run(ctx, queued.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != pass.StatusSucceeded {
		t.Errorf("run %d is %s (%s %s), want succeeded", got.ID, got.Status, got.ErrorCode, got.Message)
	}
}
