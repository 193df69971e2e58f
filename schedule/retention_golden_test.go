package schedule

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Run with: go test ./schedule -run TestRetentionGolden -update-retention-golden
// to rewrite testdata/retention/*.golden; then read every changed line.
var updateRetentionGolden = flag.Bool("update-retention-golden", false, "rewrite testdata/retention/*.golden from the current decisions")

// goldenSnapshots is a fixed history of 97 snapshots over 2019 to 2024 with
// the awkward days of the calendar in both golden zones; times are UTC, and
// the comments give the clock in Berlin (B) and New York (NY) where it matters.
var goldenSnapshots = []struct {
	id, at string
	tags   []string
	pinned bool
	failed bool
}{
	{id: "s001", at: "2019-01-15T12:00:00Z", pinned: true},
	{id: "s002", at: "2019-03-10T09:00:00Z"},
	{id: "s003", at: "2019-06-30T22:30:00Z"}, // B: Jul 1 00:30; NY: Jun 30 18:30
	{id: "s004", at: "2019-09-01T08:00:00Z"},
	{id: "s005", at: "2019-12-29T12:00:00Z"}, // Sunday of ISO week 2019-W52
	{id: "s006", at: "2019-12-30T12:00:00Z"}, // Monday of ISO week 2020-W01
	{id: "s007", at: "2019-12-31T23:30:00Z"}, // B: 2020-01-01 00:30; NY: 2019-12-31 18:30
	{id: "s008", at: "2020-01-31T12:00:00Z"},
	{id: "s009", at: "2020-02-28T12:00:00Z"},
	{id: "s010", at: "2020-02-29T12:00:00Z"},                         // leap day
	{id: "s011", at: "2020-02-29T23:30:00Z"},                         // B: Mar 1 00:30; NY: Feb 29 18:30
	{id: "s012", at: "2020-03-08T06:30:00Z"},                         // NY: 01:30 EST, the day clocks go forward
	{id: "s013", at: "2020-03-08T07:00:00Z"},                         // NY: 03:00 EDT (02:00-03:00 does not exist)
	{id: "s014", at: "2020-03-29T00:30:00Z"},                         // B: 01:30 CET, the day clocks go forward
	{id: "s015", at: "2020-03-29T01:00:00Z"},                         // B: 03:00 CEST
	{id: "s016", at: "2020-05-31T21:59:00Z"},                         // B: May 31 23:59
	{id: "s017", at: "2020-08-31T23:00:00Z"},                         // B: Sep 1 01:00; NY: Aug 31 19:00
	{id: "s018", at: "2020-10-25T00:30:00Z"},                         // B: 02:30 CEST, first pass of the repeated hour
	{id: "s019", at: "2020-10-25T01:30:00Z"},                         // B: 02:30 CET, second pass
	{id: "s020", at: "2020-11-01T05:30:00Z", tags: []string{"keep"}}, // NY: 01:30 EDT, first pass
	{id: "s021", at: "2020-11-01T06:30:00Z"},                         // NY: 01:30 EST, second pass
	{id: "s022", at: "2020-12-27T12:00:00Z"},                         // Sunday, 2020-W52
	{id: "s023", at: "2020-12-28T12:00:00Z"},                         // Monday, 2020-W53
	{id: "s024", at: "2020-12-31T10:00:00Z"},                         // 2020-W53
	{id: "s025", at: "2020-12-31T23:30:00Z"},                         // B: 2021-01-01 00:30, still 2020-W53
	{id: "s026", at: "2021-01-01T12:00:00Z"},                         // 2020-W53 in the year 2021
	{id: "s027", at: "2021-01-03T22:30:00Z"},                         // B: Sunday 23:30, 2020-W53
	{id: "s028", at: "2021-01-03T23:30:00Z"},                         // B: Monday Jan 4 00:30, 2021-W01; NY: Sunday 18:30, 2020-W53
	{id: "s029", at: "2021-01-04T12:00:00Z"},                         // 2021-W01
	{id: "s030", at: "2021-01-31T12:00:00Z"},
	{id: "s031", at: "2021-02-28T12:00:00Z"},
	{id: "s032", at: "2021-03-31T12:00:00Z"},
	{id: "s033", at: "2021-04-30T12:00:00Z"},
	{id: "s034", at: "2021-05-31T12:00:00Z"},
	{id: "s035", at: "2021-06-30T12:00:00Z"},
	{id: "s036", at: "2021-07-31T12:00:00Z"},
	{id: "s037", at: "2021-08-31T12:00:00Z"},
	{id: "s038", at: "2021-09-30T12:00:00Z"},
	{id: "s039", at: "2021-10-31T00:30:00Z"}, // B: 02:30 CEST, first pass of the repeated hour
	{id: "s040", at: "2021-10-31T01:30:00Z"}, // B: 02:30 CET, second pass
	{id: "s041", at: "2021-10-31T02:30:00Z"}, // B: 03:30 CET
	{id: "s042", at: "2021-11-07T05:30:00Z"}, // NY: 01:30 EDT, first pass
	{id: "s043", at: "2021-11-07T06:30:00Z"}, // NY: 01:30 EST, second pass
	{id: "s044", at: "2021-11-30T12:00:00Z"},
	{id: "s045", at: "2021-12-31T23:00:00Z"}, // B: 2022-01-01 00:00 exactly; NY: Dec 31 18:00
	{id: "s046", at: "2022-01-01T00:00:00Z"}, // B: Jan 1 01:00; NY: 2021-12-31 19:00
	{id: "s047", at: "2022-03-13T06:59:00Z"}, // NY: 01:59 EST, the day clocks go forward
	{id: "s048", at: "2022-03-13T07:00:00Z"}, // NY: 03:00 EDT
	{id: "s049", at: "2022-03-15T09:05:00Z"}, // several an hour
	{id: "s050", at: "2022-03-15T09:20:00Z", failed: true},
	{id: "s051", at: "2022-03-15T09:35:00Z"},
	{id: "s052", at: "2022-03-15T09:50:00Z"},
	{id: "s053", at: "2022-03-15T10:10:00Z"},
	{id: "s054", at: "2022-03-15T10:10:00Z"}, // the same instant as s053: s054 counts as the newer
	{id: "s055", at: "2022-03-15T10:55:00Z"},
	{id: "s056", at: "2022-03-27T00:59:00Z"}, // B: 01:59 CET, the day clocks go forward
	{id: "s057", at: "2022-03-27T01:00:00Z"}, // B: 03:00 CEST
	{id: "s058", at: "2022-06-15T12:00:00Z", tags: []string{"keep", "audit"}},
	{id: "s059", at: "2022-12-31T12:00:00Z"},
	{id: "s060", at: "2023-01-01T12:00:00Z"}, // Sunday, 2022-W52
	{id: "s061", at: "2023-01-02T12:00:00Z"}, // Monday, 2023-W01
	{id: "s062", at: "2023-02-28T12:00:00Z"},
	{id: "s063", at: "2023-03-31T12:00:00Z"},
	{id: "s064", at: "2023-06-30T12:00:00Z", pinned: true},
	{id: "s065", at: "2023-09-30T12:00:00Z"},
	{id: "s066", at: "2023-12-31T12:00:00Z"},
	{id: "s067", at: "2024-01-31T12:00:00Z"},
	{id: "s068", at: "2024-02-28T12:00:00Z"},
	{id: "s069", at: "2024-02-29T12:00:00Z"},
	{id: "s070", at: "2024-03-01T12:00:00Z"},
	{id: "s071", at: "2024-03-02T12:59:00Z"}, // a month before the newest is Mar 2 13:00 UTC in both zones
	{id: "s072", at: "2024-03-02T13:01:00Z"},
	{id: "s073", at: "2024-03-03T12:00:00Z"},
	{id: "s074", at: "2024-03-10T06:30:00Z"}, // NY: 01:30 EST, the day clocks go forward
	{id: "s075", at: "2024-03-10T07:30:00Z"}, // NY: 03:30 EDT
	{id: "s076", at: "2024-03-18T12:00:00Z"}, // one a day at noon UTC to Mar 30
	{id: "s077", at: "2024-03-19T12:00:00Z"},
	{id: "s078", at: "2024-03-20T12:00:00Z"},
	{id: "s079", at: "2024-03-21T12:00:00Z"},
	{id: "s080", at: "2024-03-22T12:00:00Z"},
	{id: "s081", at: "2024-03-23T12:00:00Z"},
	{id: "s082", at: "2024-03-24T12:00:00Z"},
	{id: "s083", at: "2024-03-25T12:00:00Z"},
	{id: "s084", at: "2024-03-26T12:00:00Z"},
	{id: "s085", at: "2024-03-27T12:00:00Z"},
	{id: "s086", at: "2024-03-28T12:00:00Z"},
	{id: "s087", at: "2024-03-29T12:00:00Z"},
	{id: "s088", at: "2024-03-30T12:00:00Z"},
	{id: "s089", at: "2024-03-31T00:30:00Z"}, // B: 01:30 CET, the day clocks go forward
	{id: "s090", at: "2024-03-31T01:00:00Z"}, // B: 03:00 CEST
	{id: "s091", at: "2024-03-31T08:00:00Z"},
	{id: "s092", at: "2024-03-31T08:20:00Z"},
	{id: "s093", at: "2024-03-31T08:40:00Z"},
	{id: "s094", at: "2024-03-31T09:00:00Z"},
	{id: "s095", at: "2024-03-31T10:00:00Z"},
	{id: "s096", at: "2024-03-31T11:00:00Z", failed: true},
	{id: "s097", at: "2024-03-31T12:00:00Z"}, // the newest: B 14:00 CEST, NY 08:00 EDT
}

