package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/local"
	"github.com/nightjar-backup/nightjar/repo/repotest"
	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// verifyWorld is a repository in a local folder, opened anew for each run
// as the scheduler does, with job a backing up one source.
type verifyWorld struct {
	dir   string
	job   pass.JobDef
	exec  *Executor
	clock time.Time
}

func newVerifyWorld(t *testing.T, deepEvery time.Duration) *verifyWorld {
	t.Helper()
	isolateTemp(t)
	w := &verifyWorld{dir: filepath.Join(t.TempDir(), "repo"), clock: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	be, err := local.Create(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	repotest.New(t, be)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a.txt": "alpha", "sub/b.txt": strings.Repeat("bravo ", 1000)} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.job = pass.JobDef{Name: "a", Repository: "r", Sources: []string{src},
		Verify:    pass.VerifyDef{Enabled: true, DeepEvery: deepEvery},
		Retention: pass.RetentionDef{Enabled: true, Policy: schedule.RetentionPolicy{Last: 1}}}
	w.exec = &Executor{
		Open:    func(ctx context.Context, _ string) (*repo.Repository, error) { return w.open(ctx) },
		Sources: func(string) ([]SourceSpec, []string) { return []SourceSpec{{Path: src}}, nil },
		Now:     func() time.Time { return w.clock },
	}
	return w
}

func (w *verifyWorld) open(ctx context.Context) (*repo.Repository, error) {
	be, err := local.Open(w.dir)
	if err != nil {
		return nil, err
	}
	return repo.Open(ctx, be, repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }, Now: func() time.Time { return w.clock }})
}

// run executes a run of kind at the world's clock, an hour after the last.
func (w *verifyWorld) run(t *testing.T, kind string, id int64) (pass.Result, error) {
	t.Helper()
	w.clock = w.clock.Add(time.Hour)
	return w.exec.Execute(context.Background(), w.job, pass.Run{ID: id, Kind: kind}, func(pass.Progress) {})
}

