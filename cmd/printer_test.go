package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// inZone makes loc the local time zone until the test ends.
func inZone(t *testing.T, loc *time.Location) {
	t.Helper()
	saved := time.Local
	time.Local = loc
	t.Cleanup(func() { time.Local = saved })
}

// Human output prints every instant in local time, whatever zone it was
// read in; JSON prints it in UTC.
func TestTimesLocalForPeopleUTCInJSON(t *testing.T) {
	inZone(t, time.FixedZone("IST", 5*60*60+30*60))
	instant := time.Date(2026, 12, 1, 20, 45, 7, 0, time.UTC)
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"read in UTC", instant},
		{"read in another zone", instant.In(time.FixedZone("PST", -8*60*60))},
		{"read in local time", instant.Local()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, want := humanTime(tc.at), "2026-12-02 02:15:07"; got != want {
				t.Errorf("humanTime = %q, want %q", got, want)
			}
			doc, err := json.Marshal(toRunJSON(pass.Run{ID: 1, StartedAt: tc.at}))
			if err != nil {
				t.Fatal(err)
			}
			if want := `"started_at":"2026-12-01T20:45:07Z"`; !strings.Contains(string(doc), want) {
				t.Errorf("JSON %s lacks %s", doc, want)
			}
		})
	}
}

// A run's error is shown as [class/code], or [code] when it has no class:
// never with an empty class before the slash.
func TestDescribeRunShowsOnlyThePresentClass(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  pass.Run
		want string
	}{
		{"partial failure", pass.Run{Status: pass.StatusPartialFailure, ErrorCode: pass.CodeObjectsSkipped, Message: "2 objects skipped"},
			"partial_failure [OBJECTS_SKIPPED]: 2 objects skipped"},
		{"failure with a class", pass.Run{Status: pass.StatusFailed, ErrorClass: pass.ClassSource, ErrorCode: "ALL_SOURCES_FAILED"},
			"failed [source/ALL_SOURCES_FAILED]"},
		{"success", pass.Run{Status: pass.StatusSucceeded}, "succeeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeRun(tc.run); got != tc.want {
				t.Errorf("describeRun = %q, want %q", got, tc.want)
			}
		})
	}
}

// A command stopped by a signal says it was interrupted, whatever wrapped
// the cancellation, and exits 130.
func TestInterruptedCommandSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"bare", context.Canceled},
		{"wrapped by a command", fmt.Errorf("backup: %w", context.Canceled)},
		{"wrapped twice", fmt.Errorf("restore: read pack 1f: %w", fmt.Errorf("open: %w", context.Canceled))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorMessage(tc.err); got != "interrupted" {
				t.Errorf("errorMessage = %q, want %q", got, "interrupted")
			}
			if code := exitCode(tc.err); code != ExitInterrupted {
				t.Errorf("exit %d, want %d", code, ExitInterrupted)
			}
		})
	}
}

// A run that cannot be queued because another is in the way is one line
// that names that run and its state, with exit 4.
func TestJobErrorNamesTheRunInTheWay(t *testing.T) {
	active := &db.ActiveRunError{Job: "home-daily", RunID: 12, Status: pass.StatusRunning}
	err := jobError(fmt.Errorf("job home-daily: %w", fmt.Errorf("queue run for job home-daily: %w", active)))
	if code := exitCode(err); code != ExitConflict {
		t.Errorf("exit %d, want %d", code, ExitConflict)
	}
	if !errors.Is(err, db.ErrActive) {
		t.Errorf("%v is not ErrActive", err)
	}
	msg := errorMessage(err)
	if want := "job home-daily already has an active run: run 12, running; "; !strings.HasPrefix(msg, want) {
		t.Errorf("message %q does not start with %q", msg, want)
	}
	if n := strings.Count(msg, "home-daily"); n != 1 || strings.Contains(msg, "queue run") {
		t.Errorf("message %q repeats itself (job named %d times)", msg, n)
	}
}
