package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/nightjar-backup/nightjar/redact"
)

// Run states and kinds as schedule/pass names them; status keeps its own
// copies so that it imports nothing.
const (
	statusSucceeded = "succeeded"
	statusPartial   = "partial_failure"
	statusFailed    = "failed"
	kindBackup      = "backup"
)

// maxMessage is the longest run message a warning quotes, in bytes.
const maxMessage = 300

// Evaluate returns the warnings of s, worst first: by severity, then by
// job, then by repository, then by code.
func Evaluate(s State) []Warning {
	var out []Warning
	add := func(code Code, job, repository, format string, args ...any) {
		for i, a := range args {
			if t, ok := a.(instant); ok {
				args[i] = s.formatTime(time.Time(t))
			}
		}
		out = append(out, Warning{
			Code:       code,
			Severity:   code.Severity(),
			Job:        job,
			Repository: repository,
			Message:    redact.OneLine(redact.Text(fmt.Sprintf(format, args...)), 2*maxMessage),
		})
	}
	evaluateScheduler(s, add)
	for _, j := range s.Jobs {
		evaluateJob(s.Now, j, add)
	}
	evaluateRuns(s, add)
	evaluateRepositories(s, add)
	slices.SortStableFunc(out, func(a, b Warning) int {
		return cmp.Or(
			cmp.Compare(a.Severity.rank(), b.Severity.rank()),
			cmp.Compare(a.Job, b.Job),
			cmp.Compare(a.Repository, b.Repository),
			cmp.Compare(a.Code, b.Code),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return out
}

type addFunc func(code Code, job, repository, format string, args ...any)

func evaluateScheduler(s State, add addFunc) {
	offlineAfter := cmp.Or(s.OfflineAfter, DefaultOfflineAfter)
	if len(s.Passes) == 0 {
		add(CodeSchedulerOffline, "", "", "no pass of tick or serve was ever recorded: run nightjar serve, or call nightjar tick from cron or a systemd timer")
		return
	}
	newest := slices.MaxFunc(s.Passes, func(a, b Pass) int { return a.At.Compare(b.At) })
	if age := s.Now.Sub(newest.At); age > offlineAfter {
		add(CodeSchedulerOffline, "", "", "no pass for %s (the newest: %s on %s at %s, version %s); allowed: %s (scheduler.offline_after)",
			roundAge(age), cmp.Or(newest.Mode, "pass"), cmp.Or(newest.Host, "an unknown host"), stamp(newest.At), cmp.Or(newest.Version, "unknown"), offlineAfter)
	}
}

func evaluateJob(now time.Time, j Job, add addFunc) {
	if j.Paused {
		add(CodeJobPaused, j.Name, j.Repository, "job is paused: no scheduled runs until nightjar job resume %s", j.Name)
	}
	if j.Manual {
		add(CodeScheduleDisabled, j.Name, j.Repository, "job has no schedule: it runs only when asked (nightjar job run %s)", j.Name)
	}
	if (j.Kind == "" || j.Kind == kindBackup) && !j.Manual {
		evaluateFreshness(now, j, add)
	}
	for _, r := range j.LastRuns {
		switch r.Status {
		case statusFailed:
			add(CodeLastRunFailed, j.Name, j.Repository, "last %s run %d failed at %s (%s): %s",
				r.Kind, r.ID, stamp(r.Ended), classCode(r), redact.OneLine(r.Message, maxMessage))
		case statusPartial:
			add(CodeLastRunPartial, j.Name, j.Repository, "last %s run %d ended partial at %s (%s): %s",
				r.Kind, r.ID, stamp(r.Ended), classCode(r), redact.OneLine(r.Message, maxMessage))
		}
	}
	if j.VerifyFailed {
		add(CodeVerifyFailed, j.Name, j.Repository, "a snapshot failed verification: %s; see nightjar job show %s",
			cmp.Or(redact.OneLine(j.VerifyFailure, maxMessage), "the catalog records it"), j.Name)
	}
	evaluateDeepVerify(now, j, add)
}

// evaluateFreshness says whether a scheduled backup job's newest good
// snapshot is within its rpo. A job without any is stale once it has
// existed for longer than its rpo, and only not backed up yet before.
func evaluateFreshness(now time.Time, j Job, add addFunc) {
	rpo := cmp.Or(j.RPO, DefaultRPO)
	if j.LastGoodSnapshot.IsZero() {
		if !j.Created.IsZero() && now.Sub(j.Created) > rpo {
			add(CodeBackupStale, j.Name, j.Repository, "no good snapshot since the job was created %s ago; allowed: rpo %s", roundAge(now.Sub(j.Created)), rpo)
			return
		}
		add(CodeNoBackupYet, j.Name, j.Repository, "no good snapshot yet; next run: %s", nextRun(j))
		return
	}
	if age := now.Sub(j.LastGoodSnapshot); age > rpo {
		add(CodeBackupStale, j.Name, j.Repository, "newest good snapshot is %s old (%s); allowed: rpo %s; next run: %s",
			roundAge(age), stamp(j.LastGoodSnapshot), rpo, nextRun(j))
	}
}

func evaluateDeepVerify(now time.Time, j Job, add addFunc) {
	if !j.Verify || !j.DeepVerify || j.LastGoodSnapshot.IsZero() {
		return
	}
	within := cmp.Or(j.DeepVerifyWithin, DefaultDeepVerifyWithin)
	switch {
	case !j.LastDeepVerify.IsZero():
		if age := now.Sub(j.LastDeepVerify); age > within {
			add(CodeNeverDeepVerified, j.Name, j.Repository, "newest deep verification is %s old (%s); allowed: %s", roundAge(age), stamp(j.LastDeepVerify), within)
		}
	case j.Created.IsZero() || now.Sub(j.Created) > within:
		add(CodeNeverDeepVerified, j.Name, j.Repository, "no deep verification yet; allowed: %s without one", within)
	}
}

func evaluateRuns(s State, add addFunc) {
	heldWithin := cmp.Or(s.HeldWithin, DefaultHeldWithin)
	for _, q := range s.Queued {
		since := q.QueuedAt
		if q.NotBefore.After(since) {
			since = q.NotBefore // waiting for its backoff is not being held
		}
		wait := s.Now.Sub(since)
		if wait <= heldWithin {
			continue
		}
		reason := q.HeldReason
		if reason == "" {
			reason = "no pass has started it (is the scheduler running?)"
		}
		add(CodeRunHeld, q.Job, q.Repository, "run %d has waited %s since %s: %s", q.ID, roundAge(wait), stamp(since), reason)
	}
	stuckAfter := cmp.Or(s.StuckAfter, DefaultStuckAfter)
	for _, r := range s.Running {
		// The owner's lease, set from its own stale_after, says when the
		// run is overdue; a local StuckAfter would call a live run of a
		// longer lease stuck.
		silent := s.Now.Sub(r.HeartbeatAt)
		if !r.LeaseUntil.IsZero() {
			if s.Now.After(r.LeaseUntil) {
				add(CodeRunStuck, r.Job, r.Repository, "run %d (runner %s) has not renewed its heartbeat for %s and its lease ran out at %s: the next pass reclaims it",
					r.ID, cmp.Or(r.Runner, "unknown"), roundAge(silent), stamp(r.LeaseUntil))
			}
			continue
		}
		if silent > stuckAfter {
			add(CodeRunStuck, r.Job, r.Repository, "run %d (runner %s) has not renewed its heartbeat for %s: a pass reclaims it once its runner is gone",
				r.ID, cmp.Or(r.Runner, "unknown"), roundAge(silent))
		}
	}
}

func evaluateRepositories(s State, add addFunc) {
	for _, r := range s.Repositories {
		p := r.Probe
		if p == nil {
			continue // never probed: nothing is known, nothing is said
		}
		if !p.Reachable {
			add(CodeRepositoryUnavailable, "", r.Name, "repository at %s is unavailable (probe at %s): %s",
				r.Location, stamp(p.At), cmp.Or(redact.OneLine(p.Error, maxMessage), "no reason given"))
			continue
		}
		if !p.Encrypted {
			if writers := backupJobsInto(s.Jobs, r.Name); len(writers) > 0 {
				add(CodeRepositoryUnencrypted, "", r.Name, "repository at %s is not encrypted (made with --insecure-no-encryption), and job %s writes into it",
					r.Location, strings.Join(writers, ", "))
			}
		}
		if p.SpaceKnown && p.TotalBytes > 0 {
			lowFraction := float64(p.FreeBytes) < LowSpaceFraction*float64(p.TotalBytes)
			lowForBackup := r.LastBackupAdded > 0 && p.FreeBytes < LowSpaceBackups*r.LastBackupAdded
			if lowFraction || lowForBackup {
				add(CodeRepositoryLowSpace, "", r.Name, "repository at %s has %s free of %s (%.1f%%); the newest backup added %s; allowed: at least %.0f%% free and twice the newest backup's addition",
					r.Location, humanize.IBytes(uint64(p.FreeBytes)), humanize.IBytes(uint64(p.TotalBytes)), 100*float64(p.FreeBytes)/float64(p.TotalBytes), humanize.IBytes(uint64(r.LastBackupAdded)), 100*LowSpaceFraction)
			}
		}
	}
}

// backupJobsInto returns the names of the backup jobs that write into the
// repository, sorted.
func backupJobsInto(jobs []Job, repository string) []string {
	var names []string
	for _, j := range jobs {
		if j.Repository == repository && (j.Kind == "" || j.Kind == kindBackup) {
			names = append(names, j.Name)
		}
	}
	slices.Sort(names)
	return names
}

func classCode(r Run) string {
	switch {
	case r.Class != "" && r.Code != "":
		return "class " + r.Class + ", code " + r.Code
	case r.Class != "":
		return "class " + r.Class
	case r.Code != "":
		return "code " + r.Code
	}
	return "no class"
}

func nextRun(j Job) any {
	switch {
	case j.Paused:
		return "none while paused"
	case j.NextRun.IsZero():
		return "none scheduled"
	}
	return stamp(j.NextRun)
}

// instant is a time in a message, printed by State.formatTime when the
// message is made.
type instant time.Time

func stamp(t time.Time) instant { return instant(t) }

// formatTime prints a time of a message: RFC 3339 in UTC, or, with a
// TimeZone, in that zone as human output prints times.
func (s State) formatTime(t time.Time) string {
	if s.TimeZone == nil {
		return t.UTC().Format(time.RFC3339)
	}
	return t.In(s.TimeZone).Format("2006-01-02 15:04:05")
}

// roundAge rounds a duration for reading: to the second under an hour,
// to the minute above.
func roundAge(d time.Duration) time.Duration {
	if d >= time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
