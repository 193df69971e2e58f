package cmd

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The flag has its own name because other tests of package cmd may define -update.
var updateScheduleGolden = flag.Bool("update-schedule-golden", false, "rewrite testdata/schedule/preview/*.golden from the current output")

// runSchedule runs "nightjar ARGS..." as Main does, with the app's real
// settings and the schedule command, and returns what Main would print and
// exit with.
func runSchedule(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp(&out, &errOut)
	code = ExitOK
	if err := app.Run(commandLine(append([]string{"nightjar"}, args...), app.Commands)); err != nil {
		code = exitCode(err)
		errOut.WriteString("nightjar: " + errorMessage(err) + "\n")
	}
	return out.String(), errOut.String(), code
}

func TestSchedulePreviewGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{"berlin-spring-daily", []string{"schedule", "preview", "daily 02:30", "--tz", "Europe/Berlin", "--from", "2026-03-27T12:00:00Z", "--count", "4"}},
		{"berlin-autumn-hourly", []string{"schedule", "preview", "--tz", "Europe/Berlin", "--from=2026-10-24T23:00:00Z", "--count", "5", "hourly :30"}},
		{"apia-lost-day", []string{"schedule", "preview", "daily 02:00", "--tz=Pacific/Apia", "--from", "2011-12-28T12:00:00Z", "--count", "4"}},
		{"cron-weekdays-utc", []string{"schedule", "preview", "cron */15 9-17 * * mon-fri", "--from", "2026-03-27T17:00:00Z", "--count", "4"}},
		{"unquoted-spec", []string{"schedule", "preview", "--from", "2026-01-30T00:00:00Z", "--count", "3", "every", "3", "days", "02:00"}},
		{"manual", []string{"schedule", "preview", "manual", "--from", "2026-01-01T00:00:00Z"}},
		{"json", []string{"schedule", "preview", "weekly sat,sun 22:00", "--tz", "America/New_York", "--from", "2026-03-01T00:00:00Z", "--count", "3", "--json"}},
		{"json-manual", []string{"schedule", "preview", "--json", "--from", "2026-01-01T00:00:00Z", "manual"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runSchedule(t, c.args...)
			if code != ExitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			golden := filepath.Join("..", "testdata", "schedule", "preview", c.name+".golden")
			if *updateScheduleGolden {
				if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd -run TestSchedulePreviewGolden -update-schedule-golden)", err)
			}
			if stdout != string(want) {
				t.Errorf("output differs from %s:\n--- got\n%s--- want\n%s", golden, stdout, want)
			}
		})
	}
}

func TestSchedulePreviewJSONShape(t *testing.T) {
	stdout, _, code := runSchedule(t, "schedule", "preview", "daily 02:30", "--tz", "Europe/Berlin", "--from", "2026-03-28T12:00:00Z", "--count", "2", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc) != 2 || doc["description"] != "daily at 02:30 (Europe/Berlin)" {
		t.Errorf("document %v, want exactly description and slots", doc)
	}
	slots, _ := doc["slots"].([]any)
	if len(slots) != 2 || slots[0] != "2026-03-29T01:00:00Z" || slots[1] != "2026-03-30T00:30:00Z" {
		t.Errorf("slots %v", slots)
	}
}

func TestSchedulePreviewDefaultsToNow(t *testing.T) {
	stdout, _, code := runSchedule(t, "schedule", "preview", "every 1m", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var doc previewJSON
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Slots) != 10 {
		t.Errorf("%d slots by default, want 10", len(doc.Slots))
	}
}

func TestSchedulePreviewRejectsBadInputWithExit2(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no spec", []string{"schedule", "preview"}, `nightjar: schedule preview needs a schedule spec, such as: nightjar schedule preview "daily 02:00" --tz Europe/Berlin`},
		{"bad spec", []string{"schedule", "preview", "daily 25:00"}, `nightjar: schedule "daily 25:00": time of day "25:00": write it as HH:MM from 00:00 to 23:59, such as 02:00`},
		{"never fires", []string{"schedule", "preview", "cron 0 0 30 2 *"}, `nightjar: schedule "cron 0 0 30 2 *": the schedule never fires: February has no 30th`},
		{"seconds field", []string{"schedule", "preview", "cron 0 0 0 * * *"}, "a seconds field is not supported"},
		{"unknown zone", []string{"schedule", "preview", "daily 02:00", "--tz", "Europe/Berln"}, `nightjar: --tz: unknown time zone "Europe/Berln": name an IANA zone such as "Europe/Berlin", or "UTC"`},
		{"local zone", []string{"schedule", "preview", "daily 02:00", "--tz", "Local"}, `nightjar: --tz: time zone "Local" is the machine's own zone`},
		{"bad from", []string{"schedule", "preview", "daily 02:00", "--from", "tomorrow"}, `nightjar: --from "tomorrow" is not an RFC 3339 time`},
		{"zero count", []string{"schedule", "preview", "daily 02:00", "--count", "0"}, "nightjar: --count 0 is not from 1 to 1000"},
		{"bad count after spec", []string{"schedule", "preview", "daily 02:00", "--count", "many"}, `invalid value "many" for flag -count`},
		{"unknown flag", []string{"schedule", "preview", "daily 02:00", "--zone", "UTC"}, "nightjar: flag provided but not defined: -zone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runSchedule(t, c.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q, want one line containing %q", stderr, c.want)
			}
		})
	}
}