// goldenFuture is two snapshots from a clock set years ahead.
var goldenFuture = []struct{ id, at string }{
	{"f001", "2030-01-01T00:00:00Z"},
	{"f002", "2030-01-01T00:30:00Z"},
}

func goldenHistory(t *testing.T) []RetentionSnapshot {
	t.Helper()
	var out []RetentionSnapshot
	for _, g := range goldenSnapshots {
		s := snap(t, g.id, g.at, g.tags...)
		s.Pinned, s.VerifyFailed = g.pinned, g.failed
		out = append(out, s)
	}
	return out
}

func TestRetentionGolden(t *testing.T) {
	history := goldenHistory(t)
	withFuture := append([]RetentionSnapshot(nil), history...)
	for _, f := range goldenFuture {
		withFuture = append(withFuture, snap(t, f.id, f.at))
	}
	onlyOld := []RetentionSnapshot{snap(t, "old1", "2015-02-28T23:30:00Z")}
	for _, tc := range []struct {
		name      string
		policy    RetentionPolicy
		snapshots []RetentionSnapshot
	}{
		{"last-10", RetentionPolicy{Last: 10}, history},
		{"hourly-all", RetentionPolicy{Hourly: KeepUnlimited}, history},
		{"hourly-12", RetentionPolicy{Hourly: 12}, history},
		{"daily-all", RetentionPolicy{Daily: KeepUnlimited}, history},
		{"daily-7", RetentionPolicy{Daily: 7}, history},
		{"weekly-all", RetentionPolicy{Weekly: KeepUnlimited}, history},
		{"monthly-all", RetentionPolicy{Monthly: KeepUnlimited}, history},
		{"yearly-3", RetentionPolicy{Yearly: 3}, history},
		{"yearly-10", RetentionPolicy{Yearly: 10}, history},
		{"default-7d-4w-6m", RetentionPolicy{Daily: 7, Weekly: 4, Monthly: 6}, history},
		{"combined", RetentionPolicy{Last: 3, Hourly: 5, Daily: 7, Weekly: 5, Monthly: 13, Yearly: 3, Tags: [][]string{{"audit"}}}, history},
		{"within-1m", RetentionPolicy{Within: CalendarDuration{Months: 1}}, history},
		{"within-2y5m7d3h", RetentionPolicy{Within: CalendarDuration{Years: 2, Months: 5, Days: 7, Hours: 3}}, history},
		{"tag-keep", RetentionPolicy{Tags: [][]string{{"keep"}}}, history},
		{"future-daily-3-within-1m", RetentionPolicy{Daily: 3, Within: CalendarDuration{Months: 1}}, withFuture},
		{"only-old-daily-7-within-30d", RetentionPolicy{Daily: 7, Within: CalendarDuration{Days: 30}}, onlyOld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := goldenReport(t, tc.policy, tc.snapshots)
			path := filepath.Join("..", "testdata", "retention", tc.name+".golden")
			if *updateRetentionGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-retention-golden to write it)", err)
			}
			if got != string(want) {
				t.Fatalf("decisions differ from %s:\n%s", path, lineDiff(string(want), got))
			}
		})
	}
}

