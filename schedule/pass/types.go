package pass

import (
	"context"
	"maps"
	"slices"
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

// Kinds: what a run does. Every run has one; the Executor dispatches on it
// (see docs/ARCHITECTURE.md, "Adding a run kind").
const (
	KindBackup    = "backup"    // snapshots of the job's sources
	KindVerify    = "verify"    // checks the snapshots a backup made, structurally or by reading every chunk
	KindRetention = "retention" // forget the job's snapshots its retention policy does not keep, then prune
	KindPrune     = "prune"     // a repository's maintenance: prune on its own schedule
	KindDrill     = "drill"     // restores the job's newest snapshot into a temporary folder and compares it
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
	// NoJitter turns off the downward jitter of the backoffs (on by
	// default, so that the retries of many jobs after one shared outage
	// do not all start at the same instant).
	NoJitter bool
}

// JobDef is a job as the config declares it. The fields before Backup are
// every kind's: when and how its runs are scheduled and admitted, and the
// repository they work on; each kind's own settings are a field of their
// own (Backup now; Verify, Retention and so on as those kinds come), read
// only by that kind's executor.
type JobDef struct {
	Name       string
	Kind       string            // the kind of run its slots queue: KindBackup ("" too), or, for scheduled work, KindPrune or KindDrill
	ForJob     string            // scheduled work done for another job (a drill's job); "": the job's own
	Schedule   schedule.Schedule // parsed, with its time zone
	Priority   string            // one of schedule.PriorityLevels
	Repository string            // name of the repository in the config, for per-repository limits
	Sources    []string          // source keys (paths or command names), for per-source limits
	DependsOn  []string          // job names
	CatchUp    schedule.CatchUp
	Retry      RetryPolicy
	Backup     BackupDef    // what a run of kind backup does
	Retention  RetentionDef // what a run of kind retention does
	Verify     VerifyDef    // what a run of kind verify does
}

// VerifyDef is the part of a job that only its verify runs use.
type VerifyDef struct {
	Enabled bool // false: verify = "off", a succeeded backup queues its retention directly
	// DeepEvery is the longest time the job's snapshots go without a deep
	// verification (the repository's deep_verify_every): a verify run is
	// deep when the newest deep one is older. 0: every verify run is deep;
	// negative: none is.
	DeepEvery time.Duration
}

// RetentionDef is the part of a job that only its retention runs use.
type RetentionDef struct {
	Enabled bool                     // false: retention = "off", no retention runs
	Policy  schedule.RetentionPolicy // which of the job's snapshots stay; calendar buckets in the schedule's zone
}

// BackupDef is the part of a job that only its backup runs use.
type BackupDef struct {
	Bandwidth int64 // bytes per second; 0: unlimited
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

// Figures are what a run did. BytesRead, BytesAdded and Files are a
// backup's; FilesSkipped and Skipped are the objects any kind could not
// handle; Counters are the named figures of any kind (a verify's
// "blobs_checked", a prune's "packs_deleted"), stored without a schema
// change per kind.
type Figures struct {
	BytesRead    int64
	BytesAdded   int64
	Files        int64
	FilesSkipped int64
	Skipped      []Skipped        // reasons, at most a few hundred listed
	Counters     map[string]int64 // named counters, lower_snake_case; nil: none
}

// Clone returns a copy of f that shares nothing with it.
func (f Figures) Clone() Figures {
	f.Skipped = slices.Clone(f.Skipped)
	f.Counters = maps.Clone(f.Counters)
	return f
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
	Kind        string // what it does: KindBackup, ...; a store queues an empty Kind as KindBackup
	Trigger     string
	Attempt     int
	Priority    string
	ScheduledAt time.Time // the slot it stands for (or when it was requested)
	NotBefore   time.Time // retries wait for their backoff
	QueuedAt    time.Time
	StartedAt   time.Time
	EndedAt     time.Time
	HeartbeatAt time.Time
	// LeaseUntil is when a running run's lease runs out unless its
	// runner renews it (zero: a run of an older nightjar, without one,
	// judged by HeartbeatAt and the reclaimer's stale_after).
	LeaseUntil  time.Time
	Status      string
	HeldReason  string
	ErrorClass  string
	ErrorCode   string
	Message     string
	MissedSlots int
	Owner       string // fencing token of the runner that holds it
	Runner      string // that runner's identity: host:pid@boot/pidns/start (see Pass.Runner)
	Figures     Figures
	Snapshots   []SnapshotRef
	Output      string // what the run's hooks and command sources printed, bounded (see Result.Output)
	// Current is what the run worked on at its last heartbeat that
	// reported progress (Progress.Current), such as "source /data"; a
	// running run's Figures are then those of that heartbeat.
	Current string
}

// Result is what an Executor reports for a run.
type Result struct {
	Figures   Figures
	Snapshots []SnapshotRef
	// Output is what the run's hooks (and its command sources on standard
	// error) printed, kept with the run for runs show: the tail of each,
	// bounded by the executor, and lines of warnings the executor adds
	// (a failed sweep of sort files). It never holds a password: hooks
	// get none.
	Output string
}

// Progress is what a running run has done so far.
type Progress struct {
	Figures Figures // so far
	Current string  // what it works on now, such as "source /data"; may be empty
}

// Executor runs a run of a job, by the run's Kind. It must return when ctx
// ends. Its error should carry a class (ClassError); skipped objects go in
// the Result, not in the error. It may call progress (never after it
// returns; from any goroutine, one call at a time) to tell observers how
// far it is.
type Executor interface {
	Execute(ctx context.Context, job JobDef, run Run, progress func(Progress)) (Result, error)
}

// CodeRepositoryReplaced is the code of a run that found another
// repository than the one its repository's name was recorded with: it is
// not retried, since only the operator can tell which is the right one.
const CodeRepositoryReplaced = "REPOSITORY_REPLACED"

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

// ErrorLabel is how a message shows a run's error class and code:
// "class/code", or the code alone for a run without a class (a partial
// failure has only OBJECTS_SKIPPED); "" when there is no code.
func ErrorLabel(class, code string) string {
	if class == "" {
		return code
	}
	return class + "/" + code
}
