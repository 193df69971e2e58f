package schedule

import (
	"fmt"
	"testing"
	"time"
)

// propertyZones have daylight saving changes of one hour, in both
// hemispheres, at 01:00 UTC, 02:00 local and midnight; Lord_Howe's half-hour
// change and Apia's lost day are covered by the table tests and by the
// properties that do not depend on whole-hour changes.
var propertyZones = []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Sydney", "America/Santiago"}

var propertySpecs = []string{
	"daily 02:30", "daily 00:00", "daily 23:59", "every 3 days 02:00",
	"weekly sat,sun 22:00", "every 2 weeks mon 01:00", "monthly 1,-1 03:00", "monthly 31 02:30",
	"cron 30 2 * * *", "cron 0 1-3 * * *", "cron 0,30 2 * * *", "cron 0 0 13 * 5",
	"hourly :30", "hourly :00", "every 2 hours :15", "every 5 hours :00",
	"cron */15 9-17 * * mon-fri", "cron 30 * * * *", "cron */10 * * * *", "cron 0 */2 * * *",
	"every 6h", "every 90m",
}

// forEachYear runs check on every property spec in every property zone
// over the local year 2026, and in Pacific/Apia over 2011.
func forEachYear(t *testing.T, check func(t *testing.T, s Schedule, slots []time.Time)) {
	years := []struct {
		zone string
		year int
	}{{"Pacific/Apia", 2011}, {"Australia/Lord_Howe", 2026}}
	for _, z := range propertyZones {
		years = append(years, struct {
			zone string
			year int
		}{z, 2026})
	}
	for _, y := range years {
		loc := mustZone(t, y.zone)
		from := time.Date(y.year, 1, 1, 0, 0, 0, 0, loc)
		to := time.Date(y.year+1, 1, 1, 0, 0, 0, 0, loc)
		for _, spec := range propertySpecs {
			s := mustParse(t, spec, loc)
			t.Run(fmt.Sprintf("%s/%d/%s", y.zone, y.year, spec), func(t *testing.T) {
				check(t, s, allSlots(s, from, to))
			})
		}
	}
}

func TestPropertySlotsStrictlyIncrease(t *testing.T) {
	forEachYear(t, func(t *testing.T, s Schedule, slots []time.Time) {
		for i := 1; i < len(slots); i++ {
			if !slots[i].After(slots[i-1]) {
				t.Fatalf("slot %s follows %s", slots[i], slots[i-1])
			}
		}
	})
}

func TestPropertyNextIsTheFollowingSlotWhereverItStarts(t *testing.T) {
	// No drift: asking from any instant between two slots gives the same
	// next slot as asking from the earlier slot.
	forEachYear(t, func(t *testing.T, s Schedule, slots []time.Time) {
		for i := 1; i < len(slots); i += 97 {
			midway := slots[i-1].Add(slots[i].Sub(slots[i-1]) / 2)
			for _, from := range []time.Time{slots[i-1], midway, slots[i].Add(-time.Nanosecond)} {
				if next, _ := s.Next(from); !next.Equal(slots[i]) {
					t.Fatalf("Next(%s) = %s, want %s", from, next, slots[i])
				}
			}
		}
	})
}

func TestPropertyAnchoredSlotsExistAndRunOncePerReading(t *testing.T) {
	forEachYear(t, func(t *testing.T, s Schedule, slots []time.Time) {
		if s.kind != kindCalendar || !s.cal.anchored {
			return
		}
		seen := map[string]bool{}
		for _, slot := range slots {
			// A slot whose local reading is not one the schedule names must
			// be the end of a gap: the instant the clocks jumped.
			h, m, _ := slot.Clock()
			if s.cal.hours&(1<<h) == 0 || s.cal.minutes&(1<<m) == 0 {
				_, before := slot.Add(-time.Second).Zone()
				_, after := slot.Zone()
				if after <= before {
					t.Errorf("slot %s shows a time the schedule does not name and is not the end of a gap", slot)
				}
			}
			reading := slot.Format("2006-01-02 15:04")
			if seen[reading] {
				t.Errorf("the local reading %s runs twice", reading)
			}
			seen[reading] = true
		}
	})
}

