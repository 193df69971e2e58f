package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func recurring(t *testing.T, name string, kind WindowKind, spec, zone, length string, jobs ...string) Window {
	t.Helper()
	d, err := ParseDuration(length)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewRecurringWindow(name, kind, mustParse(t, spec, mustZone(t, zone)), d, jobs)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func oneTime(t *testing.T, name string, kind WindowKind, from, until string, jobs ...string) Window {
	t.Helper()
	w, err := NewOneTimeWindow(name, kind, mustTime(t, from), mustTime(t, until), jobs)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestRecurringWindowLooksBackToAnEarlierDay(t *testing.T) {
	// 2026-06-13 is a Saturday.
	w := recurring(t, "weekend", Blackout, "weekly sat 22:00", "UTC", "12h")
	for at, want := range map[string]bool{
		"2026-06-13T21:59:59Z": false,
		"2026-06-13T22:00:00Z": true,
		"2026-06-14T09:00:00Z": true, // Sunday morning, opened the evening before
		"2026-06-14T09:59:59Z": true,
		"2026-06-14T10:00:00Z": false, // the end is outside
		"2026-06-17T09:00:00Z": false,
	} {
		if got := w.Contains(mustTime(t, at)); got != want {
			t.Errorf("Contains(%s) = %v, want %v", at, got, want)
		}
	}
}

func TestWindowLengthIsElapsedTime(t *testing.T) {
	// A 6-hour window opening 23:00 on the night the clocks go back in
	// Berlin closes six real hours later, at 04:00 CET, not 05:00.
	w := recurring(t, "night", Blackout, "daily 23:00", "Europe/Berlin", "6h")
	if !w.Contains(mustTime(t, "2026-10-25T03:59:00+01:00")) || w.Contains(mustTime(t, "2026-10-25T04:00:00+01:00")) {
		t.Error("the window does not close six real hours after it opened")
	}
}

func TestFirstAllowed(t *testing.T) {
	weekend := recurring(t, "weekend", Blackout, "weekly sat 22:00", "UTC", "12h")
	nights := recurring(t, "nights", Allowed, "daily 22:00", "UTC", "8h", "db")
	freeze := oneTime(t, "freeze", Blackout, "2026-06-15T22:00:00Z", "2026-06-15T23:30:00Z")
	windows := []Window{weekend, nights, freeze}
	cases := []struct {
		name, job, slot, want string
	}{
		{"a free slot runs at once", "files", "2026-06-10T12:00:00Z", "2026-06-10T12:00:00Z"},
		{"a blackout postpones to its end", "files", "2026-06-13T23:00:00Z", "2026-06-14T10:00:00Z"},
		{"a blackout that started the day before still postpones", "files", "2026-06-14T09:00:00Z", "2026-06-14T10:00:00Z"},
		{"outside the job's allowed window waits for it to open", "db", "2026-06-10T12:00:00Z", "2026-06-10T22:00:00Z"},
		{"inside the allowed window, past midnight", "db", "2026-06-11T05:00:00Z", "2026-06-11T05:00:00Z"},
		{"an allowed window for db does not hold back other jobs", "files", "2026-06-11T07:00:00Z", "2026-06-11T07:00:00Z"},
		{"allowed and blackout together: the first instant both permit", "db", "2026-06-15T12:00:00Z", "2026-06-15T23:30:00Z"},
		{"a blackout covering the whole allowed night pushes to the next night", "db", "2026-06-13T12:00:00Z", "2026-06-14T22:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := FirstAllowed(c.job, mustTime(t, c.slot), windows)
			if err != nil {
				t.Fatal(err)
			}
			if want := mustTime(t, c.want); !got.Equal(want) {
				t.Errorf("FirstAllowed(%s, %s) = %s, want %s", c.job, c.slot, got.UTC().Format(time.RFC3339), c.want)
			}
		})
	}
}

func TestFirstAllowedGivesUpAfter31Days(t *testing.T) {
	slot := mustTime(t, "2026-06-10T12:00:00Z")
	cases := map[string][]Window{
		"blackout covers all time":                 {recurring(t, "always", Blackout, "every 1h", "UTC", "1h")},
		"a freeze ending 31.5 days after the slot": {oneTime(t, "freeze", Blackout, "2026-06-01T00:00:00Z", "2026-07-12T00:00:00Z")},
		"the only allowed window is over": {
			oneTime(t, "once", Allowed, "2026-06-01T00:00:00Z", "2026-06-02T00:00:00Z", "db"),
		},
	}
	for name, windows := range cases {
		_, err := FirstAllowed("db", slot, windows)
		if !errors.Is(err, ErrNoFreeInstant) {
			t.Errorf("%s: error %v, want ErrNoFreeInstant", name, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), `job "db", slot 2026-06-10T12:00:00Z: no instant within 31 days where the job may run`) {
			t.Errorf("%s: message %q", name, err)
		}
		checkMessage(t, err.Error())
	}
	// A freeze that ends 30.5 days after the slot is long but legal.
	got, err := FirstAllowed("db", slot, []Window{oneTime(t, "freeze", Blackout, "2026-06-01T00:00:00Z", "2026-07-11T00:00:00Z")})
	if err != nil || !got.Equal(mustTime(t, "2026-07-11T00:00:00Z")) {
		t.Errorf("freeze ending within 31 days: %s, %v", got, err)
	}
}

func TestWindowValidation(t *testing.T) {
	daily := mustParse(t, "daily 22:00", nil)
	from, until := mustTime(t, "2026-06-01T00:00:00Z"), mustTime(t, "2026-06-02T00:00:00Z")
	if _, err := ParseWindowKind("sometimes"); err == nil || err.Error() != `window kind "sometimes" is not one of blackout, allowed` {
		t.Errorf("ParseWindowKind: %v", err)
	}
	for name, err := range map[string]error{
		`window "w": window kind "" is not one of blackout, allowed`:                   second(NewRecurringWindow("w", "", daily, time.Hour, nil)),
		`window "w": a recurring window needs a start schedule with slots, not manual`: second(NewRecurringWindow("w", Blackout, Schedule{}, time.Hour, nil)),
		`window "w": length 0s must be longer than zero`:                               second(NewRecurringWindow("w", Blackout, daily, 0, nil)),
		`window "w": end 2026-06-01T00:00:00Z is not after start 2026-06-02T00:00:00Z`: second(NewOneTimeWindow("w", Allowed, until, from, nil)),
		`window "w": window kind "maybe" is not one of blackout, allowed`:              second(NewOneTimeWindow("w", "maybe", from, until, nil)),
		`window "w": end 2026-06-01T00:00:00Z is not after start 2026-06-01T00:00:00Z`: second(NewOneTimeWindow("w", Allowed, from, from, nil)),
	} {
		if err == nil || err.Error() != name {
			t.Errorf("got %v, want %s", err, name)
		}
	}
	w := recurring(t, "w", Allowed, "daily 22:00", "UTC", "1h", "a", "b")
	if w.Name() != "w" || w.Kind() != Allowed || !w.AppliesTo("a") || w.AppliesTo("c") {
		t.Errorf("window accessors: %q %q %v %v", w.Name(), w.Kind(), w.AppliesTo("a"), w.AppliesTo("c"))
	}
	if !recurring(t, "all", Blackout, "daily 22:00", "UTC", "1h").AppliesTo("anything") {
		t.Error("a window that names no job does not apply to every job")
	}
}

func second(_ Window, err error) error { return err }
