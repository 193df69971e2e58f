package schedule

import (
	"strings"
	"testing"
	"time"
	"unicode"
)

func TestParseAcceptsEveryFormOfTheIssue(t *testing.T) {
	berlin := mustZone(t, "Europe/Berlin")
	cases := []struct{ spec, description string }{
		{"manual", "manual: runs only on request"},
		{"every 6h", "every 6 hours of elapsed time"},
		{"every 90m", "every 90 minutes of elapsed time"},
		{"hourly :30", "hourly at :30 (Europe/Berlin)"},
		{"every 2 hours :15", "every 2 hours at :15, from 00:15 to 22:15 (Europe/Berlin)"},
		{"daily 02:00", "daily at 02:00 (Europe/Berlin)"},
		{"every 3 days 02:00", "every 3 days at 02:00, counting days from 1970-01-01 (Europe/Berlin)"},
		{"weekly sat,sun 22:00", "weekly on Saturday and Sunday at 22:00 (Europe/Berlin)"},
		{"every 2 weeks mon 01:00", "every 2 weeks on Monday at 01:00, counting weeks from Monday 1970-01-05 (Europe/Berlin)"},
		{"monthly 1,-1 03:00", "monthly on the 1st and the last day at 03:00 (Europe/Berlin)"},
		{"cron */15 9-17 * * mon-fri", "every 15 minutes from 09:00 to 17:45 on Monday to Friday (Europe/Berlin)"},
		{"cron @daily", "at 00:00 every day (Europe/Berlin)"},
	}
	for _, c := range cases {
		s, err := Parse(c.spec, berlin)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.spec, err)
			continue
		}
		if got := s.Description(); got != c.description {
			t.Errorf("Parse(%q).Description() = %q, want %q", c.spec, got, c.description)
		}
	}
}

func TestDescriptions(t *testing.T) {
	cases := []struct{ spec, want string }{
		{"hourly", "hourly at :00 (UTC)"},
		{"every 1 hour :05", "hourly at :05 (UTC)"},
		{"every 6 hours :15", "every 6 hours at 00:15, 06:15, 12:15 and 18:15 (UTC)"},
		{"every 5 hours :00", "every 5 hours at :00, counting hours of the local clock from 1970-01-01 00:00 (UTC)"},
		{"every 1d", "every 1 day of elapsed time"},
		{"weekly mon-fri 19:30", "weekly on Monday to Friday at 19:30 (UTC)"},
		{"weekly Sunday,wednesday 7:05", "weekly on Wednesday and Sunday at 07:05 (UTC)"},
		{"monthly 31 03:00", "monthly on the 31st at 03:00 (UTC); note: February, April, June, September and November have no 31st (write -1 for the last day of every month)"},
		{"monthly 15,30 03:00", "monthly on the 15th and the 30th at 03:00 (UTC); note: February has no 30th (write -1 for the last day of every month)"},
		{"monthly -2 03:00", "monthly on the 2nd-to-last day at 03:00 (UTC)"},
		{"cron 0 0 13 * 5", "at 00:00 on the 13th of the month or on Friday (UTC)"},
		{"cron 30 2 * * *", "at 02:30 every day (UTC)"},
		{"cron 0 1-3 * * *", "at 01:00, 02:00 and 03:00 every day (UTC)"},
		{"cron 30 * * * *", "every hour at :30 (UTC)"},
		{"cron 0 */2 * * *", "every 2 hours at :00, from 00:00 to 22:00 (UTC)"},
		{"cron 0 9-17 * * 1-5", "every hour at :00 from 09:00 to 17:00 on Monday to Friday (UTC)"},
		{"cron * * * * *", "every minute (UTC)"},
		{"cron * 2 * * *", "every minute from 02:00 to 02:59 (UTC)"},
		{"cron 0,20,40 1-3,5 * * *", "at minutes 0, 20 and 40 past hours 1 to 3 and 5 (UTC)"},
		{"cron 0 0 1 1,7 *", "at 00:00 on the 1st of the month in January and July (UTC)"},
		{"cron 0 0 * mar-may sat-sun", "at 00:00 on Saturday and Sunday in March to May (UTC)"},
		{"cron 0 0 29 2 *", "at 00:00 on the 29th of the month in February (UTC); note: February has no 29th except in leap years; it runs only in leap years"},
		{"cron @hourly", "every hour at :00 (UTC)"},
		{"cron @weekly", "at 00:00 on Sunday (UTC)"},
	}
	for _, c := range cases {
		if got := mustParse(t, c.spec, nil).Description(); got != c.want {
			t.Errorf("Parse(%q).Description()\n got %q\nwant %q", c.spec, got, c.want)
		}
	}
}

