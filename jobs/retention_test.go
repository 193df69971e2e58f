package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/restore"
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
	return newRetentionWorldIn(t, memory.New())
}

// newRetentionWorldIn is newRetentionWorld with the repository in be.
func newRetentionWorldIn(t *testing.T, be repo.Backend) *retentionWorld {
	t.Helper()
	isolateTemp(t)
	dir := t.TempDir()
	w := &retentionWorld{r: repotest.New(t, be), clock: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), sources: map[string]string{}, jobs: map[string]pass.JobDef{}}
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
		Open:    func(ctx context.Context, _ string) (*repo.Repository, error) { return openAgain(ctx, w.r.Backend()) },
		Sources: func(job string) ([]SourceSpec, []string) { return []SourceSpec{{Path: w.sources[job]}}, nil },
		Now:     w.now,
	}
	return w
}

// openAgain opens the repository in be as a process of its own would
// (runs close theirs when they end).
func openAgain(ctx context.Context, be repo.Backend) (*repo.Repository, error) {
	return repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }})
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
	wantCounters := map[string]int64{CounterSnapshotsKept: 3, CounterSnapshotsForgotten: 1, CounterKeptPinned: 0, CounterPruned: 1}
	for name, n := range wantCounters {
		if res.Figures.Counters[name] != n {
			t.Errorf("counter %s = %d, want %d (all: %v)", name, res.Figures.Counters[name], n, res.Figures.Counters)
		}
	}
	if len(progress) < 2 || progress[0].Current != "forget by keep 2 last snapshots" || progress[1].Current != "prune with max-unused 10%" {
		t.Fatalf("progress %+v, want a report naming the policy, then one naming prune's limit", progress)
	}
	for _, p := range progress[2:] {
		if !strings.HasPrefix(p.Current, "prune: ") {
			t.Errorf("progress %q, want prune's phases after the forget", p.Current)
		}
	}

	// Again: nothing more to forget.
	res, err = w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 10, Kind: pass.KindRetention}, func(pass.Progress) {})
	if err != nil || res.Figures.Counters[CounterSnapshotsForgotten] != 0 {
		t.Errorf("second retention run: %v, counters %v; want nothing forgotten", err, res.Figures.Counters)
	}
}

