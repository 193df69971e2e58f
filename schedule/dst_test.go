package schedule

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The transitions these cases cross, from the zone rules (checked against
// the zone database by TestTransitionsAreWhereTheCasesExpectThem):
//
//	Europe/Berlin      2026-03-29 01:00Z  02:00 CET  -> 03:00 CEST  (gap 02:00-03:00)
//	                   2026-10-25 01:00Z  03:00 CEST -> 02:00 CET   (02:00-03:00 twice)
//	America/New_York   2026-03-08 07:00Z  02:00 EST  -> 03:00 EDT
//	                   2026-11-01 06:00Z  02:00 EDT  -> 01:00 EST   (01:00-02:00 twice)
//	Australia/Lord_Howe 2026-04-04 15:00Z 02:00 +11    -> 01:30 +1030 (01:30-02:00 twice)
//	                   2026-10-03 15:30Z  02:00 +1030 -> 02:30 +11   (gap 02:00-02:30)
//	Australia/Sydney   2026-04-04 16:00Z  03:00 AEDT -> 02:00 AEST  (02:00-03:00 twice)
//	                   2026-10-03 16:00Z  02:00 AEST -> 03:00 AEDT  (gap 02:00-03:00)
//	America/Santiago   2026-09-06 04:00Z  00:00 -04  -> 01:00 -03   (the day starts at 01:00)
//	Pacific/Apia       2011-12-30 10:00Z  Thu 29 Dec 24:00 -10 -> Sat 31 Dec 00:00 +14 (30 Dec never happened)
func TestTransitionsAreWhereTheCasesExpectThem(t *testing.T) {
	for _, c := range []struct {
		zone, at                string
		offsetBefore, offsetNow int // seconds east of UTC
	}{
		{"Europe/Berlin", "2026-03-29T01:00:00Z", 3600, 7200},
		{"Europe/Berlin", "2026-10-25T01:00:00Z", 7200, 3600},
		{"America/New_York", "2026-03-08T07:00:00Z", -5 * 3600, -4 * 3600},
		{"America/New_York", "2026-11-01T06:00:00Z", -4 * 3600, -5 * 3600},
		{"Australia/Lord_Howe", "2026-04-04T15:00:00Z", 11 * 3600, 10*3600 + 1800},
		{"Australia/Lord_Howe", "2026-10-03T15:30:00Z", 10*3600 + 1800, 11 * 3600},
		{"Australia/Sydney", "2026-04-04T16:00:00Z", 11 * 3600, 10 * 3600},
		{"Australia/Sydney", "2026-10-03T16:00:00Z", 10 * 3600, 11 * 3600},
		{"America/Santiago", "2026-09-06T04:00:00Z", -4 * 3600, -3 * 3600},
		{"Pacific/Apia", "2011-12-30T10:00:00Z", -10 * 3600, 14 * 3600},
	} {
		loc := mustZone(t, c.zone)
		at := mustTime(t, c.at).In(loc)
		_, before := at.Add(-time.Second).Zone()
		_, now := at.Zone()
		if before != c.offsetBefore || now != c.offsetNow {
			t.Errorf("%s at %s: offset %d -> %d, the cases below expect %d -> %d", c.zone, c.at, before, now, c.offsetBefore, c.offsetNow)
		}
	}
}

func TestSlotsAcrossRealTransitions(t *testing.T) {
	cases := []struct {
		name, zone, spec, from string
		want                   []string // the next slots, UTC
	}{
		// Europe/Berlin, spring forward.
		{"berlin daily in the gap runs when it ends", "Europe/Berlin", "daily 02:30", "2026-03-28T00:00:00Z",
			[]string{"2026-03-28T01:30:00Z", "2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z"}},
		{"berlin hourly keeps its real-time cadence over the gap", "Europe/Berlin", "hourly :30", "2026-03-28T23:00:00Z",
			[]string{"2026-03-28T23:30:00Z", "2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z", "2026-03-29T02:30:00Z"}},
		{"berlin two anchored slots in one gap run once", "Europe/Berlin", "cron 0,30 2 * * *", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "2026-03-30T00:30:00Z"}},
		{"berlin gap slot and 03:00 slot share the instant and run once", "Europe/Berlin", "cron 0 1-3 * * *", "2026-03-28T12:00:00Z",
			[]string{"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T23:00:00Z"}},
		{"berlin repeating cron has no slots in the gap", "Europe/Berlin", "cron */30 * * * *", "2026-03-29T00:00:00Z",
			[]string{"2026-03-29T00:30:00Z", "2026-03-29T01:00:00Z", "2026-03-29T01:30:00Z"}},
		// Europe/Berlin, fall back.
		{"berlin daily in the overlap runs at the first", "Europe/Berlin", "daily 02:30", "2026-10-24T00:00:00Z",
			[]string{"2026-10-24T00:30:00Z", "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"}},
		{"berlin hourly runs in both repeated hours", "Europe/Berlin", "hourly :30", "2026-10-24T23:00:00Z",
			[]string{"2026-10-24T23:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:30:00Z"}},
		{"berlin anchored cron range skips the second 02:00", "Europe/Berlin", "cron 0 1-3 * * *", "2026-10-24T12:00:00Z",
			[]string{"2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z", "2026-10-26T00:00:00Z"}},
		{"berlin weekly on the change day", "Europe/Berlin", "weekly sun 02:30", "2026-10-18T12:00:00Z",
			[]string{"2026-10-25T00:30:00Z", "2026-11-01T01:30:00Z"}},
		// America/New_York.
		{"new york daily in the gap", "America/New_York", "daily 02:30", "2026-03-07T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"new york weekly on the change day", "America/New_York", "weekly sun 02:15", "2026-03-01T12:00:00Z",
			[]string{"2026-03-08T07:00:00Z", "2026-03-15T06:15:00Z"}},
		{"new york hourly over the gap", "America/New_York", "hourly :30", "2026-03-08T05:00:00Z",
			[]string{"2026-03-08T05:30:00Z", "2026-03-08T06:30:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:30:00Z"}},
		{"new york daily in the overlap", "America/New_York", "daily 01:30", "2026-10-31T12:00:00Z",
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}},
		{"new york hourly in the overlap", "America/New_York", "hourly :30", "2026-11-01T04:00:00Z",
			[]string{"2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:30:00Z"}},
		// Australia/Lord_Howe moves its clocks by 30 minutes.
		{"lord howe daily in the half-hour gap", "Australia/Lord_Howe", "daily 02:15", "2026-10-02T00:00:00Z",
			[]string{"2026-10-02T15:45:00Z", "2026-10-03T15:30:00Z", "2026-10-04T15:15:00Z"}},
		{"lord howe daily in the half-hour overlap", "Australia/Lord_Howe", "daily 01:45", "2026-04-03T00:00:00Z",
			[]string{"2026-04-03T14:45:00Z", "2026-04-04T14:45:00Z", "2026-04-05T15:15:00Z"}},
		{"lord howe hourly follows the local clock: :45 shows twice, 30 minutes apart", "Australia/Lord_Howe", "hourly :45", "2026-04-04T13:00:00Z",
			[]string{"2026-04-04T13:45:00Z", "2026-04-04T14:45:00Z", "2026-04-04T15:15:00Z", "2026-04-04T16:15:00Z"}},
		{"lord howe hourly: 02:15 does not exist, so one gap is 90 minutes", "Australia/Lord_Howe", "hourly :15", "2026-10-03T13:00:00Z",
			[]string{"2026-10-03T13:45:00Z", "2026-10-03T14:45:00Z", "2026-10-03T16:15:00Z"}},
		// South of the equator the changes come in April and October.
		{"sydney daily in the october gap", "Australia/Sydney", "daily 02:30", "2026-10-02T00:00:00Z",
			[]string{"2026-10-02T16:30:00Z", "2026-10-03T16:00:00Z", "2026-10-04T15:30:00Z"}},
		{"sydney daily in the april overlap", "Australia/Sydney", "daily 02:30", "2026-04-03T00:00:00Z",
			[]string{"2026-04-03T15:30:00Z", "2026-04-04T15:30:00Z", "2026-04-05T16:30:00Z"}},
		{"santiago midnight does not exist: the day starts at 01:00", "America/Santiago", "daily 00:30", "2026-09-04T12:00:00Z",
			[]string{"2026-09-05T04:30:00Z", "2026-09-06T04:00:00Z", "2026-09-07T03:30:00Z"}},
		// Pacific/Apia skipped Friday 2011-12-30 entirely.
		{"apia daily: the skipped day's run happens when the day ends", "Pacific/Apia", "daily 02:00", "2011-12-28T12:00:00Z",
			[]string{"2011-12-29T12:00:00Z", "2011-12-30T10:00:00Z", "2011-12-30T12:00:00Z", "2011-12-31T12:00:00Z"}},
		{"apia hourly keeps its cadence over the lost day", "Pacific/Apia", "hourly :30", "2011-12-30T08:00:00Z",
			[]string{"2011-12-30T08:30:00Z", "2011-12-30T09:30:00Z", "2011-12-30T10:30:00Z", "2011-12-30T11:30:00Z"}},
		{"apia weekly friday falls on the lost day", "Pacific/Apia", "weekly fri 12:00", "2011-12-20T00:00:00Z",
			[]string{"2011-12-23T22:00:00Z", "2011-12-30T10:00:00Z", "2012-01-05T22:00:00Z"}},
		{"apia monthly 30th falls on the lost day", "Pacific/Apia", "monthly 30 12:00", "2011-11-01T00:00:00Z",
			[]string{"2011-11-30T22:00:00Z", "2011-12-30T10:00:00Z", "2012-01-29T22:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mustParse(t, c.spec, mustZone(t, c.zone))
			got := slotsUTC(s, mustTime(t, c.from), len(c.want))
			if !slices.Equal(got, c.want) {
				t.Errorf("%s in %s after %s:\n got %v\nwant %v", c.spec, c.zone, c.from, got, c.want)
			}
		})
	}
}

