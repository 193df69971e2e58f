package repo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend/memory"
)

// A verification record is stored in the repository, read back through a
// second opening, replaced whole by the next verification of the snapshot,
// and bounded in the problems it lists, on every backend.
func TestVerificationRecordRoundTrip(t *testing.T) {
	ctx := context.Background()
	backends := []struct {
		name string
		new  func(t *testing.T) repo.Backend
	}{
		{"local", newLocal},
		{"memory", func(*testing.T) repo.Backend { return memory.New() }},
	}
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.new(t)
			r, id := repoWithSnapshot(t, be)
			if got, err := r.Verifications(ctx); err != nil || len(got) != 0 {
				t.Fatalf("a new repository has verifications %v (%v)", got, err)
			}
			if _, err := r.Verification(ctx, id); !errors.Is(err, repo.ErrVerificationNotFound) {
				t.Fatalf("verification of an unverified snapshot: %v, want ErrVerificationNotFound", err)
			}

			if err := r.SaveVerification(ctx, &repo.Verification{Snapshot: id, OK: true}); err != nil {
				t.Fatal(err)
			}
			got, err := openRepo(t, be).Verifications(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if v := got[id]; len(got) != 1 || v == nil || !v.OK || v.Deep || !v.Time.Equal(pinTime) || v.Hostname == "" {
				t.Fatalf("verifications read back %+v, want one ok structural record of %s at %s with its host", got, id, pinTime)
			}

			var problems []string
			for i := range repo.MaxVerificationProblems + 5 {
				problems = append(problems, "data blob "+strings.Repeat("x", i+1)+": missing from the index")
			}
			deepAt := pinTime.Add(time.Hour)
			if err := r.SaveVerification(ctx, &repo.Verification{Snapshot: id, Deep: true, Time: deepAt, Problems: problems}); err != nil {
				t.Fatal(err)
			}
			v, err := r.Verification(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if v.OK || !v.Deep || !v.Time.Equal(deepAt) || len(v.Problems) != repo.MaxVerificationProblems || v.ProblemsTotal != len(problems) {
				t.Errorf("second record %+v: want it to replace the first, failed, deep, %d problems listed of %d", v, repo.MaxVerificationProblems, len(problems))
			}
			failed, err := r.VerifyFailed(ctx)
			if err != nil || !failed[id] || len(failed) != 1 {
				t.Errorf("verify failed %v (%v), want {%s}", failed, err, id)
			}
			if ids := names(t, be, repo.VerifyFile); !slices.Equal(ids, []string{id}) {
				t.Errorf("objects %v, want one record named by the snapshot", ids)
			}
		})
	}
}

