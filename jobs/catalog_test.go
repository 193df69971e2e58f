package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/backendtest"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// ReadSnapshots tells a damaged record from a readable one, and a storage
// that fails from both: an unreachable repository must never pass for
// damaged records.
func TestReadSnapshots(t *testing.T) {
	ctx := context.Background()
	be := backendtest.NewFaulty(memory.New())
	w := newRetentionWorld(t)
	w.r = repotest.New(t, be)
	good := w.backup(t, "a", 1)
	if err := be.Save(ctx, repo.Handle{Type: repo.SnapshotFile, Name: "damaged"}, []byte("not a snapshot")); err != nil {
		t.Fatal(err)
	}
	snaps, unreadable, err := ReadSnapshots(ctx, w.r)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 1 || snaps[0].ID != good {
		t.Errorf("readable snapshots %v, want only %s", snaps, good)
	}
	if len(unreadable) != 1 || unreadable[0].ID != "damaged" || !errors.Is(unreadable[0].Err, repo.ErrIntegrity) {
		t.Errorf("unreadable %+v, want the damaged record with an integrity error", unreadable)
	}
	be.FailLoad(repo.SnapshotFile, 1)
	if _, _, err := ReadSnapshots(ctx, w.r); err == nil {
		t.Error("a failing load was not an error")
	}
}

func TestJobOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		tags []string
		want string
	}{
		{"a job's tag", []string{"daily", "job:web"}, "web"},
		{"no job tag", []string{"daily"}, ""},
		{"an empty job name", []string{"job:"}, ""},
		{"no tags", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := JobOf(tc.tags); got != tc.want {
				t.Errorf("JobOf(%q) = %q, want %q", tc.tags, got, tc.want)
			}
		})
	}
}

// A retention run syncs the catalog before it forgets and again after, so
// that the catalog shows what the run left: the first sync sees the victim,
// the second does not.
func TestRetentionRunSyncsTheCatalogAroundIt(t *testing.T) {
	ctx := context.Background()
	w := newRetentionWorld(t)
	var made []string
	for run := int64(1); run <= 3; run++ {
		made = append(made, w.backup(t, "a", run))
	}
	var seen [][]string
	w.exec.Catalog = func(ctx context.Context, name string, r *repo.Repository) {
		if name != "r" {
			t.Errorf("catalog of repository %q synced, want r", name)
		}
		snaps, _, err := ReadSnapshots(ctx, r)
		if err != nil {
			t.Error(err)
		}
		var ids []string
		for _, s := range snaps {
			ids = append(ids, s.ID)
		}
		seen = append(seen, ids)
	}
	if _, err := w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 4, Kind: pass.KindRetention}, func(pass.Progress) {}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || !slices.Equal(seen[0], made) || !slices.Equal(seen[1], made[1:]) {
		t.Errorf("the catalog syncs saw %v, want %v before and %v after", seen, made, made[1:])
	}
}

// RunOf reads the run a snapshot records, and the run in the ID of a
// snapshot the scheduler wrote before snapshots recorded it.
func TestRunOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap repo.Snapshot
		want int64
	}{
		{"a recorded run", repo.Snapshot{ID: "0123456789abcdef0123456789abcdef", Run: 12}, 12},
		{"a command-line snapshot", repo.Snapshot{ID: "0123456789abcdef0123456789abcdef"}, 0},
		{"an old scheduler ID", repo.Snapshot{ID: "run-4-tmp_demo_sample"}, 4},
		{"an old ID of a source named by digits", repo.Snapshot{ID: "run-17-2026"}, 17},
		{"the recorded run wins over the ID", repo.Snapshot{ID: "run-4-data", Run: 9}, 9},
		{"run- without a number", repo.Snapshot{ID: "run-daily-data"}, 0},
		{"run- with a number and no source", repo.Snapshot{ID: "run-4"}, 0},
		{"run zero", repo.Snapshot{ID: "run-0-data"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RunOf(&tc.snap); got != tc.want {
				t.Errorf("RunOf(%s, run %d) = %d, want %d", tc.snap.ID, tc.snap.Run, got, tc.want)
			}
		})
	}
}

// RunSnapshot finds a run's snapshot of a source by what the snapshot
// records, under any ID, and tells a run from another of the same number
// (a state database started again) by the run's times.
func TestRunSnapshot(t *testing.T) {
	at := func(h int) time.Time { return time.Date(2026, 12, 1, h, 0, 0, 0, time.UTC) }
	snap := func(id string, run int64, path string, h int) *repo.Snapshot {
		return &repo.Snapshot{ID: id, Run: run, Paths: []string{path}, Time: at(h)}
	}
	oldDB := snap("aaaa", 7, "/data", 1)
	legacy := snap("run-8-data", 0, "/data", 2)
	ours := snap("bbbb", 7, "/data", 5)
	later := snap("cccc", 7, "/data", 9) // another run 7, after this one ended
	other := snap("dddd", 7, "/etc", 5)
	snaps := []*repo.Snapshot{oldDB, legacy, ours, later, other}
	run7 := pass.Run{ID: 7, StartedAt: at(4), EndedAt: at(6)}
	for _, tc := range []struct {
		name   string
		snaps  []*repo.Snapshot
		run    pass.Run
		source string
		want   *repo.Snapshot
	}{
		{"the one made during the run", snaps, run7, "/data", ours},
		{"another source of the run", snaps, run7, "/etc", other},
		{"an old scheduler ID", snaps, pass.Run{ID: 8, StartedAt: at(2), EndedAt: at(2)}, "/data", legacy},
		{"none made during the run", []*repo.Snapshot{oldDB, later}, run7, "/data", nil},
		{"a run still running", snaps, pass.Run{ID: 7, StartedAt: at(8)}, "/data", later},
		{"a run that never started", snaps, pass.Run{ID: 7}, "/data", nil},
		{"a source the run did not back up", snaps, run7, "/home", nil},
		{"a run that made none", snaps, pass.Run{ID: 99, StartedAt: at(4)}, "/data", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RunSnapshot(tc.snaps, tc.run, tc.source); got != tc.want {
				t.Errorf("RunSnapshot(run %d, %s) = %v, want %v", tc.run.ID, tc.source, got, tc.want)
			}
		})
	}
}

