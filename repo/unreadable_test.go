package repo_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// TestUnreadableSnapshotFiles puts stray files of each kind into
// snapshots/ and checks the one rule for the snapshot list (issue 16, item
// 2): each is skipped and reported once, the readable snapshot stays
// listed and "latest", check reports each, prune refuses naming one and
// deletes nothing, and forget removes one named by its ID.
func TestUnreadableSnapshotFiles(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	good := load(t, f.be, repo.Handle{Type: repo.SnapshotFile, Name: f.snap.ID})
	other := newFixture(t) // another repository, with another key
	foreign := load(t, other.be, repo.Handle{Type: repo.SnapshotFile, Name: other.snap.ID})
	strays := map[string][]byte{
		"a0000000000000000000000000000001": flipped(good, len(good)/2),
		"a0000000000000000000000000000002": good[:len(good)/2],
		"a0000000000000000000000000000003": {},
		"a0000000000000000000000000000004": []byte("garbage\x00\xff"),
		other.snap.ID:                      foreign,
	}
	for name, data := range strays {
		store(t, f.be, repo.Handle{Type: repo.SnapshotFile, Name: name}, data)
	}
	r := f.open(t)
	var reported []string
	r.ReportUnreadableSnapshots(func(list []repo.UnreadableSnapshot) {
		for _, u := range list {
			reported = append(reported, u.File())
		}
	})
	for range 2 {
		snaps, err := r.Snapshots(ctx)
		if err != nil {
			t.Fatalf("Snapshots with stray files: %v", err)
		}
		if len(snaps) != 1 || snaps[0].ID != f.snap.ID {
			t.Fatalf("Snapshots = %d records, want the one readable", len(snaps))
		}
		latest, err := r.FindSnapshot(ctx, "latest", nil)
		if err != nil || latest.ID != f.snap.ID {
			t.Fatalf("latest = %v, %v; want the readable snapshot", latest, err)
		}
	}
	slices.Sort(reported)
	if len(reported) != len(strays) {
		t.Errorf("reported %q, want each of the %d stray files once", reported, len(strays))
	}
	for name := range strays {
		if !slices.Contains(reported, "snapshots/"+name) {
			t.Errorf("snapshots/%s was not reported", name)
		}
	}

	rep := f.check(t, 0)
	for name := range strays {
		if findProblem(rep, "snapshot "+name) == nil {
			t.Errorf("check does not report snapshot %s:\n%s", name, problemList(rep))
		}
	}

	packs := names(t, f.be, repo.PackFile)
	slices.Sort(packs)
	_, err := r.Prune(ctx, repo.PruneOptions{})
	if !errors.Is(err, repo.ErrInvalidManifest) || !strings.Contains(err.Error(), "nightjar forget") {
		t.Errorf("prune with unreadable snapshot files: %v, want ErrInvalidManifest saying how to remove the file", err)
	}
	after := names(t, f.be, repo.PackFile)
	slices.Sort(after)
	if !slices.Equal(after, packs) {
		t.Errorf("prune that refused changed the packs: %d before, %d after", len(packs), len(after))
	}

	victims := make([]string, 0, len(strays))
	for name := range strays {
		victims = append(victims, name)
	}
	res, err := r.Forget(ctx, repo.ForgetOptions{
		Plan:     func([]*repo.Snapshot, map[string]bool) ([]string, error) { return victims, nil },
		GroupKey: func(s *repo.Snapshot) string { return s.Hostname },
	})
	if err != nil {
		t.Fatalf("forget the unreadable files by ID: %v", err)
	}
	if len(res.Forgotten) != len(strays) {
		t.Errorf("forgot %q, want the %d stray files", res.Forgotten, len(strays))
	}
	if got := names(t, f.be, repo.SnapshotFile); !slices.Equal(got, []string{f.snap.ID}) {
		t.Errorf("after forget snapshots/ holds %q", got)
	}
	if _, err := r.Prune(ctx, repo.PruneOptions{}); err != nil {
		t.Errorf("prune after the files were forgotten: %v", err)
	}
}
