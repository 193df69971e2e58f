package repo_test

import (
	"context"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

// A check's progress ends in its last phase with every selected pack read,
// of a total that is the sizes of the packs selected: all of them with
// read data, none without.
func TestCheckProgress(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name      string
		opts      repo.CheckOptions
		wantPacks int64
	}{
		{name: "structural only", wantPacks: 0},
		{name: "read data", opts: repo.CheckOptions{ReadDataFraction: 1}, wantPacks: 3},
		{name: "a subset that holds every pack", opts: repo.CheckOptions{ReadDataSubset: repo.Subset{N: 1, M: 1}}, wantPacks: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prog := &repo.CheckProgress{}
			tc.opts.Progress = prog
			rep, err := f.open(t).Check(context.Background(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := prog.Read()
			if got.Phase != repo.CheckPhaseSnapshots {
				t.Errorf("phase %q after the check, want %q", got.Phase, repo.CheckPhaseSnapshots)
			}
			if got.PacksTotal != tc.wantPacks || got.PacksRead != tc.wantPacks {
				t.Errorf("%d of %d packs read, want %d of %d", got.PacksRead, got.PacksTotal, tc.wantPacks, tc.wantPacks)
			}
			if got.BytesRead != rep.BytesRead || got.BytesTotal != rep.BytesRead {
				t.Errorf("%d of %d bytes read; the report read %d", got.BytesRead, got.BytesTotal, rep.BytesRead)
			}
		})
	}
}
