package db

import (
	"context"
	"testing"
	"time"
)

// A claim given back lets the next pass probe at once; a release comes
// too late to undo a newer claim or a probe recorded since.
func TestReleaseProbe(t *testing.T) {
	const every = 10 * time.Minute
	probe := func(at time.Time) func(t *testing.T, d *DB) {
		return func(t *testing.T, d *DB) {
			if err := d.RecordProbe(context.Background(), RepositoryProbe{Name: "disk", Location: "/srv/disk", At: at, Reachable: true}); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name        string
		before      func(t *testing.T, d *DB) // before the claim at t0
		after       func(t *testing.T, d *DB) // between the claim and its release
		next        time.Time                 // when the next pass claims
		wantClaimed bool
	}{
		{"a claim that recorded nothing is released", nil, nil, t0.Add(time.Minute), true},
		{"a released claim falls back to the probe before it", probe(t0.Add(-time.Hour)), nil, t0.Add(time.Minute), true},
		{"a probe recorded since keeps its claim", nil, probe(t0), t0.Add(time.Minute), false},
		{"a newer claim of another pass is kept", nil, func(t *testing.T, d *DB) {
			if ok, err := d.ClaimProbe(context.Background(), "disk", t0.Add(every), every); err != nil || !ok {
				t.Fatalf("the other pass's claim: %v, %v", ok, err)
			}
		}, t0.Add(every + time.Minute), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			d, _ := newDB(t)
			if tc.before != nil {
				tc.before(t, d)
			}
			if ok, err := d.ClaimProbe(ctx, "disk", t0, every); err != nil || !ok {
				t.Fatalf("claim at t0: %v, %v", ok, err)
			}
			if tc.after != nil {
				tc.after(t, d)
			}
			if err := d.ReleaseProbe(ctx, "disk", t0); err != nil {
				t.Fatal(err)
			}
			claimed, err := d.ClaimProbe(ctx, "disk", tc.next, every)
			if err != nil {
				t.Fatal(err)
			}
			if claimed != tc.wantClaimed {
				t.Errorf("claimed at %s after the release = %v, want %v", tc.next, claimed, tc.wantClaimed)
			}
		})
	}
}
