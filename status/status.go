package status

import (
	"time"
)

// Code names what a warning is about; the set is closed (Codes lists it),
// so that metrics can use a code as a label value.
type Code string

// The warning codes.
const (
	CodeSchedulerOffline      Code = "scheduler_offline"      // no pass recorded for longer than offline_after
	CodeJobPaused             Code = "job_paused"             // a job is paused
	CodeScheduleDisabled      Code = "schedule_disabled"      // a job runs only when asked (manual)
	CodeNoBackupYet           Code = "no_backup_yet"          // a scheduled backup job has no good snapshot
	CodeBackupStale           Code = "backup_stale"           // the newest good snapshot is older than the job's rpo
	CodeLastRunFailed         Code = "last_run_failed"        // the newest finished run of a kind failed
	CodeLastRunPartial        Code = "last_run_partial"       // the newest finished run of a kind skipped objects
	CodeRepositoryUnavailable Code = "repository_unavailable" // the last probe could not open or write the repository
	CodeRepositoryLowSpace    Code = "repository_low_space"   // under 10% free, or under twice the newest backup's addition
	CodeRepositoryUnencrypted Code = "repository_unencrypted" // a job writes into a repository without encryption
	CodeVerifyFailed          Code = "verify_failed"          // a snapshot of the job failed verification
	CodeNeverDeepVerified     Code = "never_deep_verified"    // no deep verification for DeepVerifyWithin
	CodeRunHeld               Code = "run_held"               // a queued run has waited for longer than HeldWithin
	CodeRunStuck              Code = "run_stuck"              // a running run has not renewed its heartbeat for StuckAfter
)

// Severity is how bad a warning is.
type Severity string

// The severities, worst first.
const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

// rank orders severities: a lower rank is worse.
func (s Severity) rank() int {
	switch s {
	case SeverityCritical:
		return 0
	case SeverityWarning:
		return 1
	default:
		return 2
	}
}

var severities = map[Code]Severity{
	CodeSchedulerOffline:      SeverityCritical,
	CodeJobPaused:             SeverityInfo,
	CodeScheduleDisabled:      SeverityInfo,
	CodeNoBackupYet:           SeverityWarning,
	CodeBackupStale:           SeverityCritical,
	CodeLastRunFailed:         SeverityWarning,
	CodeLastRunPartial:        SeverityWarning,
	CodeRepositoryUnavailable: SeverityCritical,
	CodeRepositoryLowSpace:    SeverityWarning,
	CodeRepositoryUnencrypted: SeverityWarning,
	CodeVerifyFailed:          SeverityCritical,
	CodeNeverDeepVerified:     SeverityWarning,
	CodeRunHeld:               SeverityWarning,
	CodeRunStuck:              SeverityWarning,
}

// Codes returns every code, in a fixed order (the order of the table in
// README.md).
func Codes() []Code {
	return []Code{
		CodeSchedulerOffline, CodeJobPaused, CodeScheduleDisabled, CodeNoBackupYet,
		CodeBackupStale, CodeLastRunFailed, CodeLastRunPartial, CodeRepositoryUnavailable,
		CodeRepositoryLowSpace, CodeRepositoryUnencrypted, CodeVerifyFailed,
		CodeNeverDeepVerified, CodeRunHeld, CodeRunStuck,
	}
}

// Severity returns the severity of every warning with code c.
func (c Code) Severity() Severity { return severities[c] }

// Defaults Evaluate uses where State leaves a setting zero.
const (
	DefaultOfflineAfter     = 3 * time.Minute
	DefaultRPO              = 26 * time.Hour
	DefaultDeepVerifyWithin = 8 * 24 * time.Hour
	DefaultHeldWithin       = time.Hour
	DefaultStuckAfter       = 15 * time.Minute
	LowSpaceFraction        = 0.10 // under this fraction free is low space
	LowSpaceBackups         = 2    // under this many times the newest backup's addition free is low space
)

// Warning is one problem, worst first in Evaluate's answer.
type Warning struct {
	Code       Code     `json:"code"`
	Severity   Severity `json:"severity"`
	Job        string   `json:"job,omitempty"`        // the job it is about; "" for none
	Repository string   `json:"repository,omitempty"` // the repository it is about (or the job's); "" for none
	Message    string   `json:"message"`              // one line, no secret
}