func TestParseRejectsWithAMessageNamingTheValue(t *testing.T) {
	cases := []struct{ spec, want string }{
		{"", "the schedule is empty"},
		{"sometimes", `unknown schedule kind "sometimes": use manual, every, hourly, daily, weekly, monthly or cron`},
		{"0 * * * *", `a cron expression needs the word cron in front, such as "cron 0 * * * *"`},
		{"manual please", `manual takes nothing after it, got "please"`},
		{"every 30s", `interval "30s" is shorter than the minimum of 1 minute`},
		{"every 0m", `duration "0m" must be longer than zero`},
		{"every 90s", `interval "90s" is not a whole number of minutes`},
		{"every 6", `interval "6" has no unit`},
		{"every 1.5h", `duration "1.5h": write whole numbers`},
		{"every 6 hours", `every 6 hours needs a minute, such as "every 6 hours :00"; for a fixed elapsed time write "every 6h"`},
		{"every 25 hours :00", "every 25 hours: the count must be from 1 to 24"},
		{"every 0 days 02:00", "every 0 days: the count must be from 1 to 365"},
		{"every 53 weeks mon 01:00", "every 53 weeks: the count must be from 1 to 52"},
		{"every 15 minutes", `write "every 15m" (elapsed time) or a cron expression such as "cron */15 * * * *"`},
		{"every 2 fortnights 01:00", `unit "fortnights" after every 2 is not one of hours, days, weeks`},
		{"hourly 30", `minute "30": write the minute past the hour as :MM`},
		{"hourly :60", `minute ":60": write the minute past the hour as :MM from :00 to :59`},
		{"daily 24:00", `time of day "24:00": write it as HH:MM from 00:00 to 23:59`},
		{"daily 2pm", `time of day "2pm"`},
		{"daily", `daily takes one time of day`},
		{"weekly sa 22:00", `weekday "sa": use mon, tue, wed, thu, fri, sat, sun`},
		{"weekly sun-mon 22:00", `weekday range "sun-mon" runs backwards`},
		{"monthly 0 03:00", `day of month "0": use 1 to 31, or -1 (the last day) to -31`},
		{"monthly 32 03:00", `day of month "32"`},
		{"cron 0 0 0 * * *", "cron takes five fields (minute, hour, day-of-month, month, day-of-week), got 6: a seconds field is not supported"},
		{"cron 0 0 0 * * * 2026", "got 7: seconds and year fields are not supported"},
		{"cron 0 0 * *", "cron takes five fields (minute, hour, day-of-month, month, day-of-week) or a macro such as @daily, got 4"},
		{"cron @reboot", `cron "@reboot" is not one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly`},
		{"cron 60 * * * *", `minute field "60": 60 is out of range: use a number from 0 to 59`},
		{"cron * 24 * * *", `hour field "24": 24 is out of range: use a number from 0 to 23`},
		{"cron * * 0 * *", `day-of-month field "0": 0 is out of range: use a number from 1 to 31`},
		{"cron * * * 13 *", `month field "13": 13 is out of range: use a number from 1 to 12 or a name from jan to dec`},
		{"cron * * * * 8", `day-of-week field "8": 8 is out of range: use a number from 0 to 7 (0 and 7 are sunday) or a name from sun to sat`},
		{"cron * * * * funday", `day-of-week field "funday": "funday" is not a number from 0 to 7`},
		{"cron 5-1 * * * *", `minute field "5-1": range 5-1 runs backwards`},
		{"cron */0 * * * *", `minute field "*/0": step "0" is not a whole number from 1 to 59`},
		{"cron */90 * * * *", `minute field "*/90": step 90 is larger than the field's range 0-59: for every 90 minutes of elapsed time write "every 90m"`},
		{"cron 1,,2 * * * *", `minute field "1,,2": empty item in the list`},
		{"cron 0 0 L * *", `day-of-month field "l"`},
		{"cron 0 0 30 2 *", "the schedule never fires: February has no 30th"},
		{"cron 0 0 31 4,6 *", "the schedule never fires: April and June have no 31st"},
	}
	for _, c := range cases {
		_, err := Parse(c.spec, nil)
		if err == nil {
			t.Errorf("Parse(%q) succeeded, want an error containing %q", c.spec, c.want)
			continue
		}
		msg := err.Error()
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(c.want)) {
			t.Errorf("Parse(%q) error\n got %q\nwant it to contain %q", c.spec, msg, c.want)
		}
		checkMessage(t, msg)
	}
}