func (w *verifyWorld) records(t *testing.T) map[string]*repo.Verification {
	t.Helper()
	r, err := w.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	recs, err := r.Verifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// corruptDataOf flips a byte inside every data blob of the file at rel in
// snapshot id: the packs stay where the index says, so only a deep
// verification sees it.
func (w *verifyWorld) corruptDataOf(t *testing.T, id, rel string) {
	t.Helper()
	ctx := context.Background()
	r, err := w.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.LoadIndex(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := r.LoadSnapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var blobs []repo.ID
	err = r.Walk(ctx, s.Tree, repo.WalkOptions{}, repo.WalkVisitor{Node: func(e *repo.WalkEntry) error {
		if strings.HasSuffix(e.Path, rel) {
			blobs = append(blobs, e.Node.Content...)
		}
		return nil
	}})
	if err != nil || len(blobs) == 0 {
		t.Fatalf("find %s in snapshot %s: %v (%d blobs)", rel, id, err, len(blobs))
	}
	for _, id := range blobs {
		b, _ := r.Index().Lookup(id)
		name := filepath.Join(w.dir, "data", b.Pack.String()[:2], b.Pack.String())
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		data[b.Offset+b.Length/2] ^= 1
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// A verify run checks the job's snapshots that have no record yet and
// records each verdict in the repository; deeply only when the job's last
// deep verification is older than deep_verify_every. A corrupted chunk
// passes the structural verification and fails a deep one, which records
// verify_failed (surviving any state database), fails the run with class
// integrity and code VERIFY_FAILED naming the snapshot and path, and
// makes retention keep the snapshot without counting it.
func TestVerifyRunRecordsVerdicts(t *testing.T) {
	w := newVerifyWorld(t, 7*24*time.Hour)
	first := mustBackup(t, w, 1)

	res, err := w.run(t, pass.KindVerify, 2)
	if err != nil {
		t.Fatalf("first verify: %v", err)
	}
	c := res.Figures.Counters
	if c[CounterSnapshotsVerified] != 1 || c[CounterDeep] != 1 || c[CounterBytesRead] == 0 || c[CounterTreesChecked] < 3 || c[CounterBlobsChecked] < 2 {
		t.Errorf("first verify counters %v: want 1 snapshot, deep (none before), bytes read, every tree and blob", c)
	}
	if v := w.records(t)[first]; v == nil || !v.OK || !v.Deep {
		t.Fatalf("record of %s: %+v, want ok and deep", first, v)
	}

	// A second backup within a week: structural only, and the first
	// snapshot (already recorded) is not checked again.
	second := mustBackup(t, w, 3)
	res, err = w.run(t, pass.KindVerify, 4)
	if err != nil {
		t.Fatalf("second verify: %v", err)
	}
	if c := res.Figures.Counters; c[CounterSnapshotsVerified] != 1 || c[CounterDeep] != 0 || c[CounterBytesRead] != 0 {
		t.Errorf("second verify counters %v: want 1 snapshot, structural", c)
	}
	if v := w.records(t)[second]; v == nil || !v.OK || v.Deep {
		t.Fatalf("record of %s: %+v, want ok and structural", second, v)
	}

	// Damage to the data of the newest snapshot: a structural
	// verification cannot see it ...
	third := mustBackup(t, w, 5)
	w.corruptDataOf(t, third, "sub/b.txt")
	if _, err := w.run(t, pass.KindVerify, 6); err != nil {
		t.Fatalf("structural verify of a snapshot with a corrupted chunk: %v, want it to pass", err)
	}
	// ... a deep one, a week later, does.
	w.clock = w.clock.Add(7 * 24 * time.Hour)
	res, err = w.run(t, pass.KindVerify, 7)
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Class != pass.ClassIntegrity || ce.Code != CodeVerifyFailed ||
		!strings.Contains(err.Error(), third) || !strings.Contains(err.Error(), "sub/b.txt") {
		t.Fatalf("deep verify of a corrupted chunk: %v, want class integrity, code %s, naming %s and sub/b.txt", err, CodeVerifyFailed, third)
	}
	if c := res.Figures.Counters; c[CounterDeep] != 1 || c[CounterSnapshotsFailed] != 1 {
		t.Errorf("failed verify counters %v: want deep, one failed", c)
	}
	recs := w.records(t)
	if v := recs[third]; v == nil || v.OK || !v.Deep || len(v.Problems) == 0 || !strings.Contains(v.Problems[0], "sub/b.txt") {
		t.Fatalf("record of %s: %+v, want failed, deep, naming sub/b.txt", third, v)
	}
	if !recs[first].OK || !recs[second].OK {
		t.Errorf("records of the sound snapshots changed: %+v %+v", recs[first], recs[second])
	}

	// Retention (keep the last 1) keeps the failed snapshot without
	// counting it: the newest sound one stays too.
	if _, err := w.run(t, pass.KindRetention, 8); err != nil {
		t.Fatalf("retention: %v", err)
	}
	r, err := w.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ids, err := r.ListSnapshotIDs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	want := []string{second, third}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("after retention the repository holds %v, want %v: the failed snapshot kept and not counted", ids, want)
	}
	if recs := w.records(t); recs[first] != nil {
		t.Errorf("the forgotten snapshot's record is still there: %+v", recs[first])
	}
}

// deep_verify_every = 0 makes every verify run deep, and a snapshot whose
// verify was lost (a crash between the backup and its verify) is verified
// by the next one.
func TestVerifyRunHealsAMissedVerify(t *testing.T) {
	w := newVerifyWorld(t, 0)
	first := mustBackup(t, w, 1)
	second := mustBackup(t, w, 2) // no verify between: it was lost
	res, err := w.run(t, pass.KindVerify, 3)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Figures.Counters; c[CounterSnapshotsVerified] != 2 || c[CounterDeep] != 1 {
		t.Errorf("counters %v: want both snapshots verified, the newest deeply", c)
	}
	recs := w.records(t)
	if recs[first] == nil || recs[first].Deep || recs[second] == nil || !recs[second].Deep {
		t.Errorf("records %+v: want %s structural and %s deep", recs, first, second)
	}
	res, err = w.run(t, pass.KindVerify, 4)
	if err != nil || res.Figures.Counters[CounterSnapshotsVerified] != 1 || res.Figures.Counters[CounterDeep] != 1 {
		t.Errorf("a verify with nothing new and deep_verify_every 0: %v, counters %v; want the newest verified deeply again", err, res.Figures.Counters)
	}
}

// A verify beside a forget's exclusive lock is busy (retried) and records
// nothing.
func TestVerifyRunBesideAnExclusiveLockIsBusy(t *testing.T) {
	w := newVerifyWorld(t, 0)
	mustBackup(t, w, 1)
	r, err := w.open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lock, err := r.Lock(context.Background(), true, "forget")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	_, err = w.run(t, pass.KindVerify, 2)
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Class != pass.ClassBusy {
		t.Errorf("verify beside an exclusive lock: %v, want class busy", err)
	}
	if recs := w.records(t); len(recs) != 0 {
		t.Errorf("records %v written by a busy verify", recs)
	}
}

func mustBackup(t *testing.T, w *verifyWorld, run int64) string {
	t.Helper()
	res, err := w.run(t, pass.KindBackup, run)
	if err != nil {
		t.Fatal(err)
	}
	return res.Snapshots[0].SnapshotID
}

// A verify run judges the repository itself: it opens it with the
// executor's Fresh opener (cmd's opener without the local cache), while a
// backup opens it with Open.
func TestVerifyRunOpensTheRepositoryFresh(t *testing.T) {
	w := newVerifyWorld(t, 7*24*time.Hour)
	var opened, fresh int
	open := w.exec.Open
	w.exec.Open = func(ctx context.Context, name string) (*repo.Repository, error) {
		opened++
		return open(ctx, name)
	}
	w.exec.Fresh = func(ctx context.Context, name string) (*repo.Repository, error) {
		fresh++
		return open(ctx, name)
	}
	mustBackup(t, w, 1)
	if opened != 1 || fresh != 0 {
		t.Fatalf("a backup opened the repository %d times with Open and %d with Fresh, want 1 and 0", opened, fresh)
	}
	if _, err := w.run(t, pass.KindVerify, 2); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if opened != 1 || fresh != 1 {
		t.Errorf("a verify run opened the repository %d more times with Open and %d with Fresh, want 0 and 1", opened-1, fresh)
	}
}