// goldenReport decides the snapshots in Berlin and in New York and writes
// one line per snapshot, newest first: its ID, its time in UTC, then for
// each zone its local time, weekday, ISO week and the decision.
func goldenReport(t *testing.T, p RetentionPolicy, snapshots []RetentionSnapshot) string {
	t.Helper()
	zones := []*time.Location{mustZone(t, "Europe/Berlin"), mustZone(t, "America/New_York")}
	var decided [][]RetentionDecision
	for _, loc := range zones {
		d, err := DecideRetention(snapshots, p, loc)
		if err != nil {
			t.Fatal(err)
		}
		decided = append(decided, d)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", p)
	header := fmt.Sprintf("# %-4s  %-17s  %-15s", "id", "utc", "marks")
	for _, loc := range zones {
		header += fmt.Sprintf("  %-37s  %-28s", loc.String(), "decision")
	}
	b.WriteString(strings.TrimRight(header, " ") + "\n")
	for i := range decided[0] {
		s := decided[0][i].Snapshot
		var marks []string
		if s.Pinned {
			marks = append(marks, "pinned")
		}
		if s.VerifyFailed {
			marks = append(marks, "failed")
		}
		if len(s.Tags) > 0 {
			marks = append(marks, "tags:"+strings.Join(s.Tags, ","))
		}
		line := fmt.Sprintf("%-6s  %-17s  %-15s", s.ID, s.Time.UTC().Format("2006-01-02 15:04Z"), strings.Join(marks, " "))
		for z, loc := range zones {
			d := decided[z][i]
			if d.Snapshot.ID != s.ID {
				t.Fatalf("zones order the snapshots differently: %s and %s", s.ID, d.Snapshot.ID)
			}
			local := s.Time.In(loc)
			year, week := local.ISOWeek()
			when := fmt.Sprintf("%s W%d-%02d", local.Format("Mon 2006-01-02 15:04 MST"), year, week)
			line += fmt.Sprintf("  %-37s  %-28s", when, goldenVerdict(d))
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	return b.String()
}

func goldenVerdict(d RetentionDecision) string {
	if !d.Keep {
		return "forget"
	}
	reasons := make([]string, len(d.Reasons))
	for i, r := range d.Reasons {
		reasons[i] = string(r)
	}
	return "keep " + strings.Join(reasons, ",")
}

// lineDiff lists the lines that differ between want and got.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n want %s\n got  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
