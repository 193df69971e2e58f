package backup

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/nightjar-backup/nightjar/repo"
)

func TestIDSorterYieldsSortedDistinctIDs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		runIDs int // small values force spilling to the temporary file
		ids    int
	}{
		{"in memory", 1 << 20, 5000},
		{"spilled in many runs", 700, 5000},
		{"one ID per run", 1, 50},
		{"empty", 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newIDSorter()
			s.runIDs = tc.runIDs
			defer s.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			want := map[repo.ID]bool{}
			var distinct []repo.ID
			for i := 0; i < tc.ids; i++ {
				var id repo.ID
				if len(distinct) > 0 && rng.IntN(4) == 0 {
					id = distinct[rng.IntN(len(distinct))] // a duplicate
				} else {
					for j := range id {
						id[j] = byte(rng.IntN(256))
					}
					distinct = append(distinct, id)
				}
				want[id] = true
				if err := s.Add(id); err != nil {
					t.Fatal(err)
				}
			}
			var got []repo.ID
			if err := s.Sorted(func(id repo.ID) error { got = append(got, id); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d IDs, want %d distinct", len(got), len(want))
			}
			for i, id := range got {
				if !want[id] {
					t.Fatalf("ID %s was never added", id.Short())
				}
				if i > 0 && bytes.Compare(got[i-1][:], id[:]) >= 0 {
					t.Fatalf("IDs %d and %d out of order or repeated", i-1, i)
				}
			}
		})
	}
}
