package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// retentionWorld is a repository in memory holding snapshots of two jobs,
// a and b, each of its own source, and a command-line backup of a's
// source, one hour apart.
type retentionWorld struct {
	r       *repo.Repository
	exec    *Executor
	jobs    map[string]pass.JobDef
	clock   time.Time
	sources map[string]string
}

func newRetentionWorld(t *testing.T) *retentionWorld {
	t.Helper()
	dir := t.TempDir()
	w := &retentionWorld{r: repotest.New(t, memory.New()), clock: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), sources: map[string]string{}, jobs: map[string]pass.JobDef{}}
	policy := schedule.RetentionPolicy{Last: 2}
	for _, name := range []string{"a", "b"} {
		src := filepath.Join(dir, name)
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "f"), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		w.sources[name] = src
		w.jobs[name] = pass.JobDef{Name: name, Repository: "r", Sources: []string{src}, Retention: pass.RetentionDef{Enabled: true, Policy: policy}}
	}
	w.exec = &Executor{
		Open:    func(context.Context, string) (*repo.Repository, error) { return w.r, nil },
		Sources: func(job string) ([]SourceSpec, []string) { return []SourceSpec{{Path: w.sources[job]}}, nil },
		Now:     w.now,
	}
	return w
}

func (w *retentionWorld) now() time.Time {
	w.clock = w.clock.Add(time.Hour)
	return w.clock
}

// backup runs a backup run of job and returns its snapshot's ID.
func (w *retentionWorld) backup(t *testing.T, job string, run int64) string {
	t.Helper()
	res, err := w.exec.Execute(context.Background(), w.jobs[job], pass.Run{ID: run, Kind: pass.KindBackup}, func(pass.Progress) {})
	if err != nil {
		t.Fatal(err)
	}
	return res.Snapshots[0].SnapshotID
}

func (w *retentionWorld) ids(t *testing.T) []string {
	t.Helper()
	snaps, err := w.r.Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range snaps {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// A retention run forgets exactly the policy's victims among the job's own
// snapshots: not a pinned one, not another job's, not a command-line
// backup of the job's source.
func TestRetentionRunForgetsOnlyTheJobsVictims(t *testing.T) {
	ctx := context.Background()
	w := newRetentionWorld(t)
	var a, b []string
	for run := int64(1); run <= 8; run += 2 {
		a = append(a, w.backup(t, "a", run))
		b = append(b, w.backup(t, "b", run+1))
	}
	out, err := backup.Backup(ctx, w.r, backup.Options{Paths: []string{w.sources["a"]}, Now: w.now})
	if err != nil {
		t.Fatal(err)
	}
	byHand := out.Snapshot.ID
	if _, err := w.r.Pin(ctx, a[0], "audit"); err != nil {
		t.Fatal(err)
	}

	var progress []pass.Progress
	res, err := w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 9, Kind: pass.KindRetention}, func(p pass.Progress) { progress = append(progress, p) })
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{a[0], a[2], a[3], byHand}, b...)
	slices.Sort(want)
	if got := w.ids(t); !slices.Equal(got, want) {
		t.Errorf("the repository holds %v, want %v (a's run 3 forgotten, and nothing else)", got, want)
	}
	wantCounters := map[string]int64{CounterSnapshotsKept: 3, CounterSnapshotsForgotten: 1, CounterKeptPinned: 0}
	for name, n := range wantCounters {
		if res.Figures.Counters[name] != n {
			t.Errorf("counter %s = %d, want %d (all: %v)", name, res.Figures.Counters[name], n, res.Figures.Counters)
		}
	}
	if len(progress) != 1 || progress[0].Current != "forget by keep 2 last snapshots" {
		t.Errorf("progress %+v, want one report naming the policy", progress)
	}

	// Again: nothing more to forget.
	res, err = w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 10, Kind: pass.KindRetention}, func(pass.Progress) {})
	if err != nil || res.Figures.Counters[CounterSnapshotsForgotten] != 0 {
		t.Errorf("second retention run: %v, counters %v; want nothing forgotten", err, res.Figures.Counters)
	}
}

// A retention run takes the exclusive lock only by trying: beside a backup
// it fails at once with class busy, which is retried, and forgets nothing.
func TestRetentionRunBesideABackupIsBusy(t *testing.T) {
	ctx := context.Background()
	w := newRetentionWorld(t)
	for run := int64(1); run <= 3; run++ {
		w.backup(t, "a", run)
	}
	before := w.ids(t)
	lock, err := w.r.Lock(ctx, false, "backup")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	_, err = w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 4, Kind: pass.KindRetention}, func(pass.Progress) {})
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Class != pass.ClassBusy || !pass.Retryable(ce.Class) {
		t.Fatalf("err = %v, want a retryable busy error", err)
	}
	if got := w.ids(t); !slices.Equal(got, before) {
		t.Errorf("a busy retention run changed the snapshots: %v, was %v", got, before)
	}
}

// A job whose retention is off has no retention runs; one that reaches the
// executor anyway (queued before the config changed) is a config error
// that touches nothing.
func TestRetentionRunOfAJobWithRetentionOff(t *testing.T) {
	w := newRetentionWorld(t)
	w.backup(t, "a", 1)
	w.backup(t, "a", 2)
	before := w.ids(t)
	def := w.jobs["a"]
	def.Retention = pass.RetentionDef{}
	_, err := w.exec.Execute(context.Background(), def, pass.Run{ID: 3, Kind: pass.KindRetention}, func(pass.Progress) {})
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Class != pass.ClassConfig {
		t.Errorf("err = %v, want a config error", err)
	}
	if got := w.ids(t); !slices.Equal(got, before) {
		t.Errorf("snapshots %v, was %v", got, before)
	}
}