// A record is refused for a snapshot that does not exist; a damaged record
// is an error naming it, counts as failed for retention (so damage never
// lets a snapshot go), and is a problem for check, while a record of a
// forgotten snapshot is only a warning.
func TestVerificationRecordDamageAndDangling(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r, id := repoWithSnapshot(t, be)
	if err := r.SaveVerification(ctx, &repo.Verification{Snapshot: "0123abcd", OK: true}); !errors.Is(err, repo.ErrSnapshotNotFound) {
		t.Errorf("record of a missing snapshot: %v, want ErrSnapshotNotFound", err)
	}
	if err := r.SaveVerification(ctx, &repo.Verification{Snapshot: id, OK: true}); err != nil {
		t.Fatal(err)
	}
	h := repo.Handle{Type: repo.VerifyFile, Name: id}
	good := load(t, be, h)

	t.Run("damaged", func(t *testing.T) {
		store(t, be, h, flipped(good, len(good)-3))
		t.Cleanup(func() { store(t, be, h, good) })
		_, err := r.Verifications(ctx)
		if !errors.Is(err, repo.ErrIntegrity) || !strings.Contains(err.Error(), id) {
			t.Errorf("verifications with a damaged record: %v, want an integrity error naming %s", err, id)
		}
		if failed, err := r.VerifyFailed(ctx); err != nil || !failed[id] {
			t.Errorf("verify failed %v (%v): a damaged record must count as failed", failed, err)
		}
		rep, err := r.Check(ctx, repo.CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if findProblem(rep, "verification "+id) == nil {
			t.Errorf("check problems %s: want the damaged verification %s", problemList(rep), id)
		}
	})
	t.Run("moved to another name", func(t *testing.T) {
		other := repo.Handle{Type: repo.VerifyFile, Name: "0123abcd"}
		store(t, be, other, good)
		t.Cleanup(func() {
			if err := be.Remove(ctx, other); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := r.Verification(ctx, other.Name); !errors.Is(err, repo.ErrIntegrity) {
			t.Errorf("a record copied to another snapshot's name: %v, want ErrIntegrity", err)
		}
	})
	t.Run("dangling", func(t *testing.T) {
		if err := be.Remove(ctx, repo.Handle{Type: repo.SnapshotFile, Name: id}); err != nil {
			t.Fatal(err)
		}
		rep, err := r.Check(ctx, repo.CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() || !slices.Equal(rep.DanglingVerifications, []string{id}) {
			t.Errorf("check: problems %s, dangling %v; want no problem and %s dangling", problemList(rep), rep.DanglingVerifications, id)
		}
	})
}

// Forget removes a snapshot's verification record with the snapshot, and
// check lists the failed ones.
func TestForgetRemovesVerificationRecords(t *testing.T) {
	ctx := context.Background()
	be := memory.New()
	r := repoWithSnapshots(t, be, 3)
	gone, kept := forgetSnapID(0, 0), forgetSnapID(0, 2)
	for _, id := range []string{gone, kept} {
		if err := r.SaveVerification(ctx, &repo.Verification{Snapshot: id}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := r.Check(ctx, repo.CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.VerifyFailed, []string{gone, kept}) {
		t.Errorf("check lists verify failed %v, want [%s %s]", rep.VerifyFailed, gone, kept)
	}
	if _, err := r.Forget(ctx, repo.ForgetOptions{Plan: forgetIDs(gone), GroupKey: byHost}); err != nil {
		t.Fatal(err)
	}
	if ids := names(t, be, repo.VerifyFile); !slices.Equal(ids, []string{kept}) {
		t.Errorf("verification records after forget: %v, want only %s", ids, kept)
	}
}

// A forget that dies at any of its writes, with victims that have
// verification records, leaves no record behind once the next forget has
// completed it: a record goes only with its snapshot, and never outlives
// it.
func TestForgetCrashLeavesNoVerificationRecord(t *testing.T) {
	ctx := context.Background()
	const perGroup = 3
	plan := repo.ForgetOptions{Plan: keepNewest(1), GroupKey: byHost}
	setup := func(t *testing.T) (*memory.Backend, []string) {
		mem := memory.New()
		r := repoWithSnapshots(t, mem, perGroup)
		all := names(t, mem, repo.SnapshotFile)
		for _, id := range all {
			if err := r.SaveVerification(ctx, &repo.Verification{Snapshot: id, OK: true}); err != nil {
				t.Fatal(err)
			}
		}
		return mem, all
	}
	// Writes of an uninterrupted forget: a mark, the record, the
	// verification record and the mark's removal for each of 4 victims.
	mem, _ := setup(t)
	counter := &crashing{Backend: mem}
	if _, err := openRepo(t, counter).Forget(ctx, plan); err != nil {
		t.Fatal(err)
	}
	counter.mu.Lock()
	writes := counter.n
	counter.mu.Unlock()
	if writes != 4*4 {
		t.Fatalf("an uninterrupted forget made %d writes, want 16 (4 victims, 4 writes each)", writes)
	}
	for at := 1; at <= writes; at++ {
		t.Run(fmt.Sprintf("dies at write %d", at), func(t *testing.T) {
			mem, _ := setup(t)
			be := &crashing{Backend: mem, at: at}
			if _, err := openRepo(t, be).Forget(ctx, plan); !errors.Is(err, errCrashed) {
				t.Fatalf("forget that dies: %v, want it to fail", err)
			}
			be.abandonLocks()
			if _, err := openRepo(t, mem).Forget(ctx, repo.ForgetOptions{Plan: forgetIDs(), GroupKey: byHost}); err != nil {
				t.Fatalf("the next forget: %v", err)
			}
			snaps := names(t, mem, repo.SnapshotFile)
			records := names(t, mem, repo.VerifyFile)
			slices.Sort(snaps)
			slices.Sort(records)
			if !slices.Equal(snaps, records) {
				t.Errorf("after the next forget: snapshots %v, verification records %v; want one record per snapshot", snaps, records)
			}
		})
	}
}