// Snapshots that carry job a's tag but that a's backups on this host did
// not make are never a's retention's to forget: another host's backups of
// a's source under the same job name (two hosts sharing a repository and a
// config), and command-line backups tagged job:a of another folder, or of
// a's source with another folder beside it. Each of those groups holds
// three snapshots, so that a's policy (the two newest) would forget one of
// each if the run considered them.
func TestRetentionRunLeavesOtherHostsAndOtherPathsAlone(t *testing.T) {
	ctx := context.Background()
	w := newRetentionWorld(t)
	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "f"), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	tags := []string{JobTag("a")}
	var foreign []string
	for range 3 {
		for _, opts := range []backup.Options{
			{Paths: []string{w.sources["a"]}, Tags: tags, Hostname: "another-host"},
			{Paths: []string{other}, Tags: tags},
			{Paths: []string{w.sources["a"], other}, Tags: tags},
		} {
			opts.Now = w.now
			out, err := backup.Backup(ctx, w.r, opts)
			if err != nil {
				t.Fatal(err)
			}
			foreign = append(foreign, out.Snapshot.ID)
		}
	}
	var own []string
	for run := int64(1); run <= 3; run++ {
		own = append(own, w.backup(t, "a", run))
	}

	res, err := w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 4, Kind: pass.KindRetention}, func(pass.Progress) {})
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(foreign), own[1:]...)
	slices.Sort(want)
	if got := w.ids(t); !slices.Equal(got, want) {
		t.Errorf("the repository holds %v, want %v: only the job's oldest own snapshot %s forgotten", got, want, own[0])
	}
	if c := res.Figures.Counters; c[CounterSnapshotsKept] != 2 || c[CounterSnapshotsForgotten] != 1 {
		t.Errorf("counters %v, want 2 kept and 1 forgotten: the others are not the job's to count", c)
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

// retentionPruneWorld is a retention world on a local folder where job a
// has four snapshots of a file whose content changes each time: its
// policy (the two newest) lets two go, and with them data no other
// snapshot has.
func retentionPruneWorld(t *testing.T) (*retentionWorld, []string, map[string][]byte) {
	t.Helper()
	be, err := local.Create(filepath.Join(t.TempDir(), "repo"))
	if err != nil {
		t.Fatal(err)
	}
	w := newRetentionWorldIn(t, be)
	var ids []string
	contents := map[string][]byte{}
	for run := int64(1); run <= 4; run++ {
		data := make([]byte, 200<<10)
		rng := rand.NewChaCha8([32]byte{byte(run)})
		_, _ = rng.Read(data)
		if err := os.WriteFile(filepath.Join(w.sources["a"], "f"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		id := w.backup(t, "a", run)
		ids = append(ids, id)
		contents[id] = data
	}
	return w, ids, contents
}

// restoresAll proves every snapshot left restores the content backed up,
// and that reading every pack finds no problem.
func (w *retentionWorld) restoresAll(t *testing.T, contents map[string][]byte) {
	t.Helper()
	ctx := context.Background()
	r, err := openAgain(ctx, w.r.Backend())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	report, err := r.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
	if err != nil || !report.OK() {
		t.Fatalf("check reading every pack: %v, %+v", err, report)
	}
	for _, id := range w.ids(t) {
		snap, err := r.LoadSnapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		target := t.TempDir()
		if _, err := restore.Run(ctx, r, snap, restore.Options{Target: target}); err != nil {
			t.Fatalf("restore %s: %v", id, err)
		}
		got, err := os.ReadFile(filepath.Join(target, snap.Paths[0], "f"))
		if want, ok := contents[id]; err != nil || ok && !bytes.Equal(got, want) {
			t.Errorf("snapshot %s restores other bytes (%v)", id, err)
		}
	}
}

// A retention run that forgot snapshots prunes: the data only they had is
// deleted and counted, and every snapshot left, of this job and of the
// other, restores. A run that forgot nothing skips prune and says so; a
// retry prunes whatever it forgot.
func TestRetentionRunPrunes(t *testing.T) {
	ctx := context.Background()
	w, ids, contents := retentionPruneWorld(t)
	other := w.backup(t, "b", 5)
	var progress []string
	res, err := w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 6, Kind: pass.KindRetention, Trigger: pass.TriggerSchedule}, func(p pass.Progress) { progress = append(progress, p.Current) })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ids[2], ids[3], other}
	slices.Sort(want)
	if got := w.ids(t); !slices.Equal(got, want) {
		t.Fatalf("snapshots left %v, want %v", got, want)
	}
	c := res.Figures.Counters
	if c[CounterSnapshotsForgotten] != 2 || c[CounterPruned] != 1 || c[CounterPacksDeleted] == 0 || c[CounterBytesFreed] == 0 {
		t.Errorf("counters %v: want 2 forgotten, prune run, packs deleted and bytes freed", c)
	}
	if !slices.ContainsFunc(progress, func(p string) bool { return strings.HasPrefix(p, "prune: delete") }) {
		t.Errorf("progress %q names no prune phase delete", progress)
	}
	w.restoresAll(t, contents)

	progress = nil
	res, err = w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 7, Kind: pass.KindRetention, Trigger: pass.TriggerSchedule}, func(p pass.Progress) { progress = append(progress, p.Current) })
	if err != nil || res.Figures.Counters[CounterPruned] != 0 || res.Figures.Counters[CounterSnapshotsForgotten] != 0 {
		t.Errorf("a run with nothing to forget: %v, counters %v; want prune skipped", err, res.Figures.Counters)
	}
	if !slices.Contains(progress, "prune skipped: nothing was forgotten") {
		t.Errorf("progress %q does not say why prune was skipped", progress)
	}
	res, err = w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 8, Kind: pass.KindRetention, Trigger: pass.TriggerRetry, Attempt: 2}, func(pass.Progress) {})
	if err != nil || res.Figures.Counters[CounterPruned] != 1 || res.Figures.Counters[CounterPacksDeleted] != 0 {
		t.Errorf("a retry with nothing to forget: %v, counters %v; want a prune that finds nothing", err, res.Figures.Counters)
	}
	w.restoresAll(t, contents)
}