func TestPropertyRepeatingSchedulesKeepRealTimeCadence(t *testing.T) {
	// In zones whose clocks move by whole hours, a schedule that repeats
	// every hour or less keeps its cadence in real time across the changes.
	cadences := map[string]time.Duration{
		"hourly :30": time.Hour, "hourly :00": time.Hour,
		"cron 30 * * * *": time.Hour, "cron */10 * * * *": 10 * time.Minute,
		"every 6h": 6 * time.Hour, "every 90m": 90 * time.Minute,
	}
	for _, zone := range append(propertyZones, "Pacific/Apia") {
		loc := mustZone(t, zone)
		for spec, cadence := range cadences {
			s := mustParse(t, spec, loc)
			year := 2026
			if zone == "Pacific/Apia" {
				year = 2011
			}
			slots := allSlots(s, time.Date(year, 1, 1, 0, 0, 0, 0, loc), time.Date(year+1, 1, 1, 0, 0, 0, 0, loc))
			for i := 1; i < len(slots); i++ {
				if gap := slots[i].Sub(slots[i-1]); gap != cadence {
					t.Errorf("%s in %s: %s after %s, want %s", spec, zone, gap, slots[i-1], cadence)
					break
				}
			}
		}
	}
}

func TestPropertySlotCountsMatchTheCalendar(t *testing.T) {
	// 2026 starts on a Thursday and has 365 days: 52 of each weekday but
	// Thursday (53), 261 weekdays, and three Fridays that are 13ths
	// (February, March, November). A local year has as many real hours as
	// it has days times 24, as the offset on 1 January is the same in both.
	counts := map[string]int{
		"daily 02:30":                365, // the gap and overlap days still run once
		"daily 00:00":                365,
		"daily 23:59":                365,
		"every 3 days 02:00":         122, // 2026-01-01 is day 20454, a multiple of 3; 2026-12-31 is day 20818
		"weekly sat,sun 22:00":       104,
		"every 2 weeks mon 01:00":    26,
		"monthly 1,-1 03:00":         24,
		"monthly 31 02:30":           7,
		"cron 30 2 * * *":            365,
		"cron 0 1-3 * * *":           3*365 - 1, // spring: the moved 02:00 and 03:00 share one instant
		"cron 0,30 2 * * *":          2*365 - 1, // spring: 02:00 and 02:30 run once, at 03:00
		"cron 0 0 13 * 5":            52 + 12 - 3,
		"hourly :30":                 365 * 24,
		"hourly :00":                 365 * 24,
		"cron 30 * * * *":            365 * 24,
		"cron */10 * * * *":          365 * 24 * 6,
		"cron */15 9-17 * * mon-fri": 261 * 9 * 4,
		"every 6h":                   365 * 4,
		"every 90m":                  365 * 16,
	}
	for _, zone := range []string{"UTC", "Europe/Berlin", "America/New_York"} {
		loc := mustZone(t, zone)
		from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, loc), time.Date(2027, 1, 1, 0, 0, 0, 0, loc)
		for spec, want := range counts {
			if zone == "UTC" && (spec == "cron 0 1-3 * * *" || spec == "cron 0,30 2 * * *") {
				want++ // no gap to merge two slots
			}
			got := len(allSlots(mustParse(t, spec, loc), from, to))
			if got != want {
				t.Errorf("%s in %s over 2026: %d slots, want %d", spec, zone, got, want)
			}
		}
	}
}

func TestPropertyLordHoweHourlyFollowsTheLocalClock(t *testing.T) {
	// With a 30-minute change, "the local clock shows :30" and "one hour of
	// real time" disagree once in each direction. nightjar follows the
	// clock: in April 01:30-02:00 shows twice (one extra :30 and :45), in
	// October 02:00-02:30 never shows (one :00 and :15 fewer).
	loc := mustZone(t, "Australia/Lord_Howe")
	from, to := time.Date(2026, 1, 1, 0, 0, 0, 0, loc), time.Date(2027, 1, 1, 0, 0, 0, 0, loc)
	for spec, want := range map[string]int{"hourly :30": 8761, "hourly :45": 8761, "hourly :00": 8759, "hourly :15": 8759} {
		if got := len(allSlots(mustParse(t, spec, loc), from, to)); got != want {
			t.Errorf("%s in Lord_Howe over 2026: %d slots, want %d", spec, got, want)
		}
	}
}
