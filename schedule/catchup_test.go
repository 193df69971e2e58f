package schedule

import (
	"testing"
	"time"
)

func TestCheckDue(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	daily := mustParse(t, "daily 02:00", berlin)
	at := func(text string) time.Time { return mustTime(t, text) }
	const grace = 5 * time.Minute
	cases := []struct {
		name      string
		s         Schedule
		slot, now string
		policy    CatchUp
		want      Due
	}{
		{"before the slot nothing is due", daily, "2026-06-10T02:00:00+02:00", "2026-06-10T01:59:00+02:00", CatchUpOnce,
			Due{Next: at("2026-06-10T02:00:00+02:00")}},
		{"on time", daily, "2026-06-10T02:00:00+02:00", "2026-06-10T02:00:40+02:00", CatchUpOnce,
			Due{Run: true, Slot: at("2026-06-10T02:00:00+02:00"), Next: at("2026-06-11T02:00:00+02:00")}},
		{"on time under skip", daily, "2026-06-10T02:00:00+02:00", "2026-06-10T02:04:00+02:00", CatchUpSkip,
			Due{Run: true, Slot: at("2026-06-10T02:00:00+02:00"), Next: at("2026-06-11T02:00:00+02:00")}},
		{"a late tick of a single slot is a catch-up", daily, "2026-06-10T02:00:00+02:00", "2026-06-10T09:00:00+02:00", CatchUpOnce,
			Due{Run: true, CatchUp: true, Missed: 1, Slot: at("2026-06-10T02:00:00+02:00"), Next: at("2026-06-11T02:00:00+02:00")}},
		{"off for three days, once: one run now", daily, "2026-06-10T02:00:00+02:00", "2026-06-13T10:00:00+02:00", CatchUpOnce,
			Due{Run: true, CatchUp: true, Missed: 4, Slot: at("2026-06-13T02:00:00+02:00"), Next: at("2026-06-14T02:00:00+02:00")}},
		{"off for three days, skip: wait for the next slot", daily, "2026-06-10T02:00:00+02:00", "2026-06-13T10:00:00+02:00", CatchUpSkip,
			Due{Missed: 4, Slot: at("2026-06-13T02:00:00+02:00"), Next: at("2026-06-14T02:00:00+02:00")}},
		{"back just in time for today's slot", daily, "2026-06-10T02:00:00+02:00", "2026-06-13T02:01:00+02:00", CatchUpSkip,
			Due{Run: true, Missed: 3, Slot: at("2026-06-13T02:00:00+02:00"), Next: at("2026-06-14T02:00:00+02:00")}},
		{"interval slots are counted in elapsed time", mustParse(t, "every 6h", nil), "2026-06-10T00:00:00Z", "2026-06-10T20:00:00Z", CatchUpOnce,
			Due{Run: true, CatchUp: true, Missed: 4, Slot: at("2026-06-10T18:00:00Z"), Next: at("2026-06-11T00:00:00Z")}},
		{"a new job waits for its first slot", daily, "", "2026-06-10T09:00:00+02:00", CatchUpOnce,
			Due{Next: at("2026-06-11T02:00:00+02:00")}},
		{"a manual job never comes due", Schedule{}, "", "2026-06-10T09:00:00Z", CatchUpOnce, Due{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var slot time.Time
			if c.slot != "" {
				slot = at(c.slot)
			}
			got := CheckDue(c.s, slot, at(c.now), grace, c.policy)
			if got.Run != c.want.Run || got.CatchUp != c.want.CatchUp || got.Missed != c.want.Missed ||
				!got.Slot.Equal(c.want.Slot) || !got.Next.Equal(c.want.Next) {
				t.Errorf("CheckDue(%s, slot %s, now %s, %s)\n got %+v\nwant %+v", c.s, c.slot, c.now, c.policy, got, c.want)
			}
		})
	}
}

func TestCheckDueDoesNotDrift(t *testing.T) {
	// A run that starts late, or a tick that comes late, never moves the
	// slots: the next slot is the schedule's, not start time plus a day.
	s := mustParse(t, "daily 02:00", nil)
	slot := mustTime(t, "2026-06-10T02:00:00Z")
	for _, now := range []string{"2026-06-10T02:00:00Z", "2026-06-10T02:47:13Z", "2026-06-10T23:59:59Z"} {
		if due := CheckDue(s, slot, mustTime(t, now), time.Hour, CatchUpOnce); !due.Next.Equal(mustTime(t, "2026-06-11T02:00:00Z")) {
			t.Errorf("at %s the next slot is %s, want 2026-06-11T02:00:00Z", now, due.Next)
		}
	}
}

func TestParseCatchUp(t *testing.T) {
	for text, want := range map[string]CatchUp{"": CatchUpOnce, "once": CatchUpOnce, "skip": CatchUpSkip} {
		if got, err := ParseCatchUp(text); err != nil || got != want {
			t.Errorf("ParseCatchUp(%q) = %q, %v", text, got, err)
		}
	}
	if _, err := ParseCatchUp("all"); err == nil || err.Error() != `catch-up policy "all" is not one of once, skip` {
		t.Errorf("ParseCatchUp(all) error %v", err)
	}
}
