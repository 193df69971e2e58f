package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/redact"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Events: what a Document tells. A finished run's event is its status.
const (
	EventStarted        = "started" // the pass admitted the run and starts it
	EventSucceeded      = pass.StatusSucceeded
	EventFailed         = pass.StatusFailed // also a run a reclaim ended (code ORPHANED)
	EventPartialFailure = pass.StatusPartialFailure
	EventCancelled      = pass.StatusCancelled
	EventInterrupted    = pass.StatusInterrupted // by a shutdown; queued again
	EventLost           = "lost"                 // given up by the pass without its result recorded
)

// MaxSkippedListed bounds the skipped objects a Document lists;
// files_skipped counts them all.
const MaxSkippedListed = 20

// Document is the JSON a webhook receives (README, Notifications).
type Document struct {
	Event           string           `json:"event"`
	Summary         string           `json:"summary"` // one line for people: what happened, to which job, on which host
	RunID           int64            `json:"run_id"`
	Job             string           `json:"job"`
	Kind            string           `json:"kind"`
	Trigger         string           `json:"trigger"`
	Attempt         int              `json:"attempt"`
	Status          string           `json:"status"` // as recorded: running for started and lost
	ErrorClass      string           `json:"error_class"`
	ErrorCode       string           `json:"error_code"`
	Message         string           `json:"message"`
	LostReason      string           `json:"lost_reason,omitempty"`
	BytesRead       int64            `json:"bytes_read"`
	BytesAdded      int64            `json:"bytes_added"`
	Files           int64            `json:"files"`
	FilesSkipped    int64            `json:"files_skipped"`
	Skipped         []pass.Skipped   `json:"skipped"`  // at most MaxSkippedListed
	Counters        map[string]int64 `json:"counters"` // the kind's named figures; {} when none
	Snapshots       []Snapshot       `json:"snapshots"`
	Repository      string           `json:"repository"` // the name of the job's repository in the config
	Schedule        string           `json:"schedule"`   // the job's schedule in words
	Host            string           `json:"host"`
	ScheduledAt     *time.Time       `json:"scheduled_at"`
	StartedAt       *time.Time       `json:"started_at"`
	EndedAt         *time.Time       `json:"ended_at"`
	DurationSeconds *float64         `json:"duration_seconds"`
	Version         string           `json:"nightjar_version"`
}

// Snapshot is a snapshot a run made.
type Snapshot struct {
	RepositoryID string `json:"repository_id"`
	SnapshotID   string `json:"snapshot_id"`
	Source       string `json:"source"`
}

// newDocument describes run at event.
func newDocument(event string, run pass.Run, def pass.JobDef, lostReason, host, version string) Document {
	d := Document{
		Event: event, RunID: run.ID, Job: run.Job, Kind: run.Kind, Trigger: run.Trigger, Attempt: run.Attempt,
		Status: run.Status, ErrorClass: run.ErrorClass, ErrorCode: run.ErrorCode, Message: run.Message,
		LostReason: lostReason,
		BytesRead:  run.Figures.BytesRead, BytesAdded: run.Figures.BytesAdded, Files: run.Figures.Files,
		FilesSkipped: run.Figures.FilesSkipped, Skipped: []pass.Skipped{}, Counters: map[string]int64{},
		Snapshots: []Snapshot{}, Repository: def.Repository, Schedule: def.Schedule.Description(), Host: host, Version: version,
		ScheduledAt: timePtr(run.ScheduledAt), StartedAt: timePtr(run.StartedAt), EndedAt: timePtr(run.EndedAt),
	}
	if d.Kind == "" {
		d.Kind = pass.KindBackup
	}
	if event == EventStarted || event == EventLost {
		d.Status = pass.StatusRunning
	}
	d.Skipped = append(d.Skipped, run.Figures.Skipped[:min(len(run.Figures.Skipped), MaxSkippedListed)]...)
	for k, v := range run.Figures.Counters {
		d.Counters[k] = v
	}
	for _, s := range run.Snapshots {
		d.Snapshots = append(d.Snapshots, Snapshot{RepositoryID: s.RepositoryID, SnapshotID: s.SnapshotID, Source: s.Source})
	}
	if !run.StartedAt.IsZero() && !run.EndedAt.IsZero() {
		seconds := run.EndedAt.Sub(run.StartedAt).Seconds()
		d.DurationSeconds = &seconds
	}
	d.Summary = d.summary()
	return d
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// maxSummaryMessage is the most of a run's message a summary quotes, in
// bytes; the document's message field has all of it.
const maxSummaryMessage = 300

// summary is the document in one line, for people: "nightjar on db1:
// backup run 12 of job pg failed [source/ALL_SOURCES_FAILED]: ...".
func (d Document) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nightjar on %s: %s run %d of job %s (attempt %d) ", d.Host, d.Kind, d.RunID, d.Job, d.Attempt)
	switch d.Event {
	case EventStarted:
		b.WriteString("started")
	case EventLost:
		b.WriteString("was given up, nothing was recorded for it: " + d.LostReason)
	default:
		b.WriteString(strings.ReplaceAll(d.Event, "_", " "))
	}
	if d.ErrorCode != "" {
		fmt.Fprintf(&b, " [%s]", pass.ErrorLabel(d.ErrorClass, d.ErrorCode))
	}
	if d.Message != "" {
		b.WriteString(": " + redact.OneLine(d.Message, maxSummaryMessage))
	}
	return b.String()
}

// healthcheckBody is the short text a healthcheck ping carries (hc.io
// shows it with the ping).
func (d Document) healthcheckBody() string {
	var b strings.Builder
	b.WriteString(d.Summary + "\n")
	if d.Event != EventStarted {
		fmt.Fprintf(&b, "read %d bytes, added %d bytes, %d files, %d skipped", d.BytesRead, d.BytesAdded, d.Files, d.FilesSkipped)
		if d.DurationSeconds != nil {
			fmt.Fprintf(&b, ", in %.1fs", *d.DurationSeconds)
		}
		b.WriteString("\n")
		for _, s := range d.Snapshots {
			fmt.Fprintf(&b, "snapshot %s of %s\n", s.SnapshotID, s.Source)
		}
		for _, s := range d.Skipped {
			fmt.Fprintf(&b, "skipped %s: %s\n", s.Object, s.Reason)
		}
	}
	return b.String()
}

// healthcheckSuffix is the ping of an event: "/start", "" (success),
// "/fail"; ok is false for the events a dead man's switch does not hear
// (cancelled, interrupted and lost runs: the next run, or the switch's
// own grace period, tells).
func healthcheckSuffix(event string) (suffix string, ok bool) {
	switch event {
	case EventStarted:
		return "/start", true
	case EventSucceeded:
		return "", true
	case EventFailed, EventPartialFailure:
		return "/fail", true
	}
	return "", false
}
