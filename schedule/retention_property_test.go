package schedule

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// randomHistory makes a group of snapshots: bursts minutes apart, gaps of
// hours to months, a few equal times, pins, tags and failed verifications,
// starting the week before a daylight saving change in Europe.
func randomHistory(rng *rand.Rand, count int) []RetentionSnapshot {
	at := time.Date(2020, 10, 18, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.IntN(3*24)) * time.Hour)
	var out []RetentionSnapshot
	for i := range count {
		switch rng.IntN(6) {
		case 0: // same instant as the one before
		case 1, 2:
			at = at.Add(time.Duration(1+rng.IntN(50)) * time.Minute)
		case 3, 4:
			at = at.Add(time.Duration(1+rng.IntN(72)) * time.Hour)
		default:
			at = at.Add(time.Duration(1+rng.IntN(90)) * 24 * time.Hour)
		}
		s := RetentionSnapshot{ID: fmt.Sprintf("r%03d", rng.IntN(1000)) + fmt.Sprint(i), Time: at}
		s.Pinned = rng.IntN(15) == 0
		s.VerifyFailed = rng.IntN(12) == 0
		if rng.IntN(10) == 0 {
			s.Tags = []string{"keep"}
		}
		out = append(out, s)
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// bucketKeys are the calendar buckets written as text, a second way of
// computing what the count rules compare.
var bucketKeys = map[KeepReason]func(local time.Time) string{
	ReasonHourly:  func(l time.Time) string { return l.Format("2006-01-02 15") },
	ReasonDaily:   func(l time.Time) string { return l.Format("2006-01-02") },
	ReasonWeekly:  func(l time.Time) string { y, w := l.ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) },
	ReasonMonthly: func(l time.Time) string { return l.Format("2006-01") },
	ReasonYearly:  func(l time.Time) string { return l.Format("2006") },
}

// expectedByCount is what a counted rule keeps, worked out from the
// definition: the newest healthy snapshot of each of the newest n buckets,
// and the oldest healthy snapshot when there are fewer than n buckets.
func expectedByCount(snapshots []RetentionSnapshot, key func(time.Time) string, n int, loc *time.Location) map[string]bool {
	var healthy []RetentionSnapshot
	for _, s := range snapshots {
		if !s.VerifyFailed {
			healthy = append(healthy, s)
		}
	}
	slices.SortFunc(healthy, func(a, b RetentionSnapshot) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		if a.ID > b.ID {
			return -1
		}
		return 1
	})
	kept := map[string]bool{}
	seen := map[string]bool{}
	buckets := 0
	for _, s := range healthy {
		k := key(s.Time.In(loc))
		if seen[k] {
			continue
		}
		seen[k] = true
		buckets++
		if n == KeepUnlimited || buckets <= n {
			kept[s.ID] = true
		}
	}
	if len(healthy) > 0 && (n == KeepUnlimited || buckets < n) {
		kept[healthy[len(healthy)-1].ID] = true
	}
	return kept
}

func keptFor(decisions []RetentionDecision, reason KeepReason) map[string]bool {
	kept := map[string]bool{}
	for _, d := range decisions {
		if slices.Contains(d.Reasons, reason) {
			kept[d.Snapshot.ID] = true
		}
	}
	return kept
}

func TestPropertyRetention(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 2026))
	zones := []*time.Location{time.UTC, mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York"), mustZone(t, "Australia/Lord_Howe")}
	for round := range 300 {
		history := randomHistory(rng, 1+rng.IntN(60))
		loc := zones[round%len(zones)]
		n := []int{1, 2, 3, 7, 30, KeepUnlimited}[rng.IntN(6)]
		within := CalendarDuration{Months: rng.IntN(3), Days: rng.IntN(10), Hours: 1 + rng.IntN(30)}
		policy := RetentionPolicy{Last: n, Hourly: n, Daily: n, Weekly: n, Monthly: n, Yearly: n, Within: within, Tags: [][]string{{"keep"}}}
		name := fmt.Sprintf("round %d (%d snapshots, %s, count %d, within %s)", round, len(history), loc, n, within)

		decisions, err := DecideRetention(history, policy, loc)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]RetentionDecision{}
		for _, d := range decisions {
			byID[d.Snapshot.ID] = d
		}

		// Each counted rule keeps what its definition says, in the zone's calendar.
		for reason, key := range bucketKeys {
			if want, got := expectedByCount(history, key, n, loc), keptFor(decisions, reason); !reflect.DeepEqual(want, got) {
				t.Fatalf("%s: %s keeps %v, want %v", name, reason, got, want)
			}
		}

		// The order of the input does not matter.
		shuffled := slices.Clone(history)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		again, err := DecideRetention(shuffled, policy, loc)
		if err != nil || !reflect.DeepEqual(outcome(again), outcome(decisions)) {
			t.Fatalf("%s: the decisions depend on the order of the input", name)
		}

		// Failed verifications take no part: without them the others fare the same.
		var healthyOnly []RetentionSnapshot
		newest := RetentionSnapshot{}
		for _, s := range history {
			if !s.VerifyFailed {
				healthyOnly = append(healthyOnly, s)
				if newest.ID == "" || s.Time.After(newest.Time) || (s.Time.Equal(newest.Time) && s.ID > newest.ID) {
					newest = s
				}
			}
		}
		without, err := DecideRetention(healthyOnly, policy, loc)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range without {
			if with := byID[d.Snapshot.ID]; !reflect.DeepEqual(with.Reasons, d.Reasons) {
				t.Fatalf("%s: %s has %v beside failed snapshots and %v without them", name, d.Snapshot.ID, with.Reasons, d.Reasons)
			}
		}

		// What is always kept, and keep-within against its cut-off.
		var cutoff time.Time
		if newest.ID != "" {
			cutoff = within.Before(newest.Time.In(loc))
		}
		for _, d := range decisions {
			s := d.Snapshot
			switch {
			case s.Pinned && !slices.Contains(d.Reasons, ReasonPinned),
				s.VerifyFailed && !reflect.DeepEqual(d.Reasons, append(slices.Clip(pinnedReason(s)), ReasonVerifyFailed)),
				s.ID == newest.ID && !slices.Contains(d.Reasons, ReasonNewest),
				!s.VerifyFailed && slices.Contains(d.Reasons, ReasonWithin) != s.Time.After(cutoff),
				!s.VerifyFailed && slices.Contains(d.Reasons, ReasonTag) != slices.Contains(s.Tags, "keep"),
				d.Keep != (len(d.Reasons) > 0):
				t.Fatalf("%s: %s (pinned %v, failed %v, tags %v, %s) decided %v %v", name, s.ID, s.Pinned, s.VerifyFailed, s.Tags, s.Time, d.Keep, d.Reasons)
			}
		}
	}
}

func pinnedReason(s RetentionSnapshot) []KeepReason {
	if s.Pinned {
		return []KeepReason{ReasonPinned}
	}
	return nil
}