func TestPreviewNotesExplainTransitions(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	cases := []struct {
		spec, from string
		slot       int
		want       string
	}{
		{"daily 02:30", "2026-03-28T12:00:00Z", 0, "02:30 does not exist on 2026-03-29 (the clocks go forward): runs when the gap ends"},
		{"daily 02:30", "2026-10-24T12:00:00Z", 0, "02:30 occurs twice on 2026-10-25 (the clocks go back): runs at the first only"},
		{"hourly :30", "2026-10-25T00:00:00Z", 0, "02:30 occurs twice on 2026-10-25 (the clocks go back): this is the first"},
		{"hourly :30", "2026-10-25T00:00:00Z", 1, "02:30 occurs twice on 2026-10-25 (the clocks go back): this is the second"},
		{"cron */20 * * * *", "2026-03-29T00:30:00Z", 1, "no run at 02:00 to 02:40 on 2026-03-29: the clocks go forward and that time does not exist"},
		{"cron 0 */2 * * *", "2026-03-28T23:30:00Z", 0, "no run at 02:00 on 2026-03-29: the clocks go forward and that time does not exist"},
		{"daily 02:30", "2026-06-01T12:00:00Z", 0, ""},
	}
	for _, c := range cases {
		slots := mustParse(t, c.spec, berlin).Preview(mustTime(t, c.from), c.slot+1)
		if got := slots[c.slot].Note; got != c.want {
			t.Errorf("%s after %s, slot %d: note %q, want %q", c.spec, c.from, c.slot, got, c.want)
		}
	}
}

func TestSlotsShowTheirLocalTime(t *testing.T) {
	s := mustParse(t, "daily 02:30", mustZone(t, "Europe/Berlin"))
	next, _ := s.Next(mustTime(t, "2026-03-28T12:00:00Z"))
	if got := next.Format("2006-01-02 15:04 MST"); !strings.HasPrefix(got, "2026-03-29 03:00 CEST") {
		t.Errorf("slot shown as %s, want 2026-03-29 03:00 CEST", got)
	}
}
