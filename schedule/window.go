package schedule

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// WindowKind says whether a maintenance window forbids or permits runs.
type WindowKind string

const (
	// Blackout windows forbid runs from starting inside them.
	Blackout WindowKind = "blackout"
	// Allowed windows are the only times their jobs may start.
	Allowed WindowKind = "allowed"
)

// ParseWindowKind parses "blackout" or "allowed".
func ParseWindowKind(text string) (WindowKind, error) {
	switch k := WindowKind(text); k {
	case Blackout, Allowed:
		return k, nil
	}
	return "", fmt.Errorf("window kind %q is not one of blackout, allowed", text)
}

// MaxPostponement is how far FirstAllowed looks for an instant where a job may run.
const MaxPostponement = 31 * 24 * time.Hour

// ErrNoFreeInstant is returned by FirstAllowed when the windows leave a job no instant to run within MaxPostponement.
var ErrNoFreeInstant = errors.New("no instant within 31 days where the job may run")

// Window is a maintenance window: recurring (a start schedule and a length) or one-time (two instants).
type Window struct {
	name string
	kind WindowKind
	jobs []string
	// recurring windows open at every slot of start and last length;
	// one-time windows last from from to until.
	recurring bool
	start     Schedule      // recurring: when each occurrence starts
	length    time.Duration // recurring: how long each occurrence lasts, in elapsed time
	from      time.Time     // one-time: the first instant inside
	until     time.Time     // one-time: the first instant after
}

// NewRecurringWindow returns a window that opens at every slot of start and stays open for length; no jobs means all jobs.
func NewRecurringWindow(name string, kind WindowKind, start Schedule, length time.Duration, jobs []string) (Window, error) {
	if _, err := ParseWindowKind(string(kind)); err != nil {
		return Window{}, fmt.Errorf("window %q: %w", name, err)
	}
	if start.kind == kindManual {
		return Window{}, fmt.Errorf("window %q: a recurring window needs a start schedule with slots, not manual", name)
	}
	if length <= 0 {
		return Window{}, fmt.Errorf("window %q: length %s must be longer than zero", name, length)
	}
	return Window{name: name, kind: kind, jobs: slices.Clone(jobs), recurring: true, start: start, length: length}, nil
}

// NewOneTimeWindow returns a window open from from (inclusive) to until (exclusive); no jobs means all jobs.
func NewOneTimeWindow(name string, kind WindowKind, from, until time.Time, jobs []string) (Window, error) {
	if _, err := ParseWindowKind(string(kind)); err != nil {
		return Window{}, fmt.Errorf("window %q: %w", name, err)
	}
	if !until.After(from) {
		return Window{}, fmt.Errorf("window %q: end %s is not after start %s", name, until.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	return Window{name: name, kind: kind, jobs: slices.Clone(jobs), from: from, until: until}, nil
}

// Name returns the window's name.
func (w Window) Name() string { return w.name }

// Kind returns whether the window is a blackout or an allowed window.
func (w Window) Kind() WindowKind { return w.kind }

// AppliesTo reports whether the window concerns job: it names the job, or names no job at all.
func (w Window) AppliesTo(job string) bool {
	return len(w.jobs) == 0 || slices.Contains(w.jobs, job)
}

// Contains reports whether t is inside the window.
func (w Window) Contains(t time.Time) bool {
	_, ok := w.occurrenceAt(t)
	return ok
}

// occurrenceAt returns the end of the occurrence of the window that
// contains t. For a recurring window the occurrence may have started on an
// earlier day: the search looks back one window length, so a 12-hour window
// opening Saturday 22:00 still covers Sunday 09:00.
func (w Window) occurrenceAt(t time.Time) (end time.Time, ok bool) {
	if !w.recurring {
		return w.until, !t.Before(w.from) && t.Before(w.until)
	}
	opened, ok := w.start.Next(t.Add(-w.length))
	if !ok || opened.After(t) {
		return time.Time{}, false
	}
	return opened.Add(w.length), true
}

// nextOpening returns the first instant after t at which the window opens.
func (w Window) nextOpening(t time.Time) (time.Time, bool) {
	if !w.recurring {
		return w.from, w.from.After(t)
	}
	return w.start.Next(t)
}

// FirstAllowed returns the first instant at or after slot where job may start: outside every blackout window
// and, if any allowed window applies to the job, inside one. Windows for other jobs are ignored.
func FirstAllowed(job string, slot time.Time, windows []Window) (time.Time, error) {
	var blackouts, allowed []Window
	for _, w := range windows {
		switch {
		case !w.AppliesTo(job):
		case w.kind == Blackout:
			blackouts = append(blackouts, w)
		case w.kind == Allowed:
			allowed = append(allowed, w)
		}
	}
	limit := slot.Add(MaxPostponement)
	for t := slot; !t.After(limit); {
		later := t
		for _, w := range blackouts {
			if end, in := w.occurrenceAt(t); in && end.After(later) {
				later = end
			}
		}
		if later.Equal(t) && len(allowed) > 0 && !slices.ContainsFunc(allowed, func(w Window) bool { return w.Contains(t) }) {
			opening, found := time.Time{}, false
			for _, w := range allowed {
				if at, ok := w.nextOpening(t); ok && (!found || at.Before(opening)) {
					opening, found = at, true
				}
			}
			if !found {
				break
			}
			later = opening
		}
		if later.Equal(t) {
			return t.In(slot.Location()), nil
		}
		t = later
	}
	return time.Time{}, fmt.Errorf("job %q, slot %s: %w: every instant up to %s is in a blackout window or outside the job's allowed windows; change the windows",
		job, slot.Format(time.RFC3339), ErrNoFreeInstant, limit.Format(time.RFC3339))
}