// A prune that finds the repository busy after the forget (a backup took
// its shared lock in between) fails with class busy, which is retried;
// the retry, with nothing left to forget, prunes.
func TestRetentionRunPruneBusyIsRetried(t *testing.T) {
	ctx := context.Background()
	w, _, contents := retentionPruneWorld(t)
	var lock *repo.Lock
	take := func(p pass.Progress) {
		if strings.HasPrefix(p.Current, "prune with") && lock == nil {
			var err error
			if lock, err = w.r.Lock(ctx, false, "backup"); err != nil {
				t.Errorf("take the backup's lock: %v", err)
			}
		}
	}
	_, err := w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 5, Kind: pass.KindRetention}, take)
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Class != pass.ClassBusy || !pass.Retryable(ce.Class) {
		t.Fatalf("err = %v, want a retryable busy error", err)
	}
	if lock == nil {
		t.Fatal("no prune was started")
	}
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}
	res, err := w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 6, Kind: pass.KindRetention, Trigger: pass.TriggerRetry, Attempt: 2}, func(pass.Progress) {})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Figures.Counters; c[CounterSnapshotsForgotten] != 0 || c[CounterPruned] != 1 || c[CounterPacksDeleted] == 0 {
		t.Errorf("the retry's counters %v: want nothing forgotten and the forgotten snapshots' packs deleted", c)
	}
	w.restoresAll(t, contents)
}

// A tree that cannot be read (of another job's snapshot) stops the prune of a retention run with class
// integrity and the code INVALID_MANIFEST, naming the snapshot, and not a
// pack is deleted.
func TestRetentionRunPruneStopsOnADamagedTree(t *testing.T) {
	ctx := context.Background()
	w, _, _ := retentionPruneWorld(t)
	packs := func() map[string]int64 {
		out := map[string]int64{}
		if err := w.r.Backend().List(ctx, repo.PackFile, func(name string, size int64) error { out[name] = size; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := packs()
	other := w.backup(t, "b", 5)
	// b's packs: its tiny file's data, and its trees; both damaged.
	for name := range packs() {
		if _, old := before[name]; old {
			continue
		}
		h := repo.Handle{Type: repo.PackFile, Name: name}
		data, err := w.r.Backend().Load(ctx, h, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 1
		if err := w.r.Backend().Save(ctx, h, data); err != nil {
			t.Fatal(err)
		}
	}
	before = packs()
	_, err := w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 6, Kind: pass.KindRetention}, func(pass.Progress) {})
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Class != pass.ClassIntegrity || ce.Code != CodeInvalidManifest || !strings.Contains(err.Error(), other) {
		t.Fatalf("err = %v, want class integrity, code %s, naming snapshot %s", err, CodeInvalidManifest, other)
	}
	if after := packs(); !maps.Equal(after, before) {
		t.Errorf("packs changed although prune stopped")
	}
}

// Snapshots the scheduler named run-N-SOURCE before snapshots recorded
// their run stay the job's: retention counts and forgets them, and a
// drill restores one when it is the newest of its source.
func TestOldRunIDsStayTheJobs(t *testing.T) {
	ctx := context.Background()
	w := newRetentionWorld(t)
	// legacy rewrites a snapshot of a run as the scheduler wrote it
	// before: under the name run-N-SOURCE, without the run field.
	legacy := func(id string, run int64) string {
		if err := w.r.LoadIndex(ctx); err != nil { // the run's repository wrote the tree
			t.Fatal(err)
		}
		s, err := w.r.LoadSnapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.r.Backend().Remove(ctx, repo.Handle{Type: repo.SnapshotFile, Name: id}); err != nil {
			t.Fatal(err)
		}
		s.ID, s.Run = fmt.Sprintf("run-%d-%s", run, strings.ReplaceAll(strings.Trim(w.sources["a"], "/"), "/", "_")), 0
		written, err := w.r.WriteSession(ctx, repo.WriteOptions{}, func(context.Context, *repo.Writer) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if err := written.SaveSnapshot(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	old1 := legacy(w.backup(t, "a", 1), 1)
	old2 := legacy(w.backup(t, "a", 2), 2)

	res, err := w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 3, Kind: pass.KindDrill}, func(pass.Progress) {})
	if err != nil || res.Figures.Counters[CounterSnapshotsChecked] != 1 {
		t.Fatalf("drill of the old snapshots: %v, counters %v; want the newest, %s, restored", err, res.Figures.Counters, old2)
	}

	newer := w.backup(t, "a", 4)
	res, err = w.exec.Execute(ctx, w.jobs["a"], pass.Run{ID: 5, Kind: pass.KindRetention}, func(pass.Progress) {})
	if err != nil || res.Figures.Counters[CounterSnapshotsKept] != 2 || res.Figures.Counters[CounterSnapshotsForgotten] != 1 {
		t.Fatalf("retention: %v, counters %v; want 2 kept and the oldest forgotten", err, res.Figures.Counters)
	}
	if got, want := w.ids(t), []string{old2, newer}; !slices.Equal(got, sortedCopy(want)) {
		t.Errorf("the repository holds %v, want %v (%s forgotten)", got, sortedCopy(want), old1)
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