// The snapshots a backup run wrote are found again by the run they record,
// one per source, with the figures of their summaries; a source without
// one makes the finding incomplete (with what was found), and another
// run, the same run number of another host or of another job, and a
// lookup that cannot open the repository find nothing; after and
// on_success hooks, which did not end, are skipped entries.
func TestRunSnapshotsFindsWhatARunWrote(t *testing.T) {
	dir := t.TempDir()
	var sources []string
	for _, name := range []string{"a", "b"} {
		src := filepath.Join(dir, name)
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, "f"), []byte("content of "+name), 0o644); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, src)
	}
	r := repotest.New(t, memory.New())
	executor := func(paths ...string) *Executor {
		open := func(context.Context, string) (*repo.Repository, error) { return r, nil }
		return &Executor{
			Open: open, Lookup: open,
			Sources: func(string) ([]SourceSpec, []string) {
				var specs []SourceSpec
				for _, p := range paths {
					specs = append(specs, SourceSpec{Path: p})
				}
				return specs, nil
			},
		}
	}
	job := pass.JobDef{Name: "j", Repository: "r"}
	run := pass.Run{ID: 21, Kind: pass.KindBackup, StartedAt: time.Now().Add(-time.Minute)}
	ctx := context.Background()
	written, err := executor(sources...).Execute(ctx, job, run, func(pass.Progress) {})
	if err != nil {
		t.Fatal(err)
	}

	found, complete, err := executor(sources...).RunSnapshots(ctx, job, run)
	if err != nil || !complete {
		t.Fatalf("RunSnapshots: complete %v, %v; want every source found", complete, err)
	}
	if len(found.Snapshots) != 2 || found.Snapshots[0] != written.Snapshots[0] || found.Snapshots[1] != written.Snapshots[1] {
		t.Errorf("found %+v, want what the run wrote %+v", found.Snapshots, written.Snapshots)
	}
	if found.Figures.Files != written.Figures.Files || found.Figures.BytesRead != written.Figures.BytesRead {
		t.Errorf("figures %+v, want the run's %+v", found.Figures, written.Figures)
	}

	partial, complete, err := executor(append(sources, filepath.Join(dir, "c"))...).RunSnapshots(ctx, job, run)
	if err != nil || complete {
		t.Errorf("with a source the run wrote nothing for: complete %v, %v; want incomplete", complete, err)
	}
	if len(partial.Snapshots) != 2 || partial.Snapshots[0] != written.Snapshots[0] || partial.Snapshots[1] != written.Snapshots[1] {
		t.Errorf("incomplete: found %+v, want the two the run wrote %+v", partial.Snapshots, written.Snapshots)
	}
	other := run
	other.ID = 22
	otherHost := run
	otherHost.Runner = "elsewhere.invalid:4242"
	for name, c := range map[string]struct {
		job pass.JobDef
		run pass.Run
	}{"another run": {job, other}, "another host": {job, otherHost}, "another job": {pass.JobDef{Name: "k", Repository: "r"}, run}} {
		found, complete, err := executor(sources...).RunSnapshots(ctx, c.job, c.run)
		if err != nil || complete || len(found.Snapshots) != 0 {
			t.Errorf("%s: found %+v, complete %v, %v; want nothing found", name, found.Snapshots, complete, err)
		}
	}

	noLookup := executor(sources...)
	noLookup.Lookup = nil
	if _, _, err := noLookup.RunSnapshots(ctx, job, run); err == nil {
		t.Error("RunSnapshots without a lookup opener: no error; want one (the run opener may create a repository)")
	}

	hooked := executor(sources...)
	hooked.Hooks = func(string) Hooks { return Hooks{After: []string{"true"}, OnSuccess: []string{"true"}} }
	found, complete, err = hooked.RunSnapshots(ctx, job, run)
	if err != nil || !complete {
		t.Fatalf("with hooks: complete %v, %v; want every source found", complete, err)
	}
	var skipped []string
	for _, s := range found.Figures.Skipped {
		skipped = append(skipped, s.Object)
	}
	if want := []string{"hook after", "hook on_success"}; !slices.Equal(skipped, want) {
		t.Errorf("with hooks: skipped %q, want %q", skipped, want)
	}
}
