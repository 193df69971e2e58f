package schedule

import (
	"testing"
)

func TestCheckRPO(t *testing.T) {
	now := mustTime(t, "2026-01-15T12:00:00Z")
	cases := []struct {
		spec, zone, rpo string
		want            string // empty: accepted
	}{
		{"daily 02:00", "UTC", "4h", "the schedule runs only every 1 day and cannot meet the recovery point objective of 4 hours"},
		{"daily 02:00", "UTC", "24h", ""},
		// The night the clocks go back is 25 hours long.
		{"daily 02:00", "Europe/Berlin", "24h", "the schedule runs only every 25 hours (from 2026-10-25 02:00 CEST to 2026-10-26 02:00 CET) and cannot meet the recovery point objective of 1 day"},
		{"daily 02:00", "Europe/Berlin", "25h", ""},
		{"daily 02:00", "Europe/Berlin", "26h", ""},
		{"hourly :30", "Europe/Berlin", "1h", ""},
		{"cron */15 * * * *", "America/New_York", "15m", ""},
		// A cron step over hours follows the local clock, so the spring
		// gap stretches one interval.
		{"cron 0 */2 * * *", "Europe/Berlin", "2h", "the schedule runs only every 3 hours (from 2026-03-29 00:00 CET to 2026-03-29 04:00 CEST) and cannot meet the recovery point objective of 2 hours"},
		{"every 2h", "Europe/Berlin", "2h", ""},
		{"every 6h", "UTC", "4h", "the schedule runs only every 6 hours and cannot meet the recovery point objective of 4 hours"},
		{"weekly sat,sun 22:00", "UTC", "6d", ""},
		{"weekly sat,sun 22:00", "UTC", "5d", "the schedule runs only every 6 days (from 2026-01-18 22:00 UTC to 2026-01-24 22:00 UTC) and cannot meet the recovery point objective of 5 days"},
		{"monthly 31 03:00", "UTC", "31d", "the schedule runs only every 61 days (from 2026-03-31 03:00 UTC to 2026-05-31 03:00 UTC) and cannot meet the recovery point objective of 31 days"},
		{"monthly -1 03:00", "UTC", "31d", ""},
		{"cron 0 0 29 2 *", "UTC", "366d", "the schedule runs only every 1461 days and cannot meet the recovery point objective of 366 days"},
		{"cron * * * * *", "Europe/Berlin", "1m", ""},
		{"manual", "UTC", "4h", "the schedule runs only on request and cannot meet the recovery point objective of 4 hours"},
	}
	for _, c := range cases {
		s := mustParse(t, c.spec, mustZone(t, c.zone))
		rpo, err := ParseDuration(c.rpo)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckRPO(s, rpo, now)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("CheckRPO(%s in %s, %s): %v", c.spec, c.zone, c.rpo, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("CheckRPO(%s in %s, %s)\n got %v\nwant %s", c.spec, c.zone, c.rpo, err, c.want)
		}
	}
	if err := CheckRPO(mustParse(t, "daily 02:00", nil), 0, now); err == nil {
		t.Error("CheckRPO accepted a zero objective")
	}
}