// checkMessage holds an error message to the house style: one line,
// starting in lower case, naming the spec it rejects.
func checkMessage(t *testing.T, msg string) {
	t.Helper()
	if msg == "" || strings.ContainsAny(msg, "\n\r") || unicode.IsUpper(rune(msg[0])) || strings.HasSuffix(msg, ".") {
		t.Errorf("error %q is not one lower-case line without a final period", msg)
	}
}

func TestParseNormalizesSpelling(t *testing.T) {
	s := mustParse(t, "  Weekly   SAT,Sun  22:00 ", nil)
	if s.String() != "weekly sat,sun 22:00" {
		t.Errorf("String() = %q", s.String())
	}
	if s.Location() != time.UTC {
		t.Errorf("a schedule without a zone runs in %s, want UTC", s.Location())
	}
}

func TestParseRefusesTheMachinesZone(t *testing.T) {
	if _, err := Parse("daily 02:00", time.Local); err == nil {
		t.Error("Parse accepted time.Local")
	}
}

func TestLoadLocation(t *testing.T) {
	for _, name := range []string{"", "UTC"} {
		if loc, err := LoadLocation(name); err != nil || loc != time.UTC {
			t.Errorf("LoadLocation(%q) = %v, %v, want UTC", name, loc, err)
		}
	}
	if loc, err := LoadLocation("Europe/Berlin"); err != nil || loc.String() != "Europe/Berlin" {
		t.Errorf("LoadLocation(Europe/Berlin) = %v, %v", loc, err)
	}
	for name, want := range map[string]string{
		"Europe/Berln": `unknown time zone "Europe/Berln": name an IANA zone such as "Europe/Berlin", or "UTC"`,
		"Local":        `time zone "Local" is the machine's own zone`,
		"../etc":       `unknown time zone "../etc"`,
	} {
		_, err := LoadLocation(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadLocation(%q) error %v, want %q", name, err, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"6h": 6 * time.Hour, "90m": 90 * time.Minute, "26h": 26 * time.Hour, "1d": 24 * time.Hour,
		"1w": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "1h30m": 90 * time.Minute, "30s": 30 * time.Second,
		" 2H ": 2 * time.Hour,
	}
	for text, want := range good {
		if got, err := ParseDuration(text); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v, want %v", text, got, err, want)
		}
	}
	for _, text := range []string{"", "6", "h", "1.5h", "-1h", "0h", "0d0h", "1h1d", "1h1h", "6 h", "1y", "1ms", "99999999999999999999h", "9999999w"} {
		_, err := ParseDuration(text)
		if err == nil {
			t.Errorf("ParseDuration(%q) succeeded", text)
			continue
		}
		checkMessage(t, err.Error())
	}
}
