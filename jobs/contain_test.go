package jobs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// TestScheduledBackupSkipsUnreadableSnapshotFile: a stray file in
// snapshots/ does not stop a scheduled backup (issue 16, item 2); the run
// takes the newest readable snapshot as its parent, counts the file and
// names it among its skipped objects.
func TestScheduledBackupSkipsUnreadableSnapshotFile(t *testing.T) {
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("content"), 0o644); err != nil {
		t.Fatal(err)
	}
	be := memory.New()
	repotest.New(t, be)
	e := &Executor{
		Open: func(ctx context.Context, _ string) (*repo.Repository, error) {
			return repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
		},
		Sources: func(string) ([]SourceSpec, []string) { return []SourceSpec{{Path: src}}, nil },
	}
	run := func(id int64) pass.Result {
		t.Helper()
		res, err := e.Execute(context.Background(), pass.JobDef{Name: "j", Repository: "r"}, pass.Run{ID: id, Kind: pass.KindBackup}, func(pass.Progress) {})
		if err != nil {
			t.Fatalf("run %d: %v", id, err)
		}
		return res
	}
	first := run(1)
	if n := first.Figures.Counters[CounterSnapshotFilesUnreadable]; n != 0 {
		t.Fatalf("a sound repository has %d unreadable snapshot files", n)
	}
	const stray = "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"
	if err := be.Save(context.Background(), repo.Handle{Type: repo.SnapshotFile, Name: stray}, []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	second := run(2)
	if n := second.Figures.Counters[CounterSnapshotFilesUnreadable]; n != 1 {
		t.Errorf("counter %s = %d, want 1", CounterSnapshotFilesUnreadable, n)
	}
	named := false
	for _, s := range second.Figures.Skipped {
		named = named || s.Object == "snapshots/"+stray && strings.Contains(s.Reason, "unreadable")
	}
	if !named {
		t.Errorf("skipped objects %+v do not name snapshots/%s", second.Figures.Skipped, stray)
	}
	r, err := e.Open(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	snap, err := r.LoadSnapshot(context.Background(), second.Snapshots[0].SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Parent != first.Snapshots[0].SnapshotID {
		t.Errorf("parent %q, want the first run's snapshot %s", snap.Parent, first.Snapshots[0].SnapshotID)
	}
}
