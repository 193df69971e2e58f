package schedule

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// snap builds a healthy snapshot at an RFC 3339 time.
func snap(t testing.TB, id, at string, tags ...string) RetentionSnapshot {
	t.Helper()
	return RetentionSnapshot{ID: id, Time: mustTime(t, at), Host: "h", Paths: []string{"/data"}, Tags: tags}
}

func pinned(s RetentionSnapshot) RetentionSnapshot       { s.Pinned = true; return s }
func verifyFailed(s RetentionSnapshot) RetentionSnapshot { s.VerifyFailed = true; return s }

// outcome writes decisions as "id:reason+reason" for kept and "id:-" for forgotten snapshots, newest first.
func outcome(decisions []RetentionDecision) []string {
	var out []string
	for _, d := range decisions {
		if !d.Keep {
			out = append(out, d.Snapshot.ID+":-")
			continue
		}
		reasons := make([]string, len(d.Reasons))
		for i, r := range d.Reasons {
			reasons[i] = string(r)
		}
		out = append(out, d.Snapshot.ID+":"+strings.Join(reasons, "+"))
	}
	return out
}

func TestParseCalendarDuration(t *testing.T) {
	for _, tc := range []struct {
		text string
		want CalendarDuration
	}{
		{"30d", CalendarDuration{Days: 30}},
		{"1y2m", CalendarDuration{Years: 1, Months: 2}},
		{"2y5m7d3h", CalendarDuration{Years: 2, Months: 5, Days: 7, Hours: 3}},
		{"12h", CalendarDuration{Hours: 12}},
		{" 1y ", CalendarDuration{Years: 1}},
		{"1y0m", CalendarDuration{Years: 1}},
		{"1000000h", CalendarDuration{Hours: 1_000_000}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			got, err := ParseCalendarDuration(tc.text)
			if err != nil || got != tc.want {
				t.Fatalf("ParseCalendarDuration(%q) = %+v, %v; want %+v", tc.text, got, err, tc.want)
			}
		})
	}
}

