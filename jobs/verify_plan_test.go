package jobs

import (
	"slices"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/repo"
)

// PlanVerify verifies the job's unrecorded snapshots structurally and its
// newest deeply when the last deep verification of the job's snapshots is
// deep_verify_every old (0: always; negative: never).
func TestPlanVerify(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	snaps := []*repo.Snapshot{{ID: "old"}, {ID: "other-job"}, {ID: "mid"}, {ID: "new"}} // oldest first
	mine := func(s *repo.Snapshot) bool { return s.ID != "other-job" }
	deepAt := func(d time.Duration) map[string]*repo.Verification {
		return map[string]*repo.Verification{"old": {Snapshot: "old", Deep: true, OK: true, Time: now.Add(-d)}}
	}
	cases := []struct {
		name       string
		records    map[string]*repo.Verification
		verified   []string
		deepEvery  time.Duration
		structural []string
		deep       string
	}{
		{name: "nothing verified yet: all, the newest deeply", deepEvery: week, structural: []string{"old", "mid"}, deep: "new"},
		{name: "deep within the week", records: deepAt(6 * 24 * time.Hour), verified: []string{"old"}, deepEvery: week, structural: []string{"mid", "new"}},
		{name: "deep a week ago: due", records: deepAt(week), verified: []string{"old"}, deepEvery: week, structural: []string{"mid"}, deep: "new"},
		{name: "always deep, even when all are recorded", records: deepAt(time.Minute), verified: []string{"old", "mid", "new"}, deepEvery: 0, deep: "new"},
		{name: "never deep", deepEvery: -1, structural: []string{"old", "mid", "new"}},
		{name: "a damaged record counts as verified, not as deep", verified: []string{"old", "mid"}, deepEvery: week, deep: "new"},
		{name: "another job's deep verification does not count",
			records:  map[string]*repo.Verification{"other-job": {Snapshot: "other-job", Deep: true, OK: true, Time: now}},
			verified: []string{"other-job"}, deepEvery: week, structural: []string{"old", "mid"}, deep: "new"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			verified := map[string]bool{}
			for _, id := range tc.verified {
				verified[id] = true
			}
			got := PlanVerify(snaps, tc.records, verified, mine, tc.deepEvery, now)
			if !slices.Equal(got.Structural, tc.structural) || got.Deep != tc.deep {
				t.Errorf("plan %+v, want structural %v and deep %q", got, tc.structural, tc.deep)
			}
		})
	}
	if got := PlanVerify(nil, nil, nil, mine, 0, now); len(got.Structural) != 0 || got.Deep != "" {
		t.Errorf("a job without snapshots plans %+v, want nothing", got)
	}
}
