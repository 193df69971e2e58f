package pass

import (
	"context"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
)

// Run states.
const (
	StatusQueued         = "queued"
	StatusRunning        = "running"
	StatusSucceeded      = "succeeded"
	StatusPartialFailure = "partial_failure" // done, but some objects were skipped
	StatusFailed         = "failed"
	StatusCancelled      = "cancelled"   // by a user: never retried
	StatusInterrupted    = "interrupted" // by shutdown: queued again
)

// Triggers: why a run exists.
const (
	TriggerSchedule = "schedule"
	TriggerManual   = "manual"
	TriggerRetry    = "retry"
	TriggerCatchUp  = "catch_up"
)

// Error classes decide retries. Executors return errors that carry one
// (see ClassError); anything else is ClassUnknown.
const (
	ClassTransient  = "transient"
	ClassNetwork    = "network"
	ClassRepository = "repository"
	ClassBusy       = "busy"
	ClassSource     = "source"
	ClassAuth       = "auth"
	ClassIntegrity  = "integrity"
	ClassSecurity   = "security"
	ClassConfig     = "config"
	ClassCancelled  = "cancelled"
	ClassUnknown    = "unknown"
)

// RetryPolicy is a job's retry setting.
type RetryPolicy struct {
	Attempts int           // most attempts in all, including the first (DefaultRetryAttempts, at most MaxRetryAttempts)
	Initial  time.Duration // first backoff (DefaultRetryInitial)
	Max      time.Duration // cap of the backoff (DefaultRetryMax)
}

// JobDef is a job as the config declares it.
type JobDef struct {
	Name       string
	Schedule   schedule.Schedule // parsed, with its time zone
	Priority   string            // one of schedule.PriorityLevels
	Repository string            // name of the repository in the config
	Sources    []string          // source keys (paths or command names), for per-source limits
	DependsOn  []string          // job names
	CatchUp    schedule.CatchUp
	Retry      RetryPolicy
	Bandwidth  int64 // bytes per second; 0: unlimited
}

// Job is a job as the store knows it.
type Job struct {
	ID       int64
	Name     string
	Spec     string // the schedule spec and zone it was synchronised with
	Paused   bool
	NextRun  time.Time // the next scheduled slot; zero for manual jobs
	Priority string
}

// Figures are what a run did.
type Figures struct {
	BytesRead    int64
	BytesAdded   int64
	Files        int64
	FilesSkipped int64
	Skipped      []Skipped // reasons, at most a few hundred listed
}

// Skipped is one object a run could not handle.
type Skipped struct {
	Object string `json:"object"`
	Reason string `json:"reason"`
}

// SnapshotRef names a snapshot a run made, by reference.
type SnapshotRef struct {
	RepositoryID string
	SnapshotID   string
	Source       string
}

// Run is one execution of a job.
type Run struct {
	ID          int64
	JobID       int64
	Job         string
	Trigger     string
	Attempt     int
	Priority    string
	ScheduledAt time.Time // the slot it stands for (or when it was requested)
	NotBefore   time.Time // retries wait for their backoff
	QueuedAt    time.Time
	StartedAt   time.Time
	EndedAt     time.Time
	HeartbeatAt time.Time
	Status      string
	HeldReason  string
	ErrorClass  string
	ErrorCode   string
	Message     string
	MissedSlots int
	Owner       string // fencing token of the runner that holds it
	Runner      string // host:pid of that runner
	Figures     Figures
	Snapshots   []SnapshotRef
}

// Result is what an Executor reports for a run.
type Result struct {
	Figures   Figures
	Snapshots []SnapshotRef
}

// Executor runs a job. It must return when ctx ends. Its error should
// carry a class (ClassError); skipped objects go in the Result, not in the
// error.
type Executor interface {
	Execute(ctx context.Context, job JobDef, run Run) (Result, error)
}

// ClassError is an error with a class and a code, for retries and records.
type ClassError struct {
	Class string
	Code  string // short upper-case code such as ORPHANED or ALL_SOURCES_FAILED
	Err   error
}

func (e *ClassError) Error() string {
	if e.Err == nil {
		return e.Class + " error " + e.Code
	}
	return e.Err.Error()
}
func (e *ClassError) Unwrap() error { return e.Err }