func TestParseCalendarDurationRejectsWithAMessageSayingWhatIsAllowed(t *testing.T) {
	for _, tc := range []struct {
		name, text, wantInMessage string
	}{
		{"empty", "", "duration is empty"},
		{"no unit", "30", "30 has no unit"},
		{"unknown unit", "30x", `unit "x" is unknown`},
		{"minutes are not a unit", "5min", `unit "min" is unknown`},
		{"a unit in words", "3days", `unit "days" is unknown`},
		{"weeks are not a unit", "2w", `unit "w" is unknown`},
		{"upper case", "1Y", `unit "Y" is unknown`},
		{"out of order", "1d1y", "unit y is repeated or out of order"},
		{"repeated", "1d2d", "unit d is repeated or out of order"},
		{"negative", "-1d", `"-" is not a number`},
		{"space inside", "1y 2m", `" " is not a number`},
		{"zero", "0d", "must be longer than zero"},
		{"too large", "1000001d", "1000001d is too large"},
		{"overflows int", "99999999999999999999y", "is too large"},
		{"go duration", "1h30m", "unit m is repeated or out of order"},
		{"a number with a fraction", "1.5d", "1 has no unit"},
		{"not ascii", "½d", `"½" is not a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCalendarDuration(tc.text)
			if err == nil {
				t.Fatalf("ParseCalendarDuration(%q) accepted it", tc.text)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantInMessage) || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("ParseCalendarDuration(%q) = %q, want one line containing %q", tc.text, msg, tc.wantInMessage)
			}
			if tc.name != "zero" && !strings.Contains(msg, "such as 30d, 1y2m or 2y5m7d3h") && !strings.Contains(msg, "at most 1000000") {
				t.Fatalf("ParseCalendarDuration(%q) = %q does not say what is allowed", tc.text, msg)
			}
		})
	}
}

func TestCalendarDurationString(t *testing.T) {
	for _, tc := range []struct {
		d    CalendarDuration
		want string
	}{
		{CalendarDuration{}, "0h"},
		{CalendarDuration{Days: 30}, "30d"},
		{CalendarDuration{Years: 2, Months: 5, Days: 7, Hours: 3}, "2y5m7d3h"},
		{CalendarDuration{Years: 1, Hours: 1}, "1y1h"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.d.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCalendarDurationBeforeIsCalendarArithmetic(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	newYork := mustZone(t, "America/New_York")
	at := func(loc *time.Location, y int, m time.Month, d, h, min int) time.Time {
		return time.Date(y, m, d, h, min, 0, 0, loc)
	}
	for _, tc := range []struct {
		name     string
		duration string
		from     time.Time
		want     time.Time
	}{
		{"a month back from March 31 in a leap year is March 2", "1m", at(time.UTC, 2024, 3, 31, 12, 0), at(time.UTC, 2024, 3, 2, 12, 0)},
		{"a month back from March 31 in a common year is March 3", "1m", at(time.UTC, 2023, 3, 31, 12, 0), at(time.UTC, 2023, 3, 3, 12, 0)},
		{"a month back from March 30 is March 1 or 2", "1m", at(time.UTC, 2023, 3, 30, 0, 0), at(time.UTC, 2023, 3, 2, 0, 0)},
		{"a year back from Feb 29 is March 1", "1y", at(time.UTC, 2024, 2, 29, 8, 0), at(time.UTC, 2023, 3, 1, 8, 0)},
		{"a month back from May 31 is May 1", "1m", at(time.UTC, 2024, 5, 31, 0, 0), at(time.UTC, 2024, 5, 1, 0, 0)},
		{"years, months, days then hours", "1y2m3d4h", at(time.UTC, 2024, 6, 15, 10, 0), at(time.UTC, 2023, 4, 12, 6, 0)},
		{"a day back over the spring change keeps the clock time (23 hours)", "1d", at(berlin, 2021, 3, 28, 12, 0), at(berlin, 2021, 3, 27, 12, 0)},
		{"a day back over the autumn change keeps the clock time (25 hours)", "1d", at(newYork, 2021, 11, 7, 12, 0), at(newYork, 2021, 11, 6, 12, 0)},
		{"hours are elapsed time across the change", "24h", at(berlin, 2021, 3, 28, 12, 0), at(berlin, 2021, 3, 27, 11, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseCalendarDuration(tc.duration)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Before(tc.from); !got.Equal(tc.want) {
				t.Fatalf("%s before %s = %s, want %s", tc.duration, tc.from, got, tc.want)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  RetentionPolicy
		command string // Validate's message, "" when valid (forget's flags: restic's ranges)
		job     string // ValidateForJob's message, "" when valid (a job's limits)
	}{
		{"daily only", RetentionPolicy{Daily: 7}, "", ""},
		{"the issue's default", RetentionPolicy{Daily: 7, Weekly: 4, Monthly: 6}, "", ""},
		{"the limits themselves", RetentionPolicy{Daily: 366, Weekly: 260, Monthly: 120}, "", ""},
		{"unlimited counts without a limit", RetentionPolicy{Last: KeepUnlimited, Hourly: KeepUnlimited, Yearly: KeepUnlimited}, "", ""},
		{"within only", RetentionPolicy{Within: CalendarDuration{Days: 30}}, "", ""},
		{"tag only", RetentionPolicy{Tags: [][]string{{"keep"}}}, "", ""},
		{"many hours and years have no limit", RetentionPolicy{Hourly: 10000, Yearly: 1000, Last: 5000}, "", ""},
		{"nothing", RetentionPolicy{},
			"retention policy keeps nothing: set at least one of last, hourly, daily, weekly, monthly, yearly, within or tag",
			"retention policy keeps nothing"},
		{"too many days", RetentionPolicy{Daily: 367}, "", "retention daily = 367 is out of range: allowed 0 to 366"},
		{"too many weeks", RetentionPolicy{Weekly: 261}, "", "retention weekly = 261 is out of range: allowed 0 to 260"},
		{"too many months", RetentionPolicy{Monthly: 121}, "", "retention monthly = 121 is out of range: allowed 0 to 120"},
		{"unlimited days", RetentionPolicy{Daily: KeepUnlimited}, "", "retention daily = -1 is out of range: allowed 0 to 366"},
		{"unlimited weeks", RetentionPolicy{Weekly: KeepUnlimited}, "", "retention weekly = -1 is out of range: allowed 0 to 260"},
		{"unlimited months", RetentionPolicy{Monthly: KeepUnlimited}, "", "retention monthly = -1 is out of range: allowed 0 to 120"},
		{"below unlimited", RetentionPolicy{Daily: 7, Last: -2},
			"retention last = -2 is out of range: allowed 0 or more, or -1 for unlimited",
			"retention last = -2 is out of range: allowed 0 or more, or -1 for unlimited"},
		{"negative within", RetentionPolicy{Within: CalendarDuration{Days: -1}},
			"retention within: duration -1d is out of range", "retention within: duration -1d is out of range"},
		{"empty tag", RetentionPolicy{Tags: [][]string{{" "}}}, "retention tag is empty", "retention tag is empty"},
		{"empty tag list", RetentionPolicy{Tags: [][]string{{}}}, "retention tag is empty", "retention tag is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []struct {
				name     string
				validate func() error
				want     string
			}{{"Validate", tc.policy.Validate, tc.command}, {"ValidateForJob", tc.policy.ValidateForJob, tc.job}} {
				err := v.validate()
				switch {
				case v.want == "" && err != nil:
					t.Errorf("%s() = %v, want nil", v.name, err)
				case v.want != "" && (err == nil || !strings.Contains(err.Error(), v.want)):
					t.Errorf("%s() = %v, want a message containing %q", v.name, err, v.want)
				}
			}
		})
	}
}

func TestPolicyString(t *testing.T) {
	for _, tc := range []struct {
		policy RetentionPolicy
		want   string
	}{
		{RetentionPolicy{Daily: 7, Weekly: 4, Monthly: 6}, "keep 7 daily, 4 weekly, 6 monthly snapshots"},
		{RetentionPolicy{Last: 3, Yearly: KeepUnlimited}, "keep 3 last, all yearly snapshots"},
		{RetentionPolicy{Within: CalendarDuration{Years: 1, Months: 2}}, "keep all snapshots within 1y2m of the newest"},
		{RetentionPolicy{Hourly: 24, Within: CalendarDuration{Days: 30}, Tags: [][]string{{"keep"}, {"audit"}}},
			"keep 24 hourly snapshots and all snapshots within 30d of the newest and all snapshots tagged keep or audit"},
		{RetentionPolicy{Last: 1, Tags: [][]string{{"keep", "audit"}, {"legal"}}},
			"keep 1 last snapshots and all snapshots tagged keep and audit or legal"},
		{RetentionPolicy{}, "keep nothing"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.policy.String(); got != tc.want {
				t.Fatalf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	newYork := mustZone(t, "America/New_York")
	// week is one snapshot a day at noon UTC, Monday 2021-03-01 to Sunday 2021-03-07, and the Monday after.
	week := func() []RetentionSnapshot {
		var out []RetentionSnapshot
		for day := 1; day <= 8; day++ {
			out = append(out, snap(t, fmt.Sprintf("d%d", day), fmt.Sprintf("2021-03-%02dT12:00:00Z", day)))
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		policy    RetentionPolicy
		zone      *time.Location
		snapshots []RetentionSnapshot
		want      []string // newest first
	}{
		{
			name:      "last keeps the newest N",
			policy:    RetentionPolicy{Last: 3},
			zone:      time.UTC,
			snapshots: week(),
			want:      []string{"d8:last+newest", "d7:last", "d6:last", "d5:-", "d4:-", "d3:-", "d2:-", "d1:-"},
		},
		{
			name:   "hourly keeps the newest of each clock hour",
			policy: RetentionPolicy{Hourly: 2},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2022-03-15T09:05:00Z"), snap(t, "b", "2022-03-15T09:50:00Z"),
				snap(t, "c", "2022-03-15T10:10:00Z"), snap(t, "d", "2022-03-15T10:40:00Z"),
				snap(t, "e", "2022-03-15T11:00:00Z"),
			},
			want: []string{"e:hourly+newest", "d:hourly", "c:-", "b:-", "a:-"},
		},
		{
			name:   "daily keeps the newest of each day in the zone",
			policy: RetentionPolicy{Daily: 2},
			zone:   berlin,
			snapshots: []RetentionSnapshot{
				// 23:30 UTC is the next day in Berlin.
				snap(t, "a", "2021-03-01T10:00:00Z"), snap(t, "b", "2021-03-01T23:30:00Z"),
				snap(t, "c", "2021-03-02T08:00:00Z"), snap(t, "d", "2021-03-03T08:00:00Z"),
			},
			want: []string{"d:daily+newest", "c:daily", "b:-", "a:-"},
		},
		{
			name:   "daily counts the same instants differently in another zone",
			policy: RetentionPolicy{Daily: 2},
			zone:   newYork,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2021-03-01T10:00:00Z"), snap(t, "b", "2021-03-01T23:30:00Z"),
				snap(t, "c", "2021-03-02T08:00:00Z"), snap(t, "d", "2021-03-03T08:00:00Z"),
			},
			// in New York: a and b are on March 1, c (03:00) on March 2, d on March 3.
			want: []string{"d:daily+newest", "c:daily", "b:-", "a:-"},
		},
		{
			name:      "weekly keeps the newest of each ISO week (Monday to Sunday)",
			policy:    RetentionPolicy{Weekly: 2},
			zone:      time.UTC,
			snapshots: week(),
			want:      []string{"d8:weekly+newest", "d7:weekly", "d6:-", "d5:-", "d4:-", "d3:-", "d2:-", "d1:-"},
		},
		{
			name:   "ISO week 53 spans the new year",
			policy: RetentionPolicy{Weekly: 2},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "dec28", "2020-12-28T12:00:00Z"), snap(t, "dec31", "2020-12-31T12:00:00Z"),
				snap(t, "jan1", "2021-01-01T12:00:00Z"), snap(t, "jan3", "2021-01-03T12:00:00Z"),
				snap(t, "jan4", "2021-01-04T12:00:00Z"),
			},
			want: []string{"jan4:weekly+newest", "jan3:weekly", "jan1:-", "dec31:-", "dec28:-"},
		},
		{
			name:   "monthly keeps the newest of each month, month ends included",
			policy: RetentionPolicy{Monthly: 3},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "jan31", "2024-01-31T23:59:00Z"), snap(t, "feb1", "2024-02-01T00:00:00Z"),
				snap(t, "feb29", "2024-02-29T12:00:00Z"), snap(t, "mar1", "2024-03-01T00:00:00Z"),
				snap(t, "mar31", "2024-03-31T23:59:59Z"),
			},
			want: []string{"mar31:monthly+newest", "mar1:-", "feb29:monthly", "feb1:-", "jan31:monthly"},
		},
		{
			name:   "yearly keeps the newest of each year",
			policy: RetentionPolicy{Yearly: 2},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2019-06-01T00:00:00Z"), snap(t, "b", "2020-01-01T00:00:00Z"),
				snap(t, "c", "2020-12-31T23:59:59Z"), snap(t, "d", "2021-01-01T00:00:00Z"),
			},
			want: []string{"d:yearly+newest", "c:yearly", "b:-", "a:-"},
		},
		{
			name:   "a count larger than the buckets also keeps the oldest snapshot (restic)",
			policy: RetentionPolicy{Yearly: 5},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2020-03-01T00:00:00Z"), snap(t, "b", "2020-06-01T00:00:00Z"),
				snap(t, "c", "2020-09-01T00:00:00Z"), snap(t, "d", "2021-01-01T00:00:00Z"),
			},
			want: []string{"d:yearly+newest", "c:yearly", "b:-", "a:yearly"},
		},
		{
			name:   "a used-up count does not keep the oldest",
			policy: RetentionPolicy{Yearly: 2},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2020-03-01T00:00:00Z"), snap(t, "c", "2020-09-01T00:00:00Z"),
				snap(t, "d", "2021-01-01T00:00:00Z"),
			},
			want: []string{"d:yearly+newest", "c:yearly", "a:-"},
		},
		{
			name:      "unlimited keeps every bucket",
			policy:    RetentionPolicy{Daily: KeepUnlimited},
			zone:      time.UTC,
			snapshots: week(),
			want:      []string{"d8:daily+newest", "d7:daily", "d6:daily", "d5:daily", "d4:daily", "d3:daily", "d2:daily", "d1:daily"},
		},
		{
			name:   "within is relative to the newest snapshot, not to now",
			policy: RetentionPolicy{Within: CalendarDuration{Days: 2}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "old", "2021-03-01T12:00:00Z"), snap(t, "edge", "2021-03-03T12:00:00Z"),
				snap(t, "inside", "2021-03-03T12:00:01Z"), snap(t, "newest", "2021-03-05T12:00:00Z"),
			},
			want: []string{"newest:within+newest", "inside:within", "edge:-", "old:-"},
		},
		{
			name:   "within a month from March 31 reaches back to March 2 in a leap year",
			policy: RetentionPolicy{Within: CalendarDuration{Months: 1}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "feb29", "2024-02-29T12:00:00Z"), snap(t, "mar1", "2024-03-01T12:00:00Z"),
				snap(t, "mar2", "2024-03-02T12:00:00Z"), snap(t, "mar2b", "2024-03-02T12:00:01Z"),
				snap(t, "mar31", "2024-03-31T12:00:00Z"),
			},
			want: []string{"mar31:within+newest", "mar2b:within", "mar2:-", "mar1:-", "feb29:-"},
		},
		{
			name:   "within counts days on the zone's calendar across a DST change",
			policy: RetentionPolicy{Within: CalendarDuration{Days: 1}},
			zone:   berlin,
			snapshots: []RetentionSnapshot{
				// 2021-03-28 12:00 CEST is 10:00 UTC; a day before is 2021-03-27 12:00 CET, 11:00 UTC: 23 hours.
				snap(t, "before", "2021-03-27T10:59:00Z"), snap(t, "after", "2021-03-27T11:01:00Z"),
				snap(t, "newest", "2021-03-28T10:00:00Z"),
			},
			want: []string{"newest:within+newest", "after:within", "before:-"},
		},
		{
			name:   "within reaching back to the first instant of the calendar still keeps",
			policy: RetentionPolicy{Within: CalendarDuration{Years: 2023, Months: 2, Days: 30, Hours: 12}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				// 2024-03-31 12:00 less 2023y2m30d12h is 0001-01-01 00:00 UTC, Go's zero time.
				snap(t, "a", "2021-03-01T12:00:00Z"), snap(t, "newest", "2024-03-31T12:00:00Z"),
			},
			want: []string{"newest:within+newest", "a:within"},
		},
		{
			name:   "tag keeps a snapshot with any of the tags",
			policy: RetentionPolicy{Last: 1, Tags: [][]string{{"keep"}, {"audit"}}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2021-03-01T12:00:00Z", "audit"), snap(t, "b", "2021-03-02T12:00:00Z", "other"),
				snap(t, "c", "2021-03-03T12:00:00Z", "other", "keep"), snap(t, "d", "2021-03-04T12:00:00Z"),
			},
			want: []string{"d:last+newest", "c:tag", "b:-", "a:tag"},
		},
		{
			name:   "a tag list keeps only a snapshot with all of its tags",
			policy: RetentionPolicy{Last: 1, Tags: [][]string{{"keep", "audit"}, {"legal"}}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2021-03-01T12:00:00Z", "audit"), snap(t, "b", "2021-03-02T12:00:00Z", "audit", "keep"),
				snap(t, "c", "2021-03-03T12:00:00Z", "keep", "other"), snap(t, "d", "2021-03-04T12:00:00Z", "legal"),
				snap(t, "e", "2021-03-05T12:00:00Z"),
			},
			want: []string{"e:last+newest", "d:tag", "c:-", "b:tag", "a:-"},
		},
		{
			name:   "pinned snapshots are always kept and still count",
			policy: RetentionPolicy{Daily: 2},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				pinned(snap(t, "a", "2021-03-01T12:00:00Z")), snap(t, "b", "2021-03-02T12:00:00Z"),
				pinned(snap(t, "c", "2021-03-03T12:00:00Z")), snap(t, "d", "2021-03-04T12:00:00Z"),
			},
			want: []string{"d:daily+newest", "c:daily+pinned", "b:-", "a:pinned"},
		},
		{
			name:   "the newest is kept even when no rule keeps it",
			policy: RetentionPolicy{Tags: [][]string{{"keep"}}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2021-03-01T12:00:00Z", "keep"), snap(t, "b", "2021-03-02T12:00:00Z"),
				snap(t, "c", "2021-03-03T12:00:00Z"),
			},
			want: []string{"c:newest", "b:-", "a:tag"},
		},
		{
			name:   "a group whose only snapshot is old keeps it",
			policy: RetentionPolicy{Within: CalendarDuration{Days: 7}, Tags: [][]string{{"keep"}}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "only", "2015-01-01T00:00:00Z"),
			},
			want: []string{"only:within+newest"},
		},
		{
			name:   "a failed verification is kept and does not push a healthy snapshot out",
			policy: RetentionPolicy{Daily: 2},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2021-03-01T12:00:00Z"), snap(t, "b", "2021-03-02T12:00:00Z"),
				verifyFailed(snap(t, "bad", "2021-03-03T12:00:00Z")), snap(t, "c", "2021-03-04T12:00:00Z"),
			},
			want: []string{"c:daily+newest", "bad:verify_failed", "b:daily", "a:-"},
		},
		{
			name:   "a failed verification in the same day does not take the day",
			policy: RetentionPolicy{Daily: 1, Last: 1},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2021-03-04T08:00:00Z"), verifyFailed(snap(t, "bad", "2021-03-04T20:00:00Z")),
			},
			want: []string{"bad:verify_failed", "a:last+daily+newest"},
		},
		{
			name:   "a failed newest snapshot is not the newest nor the reference of within",
			policy: RetentionPolicy{Within: CalendarDuration{Days: 1}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2021-03-01T12:00:00Z"), snap(t, "b", "2021-03-02T00:00:00Z"),
				snap(t, "c", "2021-03-02T12:00:00Z"), verifyFailed(snap(t, "bad", "2021-03-09T12:00:00Z")),
			},
			want: []string{"bad:verify_failed", "c:within+newest", "b:within", "a:-"},
		},
		{
			name:   "a pinned failed snapshot says both",
			policy: RetentionPolicy{Last: 1},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				pinned(verifyFailed(snap(t, "bad", "2021-03-01T12:00:00Z"))), snap(t, "a", "2021-03-02T12:00:00Z"),
			},
			want: []string{"a:last+newest", "bad:pinned+verify_failed"},
		},
		{
			name:   "a group of failed snapshots keeps them all",
			policy: RetentionPolicy{Last: 1},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				verifyFailed(snap(t, "x", "2021-03-01T12:00:00Z")), verifyFailed(snap(t, "y", "2021-03-02T12:00:00Z")),
			},
			want: []string{"y:verify_failed", "x:verify_failed"},
		},
		{
			name:   "equal times are ordered by ID, the greater counting as newer",
			policy: RetentionPolicy{Last: 2},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "b", "2021-03-02T12:00:00Z"), snap(t, "a", "2021-03-02T12:00:00Z"),
				snap(t, "c", "2021-03-02T12:00:00Z"), snap(t, "z", "2021-03-01T12:00:00Z"),
			},
			want: []string{"c:last+newest", "b:last", "a:-", "z:-"},
		},
		{
			name:   "a snapshot in the future is the newest and the reference of within",
			policy: RetentionPolicy{Daily: 1, Within: CalendarDuration{Days: 3}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				snap(t, "a", "2026-11-20T12:00:00Z"), snap(t, "b", "2026-11-30T12:00:00Z"),
				snap(t, "future", "2031-01-01T00:00:00Z"),
			},
			want: []string{"future:daily+within+newest", "b:-", "a:-"},
		},
		{
			name:   "the repeated hour of an autumn change is one clock hour",
			policy: RetentionPolicy{Hourly: 2},
			zone:   berlin,
			snapshots: []RetentionSnapshot{
				// 02:30 CEST and 02:30 CET on 2021-10-31, then 03:30 CET.
				snap(t, "first", "2021-10-31T00:30:00Z"), snap(t, "second", "2021-10-31T01:30:00Z"),
				snap(t, "later", "2021-10-31T02:30:00Z"),
			},
			want: []string{"later:hourly+newest", "second:hourly", "first:-"},
		},
		{
			name:   "the missing hour of a spring change leaves no gap in the count",
			policy: RetentionPolicy{Hourly: 2},
			zone:   newYork,
			snapshots: []RetentionSnapshot{
				// 00:30 EST, 01:30 EST, then 03:30 EDT on 2021-03-14: 02:00-03:00 does not exist.
				snap(t, "a", "2021-03-14T05:30:00Z"), snap(t, "b", "2021-03-14T06:30:00Z"),
				snap(t, "c", "2021-03-14T07:30:00Z"),
			},
			want: []string{"c:hourly+newest", "b:hourly", "a:-"},
		},
		{
			name:   "every rule gives its reason in a fixed order",
			policy: RetentionPolicy{Last: 1, Hourly: 1, Daily: 1, Weekly: 1, Monthly: 1, Yearly: 1, Within: CalendarDuration{Hours: 1}, Tags: [][]string{{"keep"}}},
			zone:   time.UTC,
			snapshots: []RetentionSnapshot{
				pinned(snap(t, "a", "2021-03-02T12:00:00Z", "keep")),
			},
			want: []string{"a:last+hourly+daily+weekly+monthly+yearly+within+tag+pinned+newest"},
		},
		{
			name:      "an empty group has no decisions",
			policy:    RetentionPolicy{Last: 1},
			zone:      time.UTC,
			snapshots: nil,
			want:      nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			input := slices.Clone(tc.snapshots)
			decisions, err := DecideRetention(tc.snapshots, tc.policy, tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			if got := outcome(decisions); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecideRetention:\n got  %v\n want %v", got, tc.want)
			}
			if !reflect.DeepEqual(input, tc.snapshots) {
				t.Fatalf("DecideRetention changed its input")
			}
			kept := 0
			for _, d := range decisions {
				if d.Keep {
					kept++
				}
				if d.Keep != (len(d.Reasons) > 0) {
					t.Fatalf("%s: Keep %v with reasons %v", d.Snapshot.ID, d.Keep, d.Reasons)
				}
			}
			if len(tc.snapshots) > 0 && kept == 0 {
				t.Fatalf("nothing kept of %d snapshots", len(tc.snapshots))
			}
		})
	}
}

func TestDecideRefusesWhatItCannotDecide(t *testing.T) {
	snapshots := []RetentionSnapshot{snap(t, "a", "2021-03-01T12:00:00Z")}
	for _, tc := range []struct {
		name          string
		policy        RetentionPolicy
		zone          *time.Location
		wantInMessage string
	}{
		{"a policy that keeps nothing", RetentionPolicy{}, time.UTC, "keeps nothing"},
		{"an invalid policy", RetentionPolicy{Monthly: -5}, time.UTC, "allowed 0 or more, or -1 for unlimited"},
		{"no zone", RetentionPolicy{Last: 1}, nil, "needs a time zone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decisions, err := DecideRetention(snapshots, tc.policy, tc.zone)
			if err == nil || !strings.Contains(err.Error(), tc.wantInMessage) || decisions != nil {
				t.Fatalf("DecideRetention = %v, %v; want no decisions and an error containing %q", decisions, err, tc.wantInMessage)
			}
			if _, err := DecideRetentionGroups(snapshots, DefaultGroupBy, tc.policy, tc.zone); err == nil || !strings.Contains(err.Error(), tc.wantInMessage) {
				t.Fatalf("DecideRetentionGroups = %v; want an error containing %q", err, tc.wantInMessage)
			}
		})
	}
}

func TestParseGroupBy(t *testing.T) {
	for _, tc := range []struct {
		text          string
		want          GroupBy
		wantInMessage string
	}{
		{"host,paths", GroupBy{Host: true, Paths: true}, ""},
		{"host", GroupBy{Host: true}, ""},
		{"tags", GroupBy{Tags: true}, ""},
		{"paths, tags ,host", GroupBy{Host: true, Paths: true, Tags: true}, ""},
		{"", GroupBy{}, ""},
		{"hosts", GroupBy{}, `group-by "hosts": "hosts" is not a field: use host, paths and tags`},
		{"host,,paths", GroupBy{}, `"" is not a field`},
		{"host,host", GroupBy{}, `group-by "host,host" names host twice`},
	} {
		t.Run(tc.text, func(t *testing.T) {
			got, err := ParseGroupBy(tc.text)
			if tc.wantInMessage != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantInMessage) {
					t.Fatalf("ParseGroupBy(%q) = %+v, %v; want an error containing %q", tc.text, got, err, tc.wantInMessage)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseGroupBy(%q) = %+v, %v; want %+v", tc.text, got, err, tc.want)
			}
			again, err := ParseGroupBy(got.String())
			if err != nil || again != got {
				t.Fatalf("ParseGroupBy(%q).String() = %q does not read back", tc.text, got.String())
			}
		})
	}
	if DefaultGroupBy.String() != "host,paths" {
		t.Fatalf("DefaultGroupBy = %q, want restic's host,paths", DefaultGroupBy)
	}
}

func TestGroupSnapshots(t *testing.T) {
	at := mustTime(t, "2021-03-01T12:00:00Z")
	snapshots := []RetentionSnapshot{
		{ID: "1", Time: at, Host: "db1", Paths: []string{"/var/lib", "/etc"}, Tags: []string{"nightly"}},
		{ID: "2", Time: at, Host: "db1", Paths: []string{"/etc", "/var/lib"}},
		{ID: "3", Time: at, Host: "web", Paths: []string{"/etc", "/var/lib"}, Tags: []string{"nightly"}},
		{ID: "4", Time: at, Host: "db1", Paths: []string{"/etc"}, Tags: []string{"b", "a"}},
		{ID: "5", Time: at, Host: "db1", Paths: []string{"/etc"}, Tags: []string{"a", "b"}},
	}
	for _, tc := range []struct {
		by   string
		want map[string][]string // key to IDs
	}{
		{"host,paths", map[string][]string{
			`host "db1" paths ["/etc" "/var/lib"]`: {"1", "2"},
			`host "web" paths ["/etc" "/var/lib"]`: {"3"},
			`host "db1" paths ["/etc"]`:            {"4", "5"},
		}},
		{"host", map[string][]string{
			`host "db1"`: {"1", "2", "4", "5"},
			`host "web"`: {"3"},
		}},
		{"tags", map[string][]string{
			`tags ["nightly"]`: {"1", "3"},
			`tags []`:          {"2"},
			`tags ["a" "b"]`:   {"4", "5"},
		}},
		{"host,paths,tags", map[string][]string{
			`host "db1" paths ["/etc" "/var/lib"] tags ["nightly"]`: {"1"},
			`host "db1" paths ["/etc" "/var/lib"] tags []`:          {"2"},
			`host "web" paths ["/etc" "/var/lib"] tags ["nightly"]`: {"3"},
			`host "db1" paths ["/etc"] tags ["a" "b"]`:              {"4", "5"},
		}},
		{"", map[string][]string{"": {"1", "2", "3", "4", "5"}}},
	} {
		t.Run(tc.by, func(t *testing.T) {
			by, err := ParseGroupBy(tc.by)
			if err != nil {
				t.Fatal(err)
			}
			groups := GroupSnapshots(snapshots, by)
			got := map[string][]string{}
			var keys []string
			for _, g := range groups {
				keys = append(keys, g.Key)
				for _, s := range g.Snapshots {
					got[g.Key] = append(got[g.Key], s.ID)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("groups = %v, want %v", got, tc.want)
			}
			if !slices.IsSorted(keys) {
				t.Fatalf("groups are not ordered by key: %q", keys)
			}
		})
	}
}

func TestDecideGroupsDecidesEachGroupOnItsOwn(t *testing.T) {
	snapshots := []RetentionSnapshot{
		{ID: "db-old", Time: mustTime(t, "2021-03-01T12:00:00Z"), Host: "db", Paths: []string{"/srv"}},
		{ID: "db-new", Time: mustTime(t, "2021-03-05T12:00:00Z"), Host: "db", Paths: []string{"/srv"}},
		// The only snapshot of web is older than both of db's: it is its group's newest.
		{ID: "web-only", Time: mustTime(t, "2020-01-01T12:00:00Z"), Host: "web", Paths: []string{"/srv"}},
		{ID: "db-etc", Time: mustTime(t, "2019-01-01T12:00:00Z"), Host: "db", Paths: []string{"/etc"}},
		{ID: "db-etc-new", Time: mustTime(t, "2019-02-01T12:00:00Z"), Host: "db", Paths: []string{"/etc"}},
	}
	result, err := DecideRetentionGroups(snapshots, DefaultGroupBy, RetentionPolicy{Last: 1}, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, g := range result {
		got[g.Key] = outcome(g.Decisions)
	}
	want := map[string][]string{
		`host "db" paths ["/etc"]`:  {"db-etc-new:last+newest", "db-etc:-"},
		`host "db" paths ["/srv"]`:  {"db-new:last+newest", "db-old:-"},
		`host "web" paths ["/srv"]`: {"web-only:last+newest"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecideRetentionGroups = %v, want %v", got, want)
	}
}
