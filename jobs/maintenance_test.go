package jobs

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// pruneDef is the maintenance of the retention world's repository.
var pruneDef = pass.JobDef{Name: pass.PruneJobName("r"), Kind: pass.KindPrune, Repository: "r"}

// backupsOfNewData backs up job a n times, with new random data each time.
func backupsOfNewData(t *testing.T, w *retentionWorld, n int) {
	t.Helper()
	for run := int64(1); run <= int64(n); run++ {
		data := make([]byte, 64<<10)
		_, _ = rand.Read(data)
		if err := os.WriteFile(filepath.Join(w.sources["a"], "f"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		w.backup(t, "a", run)
	}
}

// prune runs a prune run on a Repository of its own, opened on the
// world's backend, as the scheduler's opener gives each run, with a clock
// past the leftover age: the packs the backups wrote are old enough to
// delete or repack, as for a prune that runs hours after them.
func (w *retentionWorld) prune(t *testing.T, progress func(pass.Progress)) (pass.Result, error) {
	t.Helper()
	later := func() time.Time { return time.Now().Add(repo.DefaultLeftoverAge + time.Hour) }
	w.exec.Open = func(ctx context.Context, _ string) (*repo.Repository, error) {
		return repo.Open(ctx, w.r.Backend(), repo.OpenOptions{Password: func() ([]byte, error) { return []byte("pw"), nil }, Now: later})
	}
	return w.exec.Execute(context.Background(), pruneDef, pass.Run{ID: 100, Kind: pass.KindPrune, Job: pruneDef.Name}, progress)
}

// A prune run frees the data of the snapshots a retention run forgot,
// reports what it did as counters and its phases as progress, keeps every
// remaining snapshot whole, and a second one finds nothing to free.
func TestPruneRunFreesTheDataOfForgottenSnapshots(t *testing.T) {
	ctx := context.Background()
	w := newRetentionWorld(t)
	backupsOfNewData(t, w, 4)
	// Forget as a retention run does, without the prune it runs after.
	plan := RetentionPlan{Policy: w.jobs["a"].Retention.Policy, GroupBy: schedule.DefaultGroupBy, Zone: time.UTC}
	decide := func(snaps []*repo.Snapshot, pinned map[string]bool) ([]string, error) {
		_, victims, err := plan.Decide(snaps, pinned)
		return victims, err
	}
	if _, err := w.r.Forget(ctx, repo.ForgetOptions{Plan: decide, GroupKey: plan.GroupKey}); err != nil {
		t.Fatal(err)
	}
	var phases []string
	res, err := w.prune(t, func(p pass.Progress) { phases = append(phases, p.Current) })
	if err != nil {
		t.Fatal(err)
	}
	c := res.Figures.Counters
	if c[CounterPacksDeleted]+c[CounterPacksRepacked] == 0 || c[CounterBytesFreed] <= 2*(64<<10) || c[CounterSnapshotsRemaining] != 2 || c[CounterBlobsUsed] == 0 {
		t.Errorf("counters %v: want the packs of the two forgotten snapshots' data freed (over 128 KiB) and 2 snapshots remaining", c)
	}
	if !slices.ContainsFunc(phases, func(p string) bool { return strings.HasPrefix(p, "prune: delete") }) {
		t.Errorf("progress %q, want the phases reported, delete among them", phases)
	}
	after, err := w.exec.Open(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	report, err := after.Check(ctx, repo.CheckOptions{ReadDataFraction: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !report.OK() {
		t.Errorf("check after the prune: %+v", report)
	}

	res, err = w.prune(t, func(pass.Progress) {})
	if err != nil || res.Figures.Counters[CounterBytesFreed] != 0 {
		t.Errorf("second prune: %v, counters %v; want nothing more freed", err, res.Figures.Counters)
	}
}

// A prune run takes the exclusive lock only by trying: beside a backup it
// fails at once with class busy, which is retried, and deletes nothing.
func TestPruneRunBesideABackupIsBusy(t *testing.T) {
	ctx := context.Background()
	w := newRetentionWorld(t)
	backupsOfNewData(t, w, 3)
	before := objects(t, w.r)
	lock, err := w.r.Lock(ctx, false, "backup")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	_, err = w.prune(t, func(pass.Progress) {})
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Class != pass.ClassBusy || !pass.Retryable(ce.Class) {
		t.Fatalf("err = %v, want a retryable busy error", err)
	}
	if after := objects(t, w.r); !slices.Equal(after, before) {
		t.Errorf("a busy prune changed the repository: %v, was %v", after, before)
	}
}

// A snapshot that cannot be read stops a prune run with class integrity
// and code INVALID_MANIFEST, naming the snapshot, and nothing is deleted.
func TestPruneRunStopsAtAnInvalidManifest(t *testing.T) {
	ctx := context.Background()
	w := newRetentionWorld(t)
	backupsOfNewData(t, w, 3)
	ids := w.ids(t)
	if err := w.r.Backend().Save(ctx, repo.Handle{Type: repo.SnapshotFile, Name: ids[0]}, []byte("not a snapshot")); err != nil {
		t.Fatal(err)
	}
	before := objects(t, w.r)
	_, err := w.prune(t, func(pass.Progress) {})
	var ce *pass.ClassError
	if !errors.As(err, &ce) || ce.Class != pass.ClassIntegrity || ce.Code != CodeInvalidManifest || pass.Retryable(ce.Class) {
		t.Fatalf("err = %v, want class integrity, code %s, not retried", err, CodeInvalidManifest)
	}
	if after := objects(t, w.r); !slices.Equal(after, before) {
		t.Errorf("a prune stopped by a damaged snapshot changed the repository: %v, was %v", after, before)
	}
}

// objects lists every object of the repository's backend but its locks.
func objects(t *testing.T, r *repo.Repository) []string {
	t.Helper()
	var out []string
	for _, ft := range []repo.FileType{repo.SnapshotFile, repo.PackFile, repo.IndexFile} {
		err := r.Backend().List(context.Background(), ft, func(name string, _ int64) error {
			out = append(out, string(ft)+"/"+name)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}
