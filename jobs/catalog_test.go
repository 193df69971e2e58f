package jobs

import (
	"context"
	"errors"
	"slices"
	"testing"

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
