package schedule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// handComputed are next slots worked out from a calendar, not from this
// package: 2026-01-01 is a Thursday; 2028 is a leap year; Asia/Kolkata is
// +05:30, Asia/Kathmandu +05:45, Asia/Tokyo +09:00, Pacific/Kiritimati
// +14:00 all year; America/Los_Angeles is -08:00 in January; New York's
// changes are listed in dst_test.go.
var handComputed = []struct {
	expr, zone, from string
	want             []string
}{
	{"* * * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z", "2026-01-01T00:03:00Z"}},
	{"*/15 * * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T00:15:00Z", "2026-01-01T00:30:00Z", "2026-01-01T00:45:00Z"}},
	{"5/15 * * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T00:05:00Z", "2026-01-01T00:20:00Z", "2026-01-01T00:35:00Z"}},
	{"0 * * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"}},
	{"30 2 * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T02:30:00Z", "2026-01-02T02:30:00Z", "2026-01-03T02:30:00Z"}},
	{"0 0 * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"}},
	{"0 0 1 * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"}},
	{"0 0 1 1 *", "UTC", "2026-01-01T00:00:00Z", []string{"2027-01-01T00:00:00Z", "2028-01-01T00:00:00Z", "2029-01-01T00:00:00Z"}},
	{"0 0 * * 0", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"}},
	{"0 0 * * 7", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"}},
	{"0 9 * * mon-fri", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T09:00:00Z", "2026-01-02T09:00:00Z", "2026-01-05T09:00:00Z"}},
	{"0 22 * * sat,sun", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-03T22:00:00Z", "2026-01-04T22:00:00Z", "2026-01-10T22:00:00Z"}},
	{"0 0 13 * 5", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-02T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-13T00:00:00Z"}},
	{"0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z", "2036-02-29T00:00:00Z"}},
	{"0 0 31 * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-31T00:00:00Z", "2026-03-31T00:00:00Z", "2026-05-31T00:00:00Z"}},
	{"0 12 * jan-mar 1", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-05T12:00:00Z", "2026-01-12T12:00:00Z", "2026-01-19T12:00:00Z"}},
	{"15 10 * * *", "UTC", "2026-01-01T10:15:00Z", []string{"2026-01-02T10:15:00Z", "2026-01-03T10:15:00Z", "2026-01-04T10:15:00Z"}},
	{"0,30 9-10 * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T09:00:00Z", "2026-01-01T09:30:00Z", "2026-01-01T10:00:00Z"}},
	{"0 */6 * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T06:00:00Z", "2026-01-01T12:00:00Z", "2026-01-01T18:00:00Z"}},
	{"0 0-23/8 * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T08:00:00Z", "2026-01-01T16:00:00Z", "2026-01-02T00:00:00Z"}},
	{"59 23 31 12 *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-12-31T23:59:00Z", "2027-12-31T23:59:00Z", "2028-12-31T23:59:00Z"}},
	{"0 0 1,15 * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-15T00:00:00Z", "2026-02-01T00:00:00Z", "2026-02-15T00:00:00Z"}},
	{"0 0 * * 1", "UTC", "2026-02-27T12:00:00Z", []string{"2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z", "2026-03-16T00:00:00Z"}},
	{"0 0 28-31 2 *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-02-28T00:00:00Z", "2027-02-28T00:00:00Z", "2028-02-28T00:00:00Z", "2028-02-29T00:00:00Z"}},
	{"0 0 1 */3 *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-04-01T00:00:00Z", "2026-07-01T00:00:00Z", "2026-10-01T00:00:00Z"}},
	{"@hourly", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"}},
	{"@weekly", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z", "2026-01-18T00:00:00Z"}},
	{"@monthly", "UTC", "2026-01-01T00:00:00Z", []string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"}},
	{"@daily", "UTC", "2026-12-31T12:00:00Z", []string{"2027-01-01T00:00:00Z", "2027-01-02T00:00:00Z", "2027-01-03T00:00:00Z"}},
	// Both day fields restricted: odd days or Mondays (the 12th is a Monday).
	{"0 0 */2 * 1", "UTC", "2026-01-10T00:00:00Z", []string{"2026-01-11T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-13T00:00:00Z"}},
	// 1-31 restricts nothing, so only Mondays count.
	{"0 0 1-31 * 1", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-05T00:00:00Z", "2026-01-12T00:00:00Z", "2026-01-19T00:00:00Z"}},
	{"0 0 * * 5-7", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"}},
	{"0 0 * * sat-sun", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-10T00:00:00Z"}},
	{"30 4 1,15 * 5", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T04:30:00Z", "2026-01-02T04:30:00Z", "2026-01-09T04:30:00Z"}},
	{"0 0 30 */2 *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-30T00:00:00Z", "2026-03-30T00:00:00Z", "2026-05-30T00:00:00Z"}},
	// September and November have no 31st.
	{"0 0 31 1-12/2 *", "UTC", "2026-06-01T00:00:00Z", []string{"2026-07-31T00:00:00Z", "2027-01-31T00:00:00Z", "2027-03-31T00:00:00Z"}},
	{"*/20 8-9 * * *", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-01T08:00:00Z", "2026-01-01T08:20:00Z", "2026-01-01T08:40:00Z"}},
	{"0 0 * * *", "UTC", "2026-03-15T17:42:13Z", []string{"2026-03-16T00:00:00Z", "2026-03-17T00:00:00Z", "2026-03-18T00:00:00Z"}},
	{"45 23 * * 6", "UTC", "2026-01-03T23:45:00Z", []string{"2026-01-10T23:45:00Z", "2026-01-17T23:45:00Z", "2026-01-24T23:45:00Z"}},
	{"0 9 * * *", "Asia/Kolkata", "2026-01-01T00:00:00Z", []string{"2026-01-01T03:30:00Z", "2026-01-02T03:30:00Z", "2026-01-03T03:30:00Z"}},
	{"30 * * * *", "Asia/Kolkata", "2026-01-01T00:00:00Z", []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z"}},
	{"0 0 1 * *", "Asia/Tokyo", "2026-01-01T00:00:00Z", []string{"2026-01-31T15:00:00Z", "2026-02-28T15:00:00Z", "2026-03-31T15:00:00Z"}},
	{"0 0 * * *", "America/Los_Angeles", "2026-01-01T00:00:00Z", []string{"2026-01-01T08:00:00Z", "2026-01-02T08:00:00Z", "2026-01-03T08:00:00Z"}},
	{"0 12 * * *", "Pacific/Kiritimati", "2026-01-01T00:00:00Z", []string{"2026-01-01T22:00:00Z", "2026-01-02T22:00:00Z", "2026-01-03T22:00:00Z"}},
	{"0 0 1 1 *", "Asia/Kathmandu", "2026-01-01T00:00:00Z", []string{"2026-12-31T18:15:00Z", "2027-12-31T18:15:00Z", "2028-12-31T18:15:00Z"}},
	// Daylight saving in New York, by the rules in docs/SCHEDULES.md.
	{"30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}},
	{"30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", []string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z", "2026-11-03T06:30:00Z"}},
	// The same three times of day, anchored and repeating, across the
	// repeated hour 01:00-02:00: the anchored list runs once, the */20
	// runs in both hours.
	{"0,20,40 1 * * *", "America/New_York", "2026-11-01T04:00:00Z", []string{"2026-11-01T05:00:00Z", "2026-11-01T05:20:00Z", "2026-11-01T05:40:00Z", "2026-11-02T06:00:00Z"}},
	{"*/20 1 * * *", "America/New_York", "2026-11-01T04:00:00Z", []string{"2026-11-01T05:00:00Z", "2026-11-01T05:20:00Z", "2026-11-01T05:40:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:20:00Z", "2026-11-01T06:40:00Z", "2026-11-02T06:00:00Z"}},
}

func TestCronAgainstHandComputedTable(t *testing.T) {
	for _, c := range handComputed {
		s := mustParse(t, "cron "+c.expr, mustZone(t, c.zone))
		if got := slotsUTC(s, mustTime(t, c.from), len(c.want)); !slices.Equal(got, c.want) {
			t.Errorf("cron %s in %s after %s:\n got %v\nwant %v", c.expr, c.zone, c.from, got, c.want)
		}
	}
}

// randomCron makes a cron expression of the forms people write.
func randomCron(r *rand.Rand) string {
	numeric := func(min, max int) string {
		a := min + r.IntN(max-min+1)
		b := a + r.IntN(max-a+1)
		step := 1 + r.IntN((max-min)/2+1)
		switch r.IntN(9) {
		case 0, 1:
			return "*"
		case 2:
			return fmt.Sprintf("*/%d", step)
		case 3:
			return fmt.Sprint(a)
		case 4:
			return fmt.Sprintf("%d-%d", a, b)
		case 5:
			return fmt.Sprintf("%d-%d/%d", a, b, step)
		case 6:
			return fmt.Sprintf("%d,%d", a, b)
		case 7:
			return fmt.Sprintf("%d/%d", a, step)
		}
		return fmt.Sprintf("%d,%d-%d", a, b, max)
	}
	rarely := func(field string) string {
		if r.IntN(3) == 0 {
			return field
		}
		return "*"
	}
	months := []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	days := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	month, weekday := numeric(1, 12), numeric(0, 7)
	if r.IntN(4) == 0 {
		month = months[r.IntN(12)]
	}
	if r.IntN(4) == 0 {
		i := r.IntN(6)
		weekday = days[i] + "-" + days[i+1+r.IntN(6-i)]
	}
	return strings.Join([]string{numeric(0, 59), numeric(0, 23), rarely(numeric(1, 31)), rarely(month), rarely(weekday)}, " ")
}

// pythonWithCroniter finds a Python that can import croniter (Debian's
// python3-croniter installs into the system python3, which may not be the
// first python3 on PATH).
func pythonWithCroniter() (string, bool) {
	for _, candidate := range []string{"python3", "/usr/bin/python3"} {
		path, err := exec.LookPath(candidate)
		if err == nil && exec.Command(path, "-c", "import croniter").Run() == nil {
			return path, true
		}
	}
	return "", false
}

const croniterScript = `
import json, sys
from datetime import datetime, timezone
import pytz
from croniter import croniter
out = []
for case in json.load(sys.stdin):
    tz = pytz.timezone(case["zone"])
    start = datetime.fromisoformat(case["from"].replace("Z", "+00:00")).astimezone(tz)
    it = croniter(case["expr"], start)
    out.append([it.get_next(datetime).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") for _ in range(case["count"])])
json.dump(out, sys.stdout)
`

// TestCronAgainstCroniter compares a few hundred expressions with
// python3-croniter where it is installed (Debian: apt-get install
// python3-croniter). It compares in UTC, and in Europe/Berlin between the
// spring and autumn changes, because at the changes croniter 1.3.5 and
// nightjar deliberately differ:
//
//   - Spring forward (Berlin 2026-03-29, 02:00-03:00 does not exist):
//     croniter turns "30 2 * * *" into 2026-03-29T00:30Z labelled
//     02:30+02:00, a reading that never existed (it is 01:30 CET, an hour
//     early), then emits 03:30 the same day and 01:30 the next; for
//     "30 * * * *" it emits 00:30Z twice. nightjar runs an anchored slot
//     once, when the gap ends (01:00Z), and a repeating one not at all,
//     keeping the hourly cadence.
//   - Fall back (2026-10-25, 02:00-03:00 twice): croniter runs anchored
//     expressions such as "0 2,3 * * *" and "0 1-3 * * *" in both 02:00
//     hours and then skips a slot on the next day. nightjar runs an anchored
//     slot only at its first occurrence (cronie's rule), and repeating
//     expressions in both hours.
//
// Both behaviours of nightjar are pinned by TestSlotsAcrossRealTransitions.
func TestCronAgainstCroniter(t *testing.T) {
	python, ok := pythonWithCroniter()
	if !ok {
		t.Skip("python3 with croniter is not installed (apt-get install python3-croniter); the hand-computed table still runs")
	}
	type query struct {
		Expr  string `json:"expr"`
		Zone  string `json:"zone"`
		From  string `json:"from"`
		Count int    `json:"count"`
	}
	r := rand.New(rand.NewPCG(2026, 3))
	var queries []query
	for len(queries) < 600 {
		expr := randomCron(r)
		if _, err := Parse("cron "+expr, nil); err != nil {
			continue // never fires; croniter would search forever
		}
		queries = append(queries,
			query{expr, "UTC", "2026-01-01T00:00:00Z", 12},
			// Berlin stays at +02:00 from 2026-03-29 to 2026-10-25.
			query{expr, "Europe/Berlin", "2026-04-01T10:17:00Z", 12})
	}
	input, err := json.Marshal(queries)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-c", croniterScript)
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	output, err := cmd.Output()
	if err != nil {
		t.Fatalf("croniter: %v: %s", err, stderr.String())
	}
	var theirs [][]string
	if err := json.Unmarshal(output, &theirs); err != nil {
		t.Fatal(err)
	}
	summerEnds := mustTime(t, "2026-10-24T00:00:00Z")
	compared := 0
	for i, q := range queries {
		ours := slotsUTC(mustParse(t, "cron "+q.Expr, mustZone(t, q.Zone)), mustTime(t, q.From), q.Count)
		want := theirs[i]
		if q.Zone != "UTC" {
			ours, want = before(t, ours, summerEnds), before(t, want, summerEnds)
		}
		if !slices.Equal(ours, want) {
			t.Errorf("cron %s in %s after %s:\n nightjar %v\n croniter %v", q.Expr, q.Zone, q.From, ours, want)
		}
		compared += len(ours)
	}
	t.Logf("compared %d slots of %d expressions with croniter", compared, len(queries)/2)
}

// before keeps the slots before limit.
func before(t *testing.T, slots []string, limit time.Time) []string {
	var out []string
	for _, s := range slots {
		if mustTime(t, s).Before(limit) {
			out = append(out, s)
		}
	}
	return out
}