// State is everything Evaluate decides from, read by its caller.
type State struct {
	Now time.Time

	// OfflineAfter is scheduler.offline_after (0: DefaultOfflineAfter).
	OfflineAfter time.Duration
	// HeldWithin is how long a queued run may wait before run_held (0: DefaultHeldWithin).
	HeldWithin time.Duration
	// StuckAfter is how long a running run may go without a heartbeat before run_stuck (0: DefaultStuckAfter).
	StuckAfter time.Duration

	// Passes are the newest pass of each host and mode (any order); none:
	// no pass was ever recorded.
	Passes []Pass

	Jobs         []Job
	Queued       []QueuedRun  // every queued run
	Running      []RunningRun // every running run
	Repositories []Repository // every configured repository

	// TimeZone is the zone the messages print times in, as human output
	// does (2006-01-02 15:04:05); nil: RFC 3339 in UTC, as JSON has them.
	TimeZone *time.Location
}

// Pass is the runtime heartbeat of one pass of tick or serve.
type Pass struct {
	At      time.Time `json:"at"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Version string    `json:"version"`
	Mode    string    `json:"mode"` // "tick" or "serve"
}

// Job is one configured job and what its runs left.
type Job struct {
	Name       string
	Kind       string // pass.KindBackup (or ""), pass.KindPrune, pass.KindDrill: only backup jobs have snapshots
	Repository string
	Paused     bool
	Manual     bool          // no schedule: runs only when asked
	RPO        time.Duration // the job's rpo; 0: DefaultRPO
	NextRun    time.Time     // zero: none
	Created    time.Time     // when the job first appeared in the state database; zero: unknown

	// LastRuns holds the newest finished run (succeeded, partial, failed;
	// not cancelled nor interrupted) of each kind the job has run.
	LastRuns []Run

	// LastGoodSnapshot is the end of the newest succeeded or partial backup
	// run of the job that made at least one snapshot; zero: none.
	LastGoodSnapshot time.Time

	// Verify is whether the job's snapshots are verified at all, and
	// DeepVerify whether some of those verifications read every chunk.
	Verify     bool
	DeepVerify bool
	// VerifyFailed: the newest verify run failed with class integrity, or
	// the catalog records a snapshot of the job as verify_failed.
	VerifyFailed bool
	// VerifyFailure says what failed (the run's message or the snapshot); may be empty.
	VerifyFailure string
	// LastDeepVerify is the newest succeeded deep verification (a verify
	// run with counter deep = 1, or a catalog ok_deep); zero: none.
	LastDeepVerify time.Time
	// DeepVerifyWithin is how old the newest deep verification may grow
	// before never_deep_verified (0: DefaultDeepVerifyWithin).
	DeepVerifyWithin time.Duration
}

// Run is a finished run, as status needs it.
type Run struct {
	ID      int64     `json:"id"`
	Kind    string    `json:"kind"`
	Status  string    `json:"status"` // pass.StatusSucceeded, ...
	Class   string    `json:"class,omitempty"`
	Code    string    `json:"code,omitempty"`
	Message string    `json:"message,omitempty"`
	Ended   time.Time `json:"ended"`
}

// QueuedRun is a run waiting to start.
type QueuedRun struct {
	ID         int64
	Job        string
	Repository string
	QueuedAt   time.Time
	NotBefore  time.Time // a retry waits for its backoff until then; zero: none
	HeldReason string    // why the last pass did not start it; "" when none said
}

// RunningRun is a run that has started and not ended.
type RunningRun struct {
	ID          int64
	Job         string
	Repository  string
	StartedAt   time.Time
	HeartbeatAt time.Time
	LeaseUntil  time.Time // the owner's lease; zero: none (an older runner), its heartbeat is judged by StuckAfter
	Runner      string    // host:pid@boot/pidns/start (older runners: host:pid)
}

// Repository is one configured repository and its last probe.
type Repository struct {
	Name     string
	Location string // as printed: no credential
	// Probe is the newest probe; nil: never probed, and nothing is said
	// about the repository.
	Probe *Probe
	// LastBackupAdded is what the newest backup run into the repository
	// added, in bytes (0: unknown).
	LastBackupAdded int64
}

// Probe is what a probe of a repository found.
type Probe struct {
	At         time.Time `json:"at"`
	Reachable  bool      `json:"reachable"`       // opened with its password and took a write
	Error      string    `json:"error,omitempty"` // why not, one line without secrets
	Encrypted  bool      `json:"encrypted"`
	SpaceKnown bool      `json:"space_known"` // FreeBytes and TotalBytes were read
	FreeBytes  int64     `json:"free_bytes"`
	TotalBytes int64     `json:"total_bytes"`
}
