package cmd

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/cmd/internal/crashpoint"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/repo/backend"
	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// runJSON is a run in JSON output.
type runJSON struct {
	ID           int64            `json:"id"`
	Job          string           `json:"job"`
	Kind         string           `json:"kind"`
	Trigger      string           `json:"trigger"`
	Attempt      int              `json:"attempt"`
	Status       string           `json:"status"`
	ScheduledAt  *time.Time       `json:"scheduled_at,omitempty"`
	NotBefore    *time.Time       `json:"not_before,omitempty"`
	StartedAt    *time.Time       `json:"started_at,omitempty"`
	EndedAt      *time.Time       `json:"ended_at,omitempty"`
	DelaySeconds *float64         `json:"delay_seconds,omitempty"`
	HeldReason   string           `json:"held_reason,omitempty"`
	ErrorClass   string           `json:"error_class,omitempty"`
	ErrorCode    string           `json:"error_code,omitempty"`
	Message      string           `json:"message,omitempty"`
	MissedSlots  int              `json:"missed_slots"`
	BytesRead    int64            `json:"bytes_read"`
	BytesAdded   int64            `json:"bytes_added"`
	Files        int64            `json:"files"`
	FilesSkipped int64            `json:"files_skipped"`
	Skipped      []pass.Skipped   `json:"skipped"`
	Counters     map[string]int64 `json:"counters"` // the kind's named figures; {} when none
	Snapshots    []snapshotRef    `json:"snapshots"`
	Output       string           `json:"output,omitempty"` // what its hooks and command sources printed (runs show only)
	// Current is what the run worked on at its last heartbeat with
	// progress, such as "source /data"; a running run's figures are
	// those of that heartbeat.
	Current string `json:"current,omitempty"`
}

type snapshotRef struct {
	RepositoryID string `json:"repository_id"`
	SnapshotID   string `json:"snapshot_id"`
	Source       string `json:"source"`
	// Verified is the snapshot's verification as the repository records
	// it (runs show only): "-" (none yet), "ok", "ok (deep)",
	// "verify_failed" or "forgotten"; Problems are a failed one's.
	Verified string   `json:"verified,omitempty"`
	Problems []string `json:"verify_problems,omitempty"`
	// CurrentID is the ID the snapshot has now, when its record was
	// rewritten under another (runs show only; found by its run).
	CurrentID string `json:"current_id,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	utc := t.UTC() // JSON has RFC 3339 in UTC (humanTime: local, for people)
	return &utc
}

func toRunJSON(r pass.Run) runJSON {
	out := runJSON{ID: r.ID, Job: r.Job, Kind: r.Kind, Trigger: r.Trigger, Attempt: r.Attempt, Status: r.Status,
		ScheduledAt: timePtr(r.ScheduledAt), NotBefore: timePtr(r.NotBefore), StartedAt: timePtr(r.StartedAt),
		EndedAt: timePtr(r.EndedAt), HeldReason: r.HeldReason, ErrorClass: r.ErrorClass, ErrorCode: r.ErrorCode,
		Message: r.Message, MissedSlots: r.MissedSlots, BytesRead: r.Figures.BytesRead, BytesAdded: r.Figures.BytesAdded,
		Files: r.Figures.Files, FilesSkipped: r.Figures.FilesSkipped, Skipped: nonNil(r.Figures.Skipped), Counters: r.Figures.Counters, Snapshots: []snapshotRef{}, Current: r.Current}
	if out.Counters == nil {
		out.Counters = map[string]int64{}
	}
	if !r.StartedAt.IsZero() && !r.ScheduledAt.IsZero() {
		d := r.StartedAt.Sub(r.ScheduledAt).Seconds()
		out.DelaySeconds = &d
	}
	for _, s := range r.Snapshots {
		out.Snapshots = append(out.Snapshots, snapshotRef{RepositoryID: s.RepositoryID, SnapshotID: s.SnapshotID, Source: s.Source})
	}
	return out
}

func runsJSON(runs []pass.Run) []runJSON {
	out := []runJSON{}
	for _, r := range runs {
		out = append(out, toRunJSON(r))
	}
	return out
}

// openJobs opens the scheduler without an executor and synchronises the
// jobs from the config, so that job commands see what the config says.
func openJobs(c *cli.Context, p *printer) (*scheduler, error) {
	s, err := openScheduler(c, false)
	if err != nil {
		return nil, err
	}
	warnings, err := s.pass.Sync(c.Context)
	if err != nil {
		s.db.Close()
		return nil, err
	}
	for _, w := range warnings {
		p.Warnf("%s", w)
	}
	return s, nil
}

// runJobRetention shows what the job's retention would do now, as
// forget --dry-run shows it, over the snapshots the job made on this host.
func runJobRetention(c *cli.Context) error {
	p := newPrinter(c)
	name, err := jobArg(c)
	if err != nil {
		return err
	}
	now, err := clock(c)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(c, now())
	if err != nil {
		return err
	}
	i := slices.IndexFunc(cfg.Jobs, func(j config.Job) bool { return j.Def.Name == name })
	if i < 0 {
		return usageError{fmt.Errorf("job %s: %w", name, db.ErrUnknownJob)}
	}
	def := cfg.Jobs[i].Def
	if !def.Retention.Enabled {
		if err := p.JSON(&forgetJSON{DryRun: true, Policy: "off", Groups: []forgetGroupJSON{}, Forgotten: []string{}, Completed: []string{}, KeptPinned: []string{}}); err != nil {
			return err
		}
		p.Printf("job %s has retention = \"off\": its snapshots are never forgotten by it\n", name)
		return nil
	}
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("host name: %w", err)
	}
	r, err := openJobRepository(c.Context, cfg, def.Repository)
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := forget(c.Context, r, forgetOptions{
		policy:  def.Retention.Policy,
		groupBy: schedule.DefaultGroupBy,
		dryRun:  true,
		zone:    def.Schedule.Location(),
		only:    jobs.MadeByJob(name, host, def.Sources),
	})
	if err != nil {
		return err
	}
	if p.jsonOut {
		return p.JSON(out)
	}
	p.Printf("job %s: only its own snapshots (tag %s, host %s, its source paths)\n", name, jobs.JobTag(name), host)
	printForget(p, out)
	return nil
}

func jobCommand() *cli.Command {
	flags := func(extra ...cli.Flag) []cli.Flag { return append(append(configFlags(), atFlag()), extra...) }
	return &cli.Command{
		Name:  "job",
		Usage: "look at and steer the jobs of the config",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "list the jobs, by name", ArgsUsage: " ", Flags: flags(jsonFlag(),
				statusFlag("only jobs whose active or last run is in `STATUS` "+strings.Join(runStatuses, ", ")+
					", or that are paused, or never ran a run to its end (never)"),
				&cli.StringFlag{Name: "repository", Usage: "only jobs that write to repository `NAME` (its name in the config)"},
				limitFlag(0, "jobs"),
				&cli.StringFlag{Name: "after", Usage: "only jobs whose name sorts after `NAME` (the next page)"}),
				Action: runJobList},
			{Name: "show", Usage: "show one job", ArgsUsage: "NAME", Flags: flags(jsonFlag()), Action: jobAction(runJobShow)},
			{Name: "run", Usage: "queue a run of a job now (the next tick starts it)", ArgsUsage: "NAME",
				Flags: flags(jsonFlag(), &cli.BoolFlag{Name: "wait", Usage: "run a pass now and wait for the run to end"},
					&cli.BoolFlag{Name: "force", Usage: "run a paused job once (the audit records it); it stays paused"}), Action: jobAction(runJobRun)},
			{Name: "pause", Usage: "stop claiming a job's slots", ArgsUsage: "NAME", Flags: flags(), Action: jobAction(runJobPause)},
			{Name: "resume", Usage: "claim a job's slots again, from its next slot after now", ArgsUsage: "NAME", Flags: flags(), Action: jobAction(runJobResume)},
			{Name: "explain", Usage: "say why a job is or is not running now", ArgsUsage: "NAME", Flags: flags(jsonFlag()), Action: jobAction(runJobExplain)},
			{Name: "retention", Usage: "say which of a job's snapshots its retention keeps, and why, and which it forgets (changes nothing, takes no lock)", ArgsUsage: "NAME",
				Flags: flags(jsonFlag()), Action: runJobRetention},
		},
	}
}

type jobJSON struct {
	Name        string     `json:"name"`
	Kind        string     `json:"kind"` // the kind of run its slots queue: backup, or scheduled work's prune or drill
	Schedule    string     `json:"schedule"`
	Description string     `json:"description"`
	Repository  string     `json:"repository"`
	Priority    string     `json:"priority"`
	Paused      bool       `json:"paused"`
	NextRun     *time.Time `json:"next_run"` // UTC
	State       string     `json:"state"`
	DependsOn   []string   `json:"depends_on"`
	Active      *runJSON   `json:"active_run"`
	LastRun     *runJSON   `json:"last_run"`
	// Verification is what the repository records of the verification of
	// the job's snapshots (job show only; absent when it cannot be read).
	Verification *jobVerifyJSON `json:"verification,omitempty"`
}

// jobVerifyJSON is the verification state of a job's snapshots, from the
// repository's records (so it survives the loss of the state database).
type jobVerifyJSON struct {
	Snapshots    int        `json:"snapshots"`     // the job's snapshots (made on this host)
	Verified     int        `json:"verified"`      // of them, those with a verification record
	VerifyFailed []string   `json:"verify_failed"` // of them, those whose verification failed
	LastDeep     *time.Time `json:"last_deep"`     // the newest deep verification of one of them
	DeepEvery    string     `json:"deep_verify_every"`
}

func (s *scheduler) jobJSON(info db.JobInfo) jobJSON {
	def := s.pass.Jobs[info.Name]
	out := jobJSON{Name: info.Name, Kind: def.RunKind(), Schedule: def.Schedule.String(), Description: def.Schedule.Description(),
		Repository: info.Repository, Priority: info.Priority, Paused: info.Paused, DependsOn: nonNil(info.DependsOn)}
	out.NextRun = timePtr(info.NextRun)
	out.State = "idle"
	if info.Paused {
		out.State = "paused"
	}
	if info.Active != nil {
		out.State = info.Active.Status
		a := toRunJSON(*info.Active)
		out.Active = &a
	}
	if info.LastRun != nil {
		l := toRunJSON(*info.LastRun)
		out.LastRun = &l
	}
	return out
}

func runJobList(c *cli.Context) error {
	p := newPrinter(c)
	limit, err := pageFlags(c)
	if err != nil {
		return err
	}
	states, err := statusValues(c, jobStates)
	if err != nil {
		return err
	}
	s, err := openJobs(c, p)
	if err != nil {
		return err
	}
	defer s.db.Close()
	if err := checkRepositoryFlag(c, s.cfg); err != nil {
		return err
	}
	jobs, err := s.db.ListJobs(c.Context, db.JobFilter{States: states, Repository: c.String("repository"),
		After: c.String("after"), Limit: pageLimit(limit)})
	if err != nil {
		return err
	}
	jobs, more := onePage(jobs, limit)
	out := []jobJSON{}
	for _, j := range jobs {
		out = append(out, s.jobJSON(j))
	}
	if p.jsonOut {
		return p.JSON(out)
	}
	if len(out) == 0 {
		p.Printf("no jobs%s\n", filtersSaid(c, jobFilters...))
		return nil
	}
	p.Printf("%-20s %-10s %-22s %-16s %s\n", "JOB", "STATE", "NEXT RUN", "LAST RUN", "SCHEDULE")
	for _, j := range out {
		next, last := "-", "-"
		if j.NextRun != nil {
			next = humanTime(*j.NextRun)
		}
		if j.LastRun != nil {
			last = j.LastRun.Status
		}
		p.Printf("%-20s %-10s %-22s %-16s %s\n", j.Name, j.State, next, last, j.Description)
	}
	if more {
		p.Printf("more: %s --after %s\n", nextPage(c, jobFilters...), shellWord(out[len(out)-1].Name))
	}
	return nil
}

// jobFilters are the flags of job list that a next page repeats.
var jobFilters = []string{"status", "repository"}

func jobArg(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usageError{fmt.Errorf("%s needs exactly one job NAME (nightjar job list shows them)", commandName(c.Command))}
	}
	return c.Args().First(), nil
}

func runJobShow(c *cli.Context, p *printer, s *scheduler, name string) error {
	info, err := s.db.JobByName(c.Context, name)
	if err != nil {
		return jobError(err)
	}
	j := s.jobJSON(info)
	j.Verification = s.jobVerification(c.Context, p, name)
	catalog, err := jobCatalog(c.Context, s.db, name, info.Repository)
	if err != nil {
		return err
	}
	warnings, err := jobWarnings(c.Context, s.db, name, info.Repository)
	if err != nil {
		return err
	}
	if p.jsonOut {
		return p.JSON(jobShowJSON{jobJSON: j, Catalog: catalog, Warnings: warnings})
	}
	for _, w := range warnings {
		p.Warnf("%s", w)
	}
	p.Printf("job %s\n  schedule:   %s (%s)\n  repository: %s\n  priority:   %s\n  state:      %s\n", j.Name, j.Description, j.Schedule, j.Repository, j.Priority, j.State)
	if j.NextRun != nil {
		p.Printf("  next run:   %s\n", humanTime(*j.NextRun))
	}
	if j.LastRun != nil {
		p.Printf("  last run:   %d, %s\n", j.LastRun.ID, describeRun(*info.LastRun))
	}
	if j.Active != nil {
		state := j.Active.Status
		if j.Active.Status == pass.StatusRunning {
			state = "running: " + runningProgress(*info.Active)
		}
		p.Printf("  active run: %d, %s\n", j.Active.ID, state)
	}
	if v := j.Verification; v != nil {
		p.Printf("  snapshots:  %d, %d verified, %d verify_failed\n", v.Snapshots, v.Verified, len(v.VerifyFailed))
		for _, id := range v.VerifyFailed {
			p.Printf("  verify_failed: snapshot %s (nightjar snapshots --verify-failed shows why)\n", id)
		}
		last := "never"
		if v.LastDeep != nil {
			last = humanTime(*v.LastDeep)
		}
		p.Printf("  last deep verification: %s (deep_verify_every %s)\n", last, v.DeepEvery)
	}
	printJobCatalog(p, catalog)
	return nil
}

// jobShowJSON is what job show --json prints: the job, and its snapshots
// from the catalog.
type jobShowJSON struct {
	jobJSON
	Catalog  catalogJSON `json:"catalog"`
	Warnings []string    `json:"warnings"` // such as an unencrypted repository (jobWarnings)
}

// jobVerification reads the verification state of the job's snapshots from
// its repository. Where the repository cannot be read it warns and returns
// nil (without a warning when there is no repository yet): job show still
// shows what the state database knows.
func (s *scheduler) jobVerification(ctx context.Context, p *printer, name string) *jobVerifyJSON {
	def, ok := s.pass.Jobs[name]
	if !ok {
		return nil
	}
	host, err := os.Hostname()
	if err != nil {
		p.Warnf("verification state of job %s is not shown: host name: %v", name, err)
		return nil
	}
	r, err := openJobRepository(ctx, s.cfg, def.Repository)
	if errors.Is(err, repo.ErrNoRepository) {
		return nil // not made yet (create_if_missing): nothing to verify
	}
	if err != nil {
		p.Warnf("verification state of job %s is not shown: %v", name, err)
		return nil
	}
	defer r.Close()
	snaps, err := r.Snapshots(ctx)
	if err == nil {
		var verifications map[string]*repo.Verification
		if verifications, err = snapshotVerifications(ctx, r, p); err == nil {
			out := &jobVerifyJSON{VerifyFailed: []string{}, DeepEvery: deepEveryString(def.Verify.DeepEvery)}
			mine := jobs.MadeByJob(name, host, def.Sources)
			for _, snap := range snaps {
				if !mine(snap) {
					continue
				}
				out.Snapshots++
				v := verifications[snap.ID]
				if v == nil {
					continue
				}
				out.Verified++
				if !v.OK {
					out.VerifyFailed = append(out.VerifyFailed, snap.ID)
				}
				if v.Deep && (out.LastDeep == nil || v.Time.After(*out.LastDeep)) {
					out.LastDeep = &v.Time
				}
			}
			return out
		}
	}
	p.Warnf("verification state of job %s is not shown: %v", name, err)
	return nil
}

// deepEveryString gives a deep_verify_every as the config writes it.
func deepEveryString(d time.Duration) string {
	switch {
	case d == 0:
		return "always"
	case d < 0:
		return "never"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// openJobRepository opens the configured repository name (never creating
// it), with its configured password.
func openJobRepository(ctx context.Context, cfg *config.Config, name string) (*repo.Repository, error) {
	rc := cfg.Repositories[name]
	be, err := backend.OpenWith(ctx, configLocation(rc), rc.Options)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", name, err)
	}
	r, err := openCached(ctx, be, configLocation(rc), scheduledCache(), repo.OpenOptions{Password: func() ([]byte, error) { return repositoryPassword(ctx, rc) }}, logCacheWarning)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", name, err)
	}
	return r, nil
}

// jobAction wraps a job subcommand: it takes the job NAME argument, opens
// the scheduler with the jobs synchronised, and closes it afterwards.
func jobAction(run func(c *cli.Context, p *printer, s *scheduler, name string) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		p := newPrinter(c)
		name, err := jobArg(c)
		if err != nil {
			return err
		}
		s, err := openJobs(c, p)
		if err != nil {
			return err
		}
		defer s.db.Close()
		defer s.closeNotifications(c.Context, p) // job run --wait and drill run passes
		return run(c, p, s, name)
	}
}

// jobError maps the state database's answers to exit codes.
func jobError(err error) error {
	switch {
	case errors.Is(err, db.ErrUnknownJob), errors.Is(err, db.ErrNotFound):
		return usageError{err}
	case errors.Is(err, db.ErrActive):
		// The run in the way says it all, without the wrappers that
		// repeat the job's name.
		var active *db.ActiveRunError
		if errors.As(err, &active) {
			err = active
		}
		return codedError{code: ExitConflict, err: err}
	}
	return err
}

func runJobRun(c *cli.Context, p *printer, s *scheduler, name string) error {
	info, err := s.db.JobByName(c.Context, name)
	if err != nil {
		return jobError(err)
	}
	if err := checkClock(c, s.db, c.Bool("wait")); err != nil { // --wait runs passes
		return err
	}
	force := c.Bool("force")
	run, err := s.db.QueueJobRun(c.Context, name, pass.Run{Trigger: pass.TriggerManual, Kind: s.pass.Jobs[name].RunKind()}, actor(), force)
	if errors.Is(err, db.ErrPaused) {
		return codedError{code: ExitConflict, err: fmt.Errorf("job %s is paused: nothing was queued; nightjar job resume %s, or job run --force %s to run it once and leave it paused", name, name, name)}
	}
	if err != nil {
		return jobError(fmt.Errorf("job %s: %w", name, err))
	}
	if info.Paused && force {
		p.Warnf("job %s is paused: this run was forced (recorded in the audit), the job stays paused", name)
	}
	if !c.Bool("wait") {
		if err := p.JSON(toRunJSON(run)); err != nil {
			return err
		}
		p.Printf("run %d of job %s is queued: the next tick starts it (it has not run yet)\n", run.ID, name)
		return nil
	}
	// In the crash test's build only: the test holds this process here,
	// so that another process admits the run before this one's pass.
	if err := crashpoint.Hold(c.Context, "job-run-queued"); err != nil {
		return fmt.Errorf("run %d of job %s is queued: %w", run.ID, name, err)
	}
	s.pass.Executor = newExecutor(s.cfg, s.now, s.db)
	ended, held, err := awaitRun(c, p, s, run.ID)
	if err != nil {
		return err
	}
	if err := p.JSON(toRunJSON(ended)); err != nil {
		return err
	}
	if held != "" {
		p.Printf("run %d of job %s is queued but held: %s\n", run.ID, name, held)
		return codedError{code: ExitBusy, err: fmt.Errorf("run %d is held: %s", run.ID, held), silent: true}
	}
	p.Printf("run %d of job %s: %s\n", ended.ID, name, describeRun(ended))
	if err := awaitFollowUp(c, p, s, ended); err != nil {
		return err
	}
	switch ended.Status {
	case pass.StatusSucceeded:
		return nil
	case pass.StatusPartialFailure:
		return codedError{code: ExitPartial, err: fmt.Errorf("run %d: %s", ended.ID, ended.Message), silent: true}
	}
	return codedError{code: ExitFailure, err: fmt.Errorf("run %d: %s", ended.ID, ended.Status), silent: true}
}

// awaitFollowUp runs the runs a succeeded backup run queued with its
// result, one after the other (its verify run, then the retention run the
// verify queues; or the retention run alone when verify is off), so that
// job run --wait leaves the job as a scheduled backup would: verified, with
// its retention done and no run still queued. A failed verification fails
// the command (exit 1): the snapshot just made cannot be trusted. A held
// follow-up, or one failed otherwise, is a warning: the exit code stays the
// backup's.
func awaitFollowUp(c *cli.Context, p *printer, s *scheduler, ended pass.Run) error {
	if ended.Kind != pass.KindBackup || ended.Status != pass.StatusSucceeded {
		return nil
	}
	var failed error
	for _, kind := range []string{pass.KindVerify, pass.KindRetention} {
		info, err := s.db.JobByName(c.Context, ended.Job)
		if err != nil {
			return jobError(err)
		}
		if info.Active == nil || info.Active.Kind != kind || info.Active.Status != pass.StatusQueued {
			continue
		}
		follow, held, err := awaitRun(c, p, s, info.Active.ID)
		switch {
		case err != nil:
			return err
		case held != "":
			p.WarnRunf(follow.ID, ended.Job, "%s run %d of job %s is queued but held: %s", kind, follow.ID, ended.Job, held)
			return failed
		case follow.Kind == pass.KindVerify && follow.ErrorCode == jobs.CodeVerifyFailed:
			p.WarnRunf(follow.ID, ended.Job, "%s run %d of job %s: %s", kind, follow.ID, ended.Job, describeRun(follow))
			failed = codedError{code: ExitFailure, err: fmt.Errorf("run %d: verify_failed", follow.ID), silent: true}
		case follow.Status != pass.StatusSucceeded:
			p.WarnRunf(follow.ID, ended.Job, "%s run %d of job %s: %s", kind, follow.ID, ended.Job, describeRun(follow))
		default:
			p.Printf("run %d of job %s (%s): %s\n", follow.ID, ended.Job, kind, describeRun(follow))
		}
	}
	return failed
}

// awaitPoll is how often job run --wait looks at a run another process is
// running, or runs another pass for a run still queued.
const awaitPoll = 500 * time.Millisecond

// awaitRun runs passes until the run with id has ended and returns it as
// recorded, or returns it queued with the reason admission holds it back
// (empty when it ended).
//
// Another nightjar process (serve, tick, another job run --wait) may admit
// the run between QueueRun and this process's pass (the crash test's build
// holds this process there to test it); this pass then cannot start it.
// Returning then would let "job run X --wait && next" go on while the
// backup runs, so the run is watched until that process ends it. A run
// whose runner dies is left to the next pass, whose reclaim ends it.
func awaitRun(c *cli.Context, p *printer, s *scheduler, id int64) (pass.Run, string, error) {
	told := false
	for {
		sum, err := s.pass.Run(c.Context)
		if err != nil {
			return pass.Run{}, "", err
		}
		// A pass cut short by a signal has recorded its runs as
		// interrupted: say so with the usual exit code.
		if err := c.Context.Err(); err != nil {
			return pass.Run{}, "", fmt.Errorf("wait for run %d: %w", id, err)
		}
		run, err := s.db.Run(c.Context, id)
		if err != nil {
			return pass.Run{}, "", fmt.Errorf("wait for run %d: %w", id, err)
		}
		for _, h := range sum.Held {
			if h.RunID == id {
				return run, h.Reason, nil
			}
		}
		// This pass waited for the runs it started, so a run still running
		// is another process's.
		for run.Status == pass.StatusRunning && !s.pass.Orphaned(run) {
			if !told {
				p.Printf("run %d of job %s is being run by another nightjar process (%s): waiting for it to end\n", run.ID, run.Job, run.Runner)
				told = true
			}
			if err := sleepCtx(c.Context, awaitPoll); err != nil {
				return pass.Run{}, "", fmt.Errorf("wait for run %d, which the other process goes on running: %w", id, err)
			}
			if run, err = s.db.Run(c.Context, id); err != nil {
				return pass.Run{}, "", fmt.Errorf("wait for run %d: %w", id, err)
			}
		}
		if run.Status != pass.StatusQueued && run.Status != pass.StatusRunning {
			return run, "", nil
		}
		// Queued but not yet due (its NotBefore is ahead), so neither
		// admitted nor held, or orphaned: a later pass admits or reclaims it.
		if err := sleepCtx(c.Context, awaitPoll); err != nil {
			return pass.Run{}, "", fmt.Errorf("wait for run %d: %w", id, err)
		}
	}
}

// sleepCtx waits for d, or returns ctx's error once ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func runJobPause(c *cli.Context, p *printer, s *scheduler, name string) error {
	changed, err := s.db.PauseJob(c.Context, name, actor())
	if err != nil {
		return jobError(err)
	}
	if !changed {
		p.Printf("job %s was already paused\n", name)
		return nil
	}
	p.Printf("job %s is paused: no new runs are claimed (a queued or running run is left alone)\n", name)
	return nil
}

func runJobResume(c *cli.Context, p *printer, s *scheduler, name string) error {
	def, ok := s.pass.Jobs[name]
	if !ok {
		return usageError{fmt.Errorf("job %q: %w", name, db.ErrUnknownJob)}
	}
	next, err := s.pass.NextRun(def, s.now())
	if err != nil {
		return err
	}
	changed, err := s.db.ResumeJob(c.Context, name, next, actor())
	if err != nil {
		return jobError(err)
	}
	if !changed {
		p.Printf("job %s was not paused\n", name)
		return nil
	}
	if next.IsZero() {
		p.Printf("job %s is resumed (it runs only on request)\n", name)
	} else {
		p.Printf("job %s is resumed: next run %s (%s from now)\n", name, humanTime(next), humanize.RelTime(s.now(), next, "", ""))
	}
	return nil
}

func runJobExplain(c *cli.Context, p *printer, s *scheduler, name string) error {
	info, err := s.db.JobByName(c.Context, name)
	if errors.Is(err, db.ErrUnknownJob) {
		return usageError{fmt.Errorf("job %q: %w", name, db.ErrUnknownJob)}
	}
	if err != nil {
		return err
	}
	e, err := s.pass.ExplainJob(c.Context, info.Job)
	if err != nil {
		return err
	}
	if last := info.LastRun; last != nil && last.Status == pass.StatusFailed {
		// Why the last run failed is often why the job does not get on:
		// a repository that cannot be set up fails each of its runs.
		e.Lines = append(e.Lines, fmt.Sprintf("its last run %d %s", last.ID, describeRun(*last)))
	}
	if p.jsonOut {
		var next *string
		if !e.NextRun.IsZero() {
			t := e.NextRun.UTC().Format(time.RFC3339)
			next = &t
		}
		return p.JSON(map[string]any{"job": e.Job, "state": e.State, "next_run": next, "reasons": nonNil(e.Lines)})
	}
	p.Printf("%s", e.String())
	return nil
}

func runsCommand() *cli.Command {
	flags := func(extra ...cli.Flag) []cli.Flag { return append(configFlags(), extra...) }
	return &cli.Command{
		Name:      "runs",
		Usage:     "list the runs of jobs, newest first",
		ArgsUsage: " ",
		Flags: flags(jsonFlag(),
			&cli.StringFlag{Name: "job", Usage: "only runs of job `NAME`"},
			statusFlag("only runs in `STATUS` "+strings.Join(runStatuses, ", ")),
			&cli.StringFlag{Name: "repository", Usage: "only runs of jobs that write to repository `NAME` (its name in the config)"},
			&cli.StringFlag{Name: "kind", Usage: "only runs of `KIND` " + strings.Join(runKinds, ", ")},
			limitFlag(20, "runs"),
			&cli.Int64Flag{Name: "before", Usage: "only runs with an ID below `RUN` (the next page)"}),
		Action: runRunsList,
		Subcommands: []*cli.Command{
			{Name: "show", Usage: "show one run", ArgsUsage: "RUN", Flags: flags(jsonFlag()), Action: runAction(runRunsShow)},
			{Name: "cancel", Usage: "cancel a queued or running run", ArgsUsage: "RUN", Flags: flags(), Action: runAction(runRunsCancel)},
		},
	}
}

// openState loads the config and opens the state database alone: reading
// runs needs neither the executor nor a synchronised config.
func openState(c *cli.Context) (*config.Config, *db.DB, error) {
	cfg, err := loadConfig(c, time.Now())
	if err != nil {
		return nil, nil, err
	}
	state, err := db.Open(c.Context, statePath(c, cfg), time.Now)
	return cfg, state, err
}

func runRunsList(c *cli.Context) error {
	p := newPrinter(c)
	limit, err := pageFlags(c)
	if err != nil {
		return err
	}
	statuses, err := statusValues(c, runStatuses)
	if err != nil {
		return err
	}
	if k := c.String("kind"); k != "" && !slices.Contains(runKinds, k) {
		return usageError{fmt.Errorf("invalid --kind %q: want one of %s", k, strings.Join(runKinds, ", "))}
	}
	cfg, state, err := openState(c)
	if err != nil {
		return err
	}
	defer state.Close()
	if err := checkRepositoryFlag(c, cfg); err != nil {
		return err
	}
	if err := checkJobFlag(c, cfg, state); err != nil {
		return err
	}
	runs, err := state.Runs(c.Context, db.RunFilter{Job: c.String("job"), Statuses: statuses, Repository: c.String("repository"),
		Kind: c.String("kind"), Before: c.Int64("before"), Limit: pageLimit(limit)})
	if errors.Is(err, db.ErrUnknownJob) {
		runs, err = nil, nil // a job of the config that no pass stored yet: it has no runs
	}
	if err != nil {
		return err
	}
	runs, more := onePage(runs, limit)
	if p.jsonOut {
		return p.JSON(runsJSON(runs))
	}
	if len(runs) == 0 {
		p.Printf("no runs%s\n", filtersSaid(c, runFilters...))
		return nil
	}
	p.Printf("%-6s %-20s %-9s %-9s %-3s %-16s %-20s %s\n", "RUN", "JOB", "KIND", "TRIGGER", "TRY", "STATUS", "STARTED", "MESSAGE")
	for _, r := range runs {
		started := "-"
		if !r.StartedAt.IsZero() {
			started = humanTime(r.StartedAt)
		}
		msg := r.Message
		if r.Status == pass.StatusQueued && r.HeldReason != "" {
			msg = r.HeldReason
		}
		p.Printf("%-6d %-20s %-9s %-9s %-3d %-16s %-20s %s\n", r.ID, r.Job, r.Kind, r.Trigger, r.Attempt, r.Status, started, msg)
	}
	if more {
		p.Printf("more: %s --before %d\n", nextPage(c, runFilters...), runs[len(runs)-1].ID)
	}
	return nil
}

// runFilters are the flags of runs that a next page repeats.
var runFilters = []string{"job", "status", "repository", "kind"}

// runAction wraps a runs subcommand: it takes the RUN argument and opens
// the state database, and closes it afterwards.
func runAction(run func(c *cli.Context, p *printer, state *db.DB, id int64) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		p := newPrinter(c)
		id, err := runArg(c)
		if err != nil {
			return err
		}
		_, state, err := openState(c)
		if err != nil {
			return err
		}
		defer state.Close()
		return run(c, p, state, id)
	}
}

func runArg(c *cli.Context) (int64, error) {
	if c.NArg() != 1 {
		return 0, usageError{fmt.Errorf("%s needs exactly one RUN id (nightjar runs lists them)", commandName(c.Command))}
	}
	id, err := strconv.ParseInt(c.Args().First(), 10, 64)
	if err != nil || id <= 0 {
		return 0, usageError{fmt.Errorf("invalid run id %q: want a positive number", c.Args().First())}
	}
	return id, nil
}

func runRunsShow(c *cli.Context, p *printer, state *db.DB, id int64) error {
	r, err := state.Run(c.Context, id)
	if err != nil {
		return jobError(fmt.Errorf("run %d: %w", id, err))
	}
	out := toRunJSON(r)
	out.Output = r.Output
	runVerifications(c, p, r, &out)
	if p.jsonOut {
		return p.JSON(out)
	}
	printRun(p, r)
	for _, s := range out.Snapshots {
		if s.Verified == "" {
			continue
		}
		id := s.SnapshotID
		if s.CurrentID != "" {
			id += " (now " + s.CurrentID + ")"
		}
		p.Printf("  snapshot %s: %s\n", id, s.Verified)
		for _, problem := range s.Problems {
			p.Printf("    %s\n", problem)
		}
	}
	if r.Kind == pass.KindVerify && r.ErrorCode == jobs.CodeVerifyFailed {
		p.Printf("  verify_failed: the snapshots it names are marked in the repository (nightjar snapshots --verify-failed)\n")
	}
	printRunOutput(p, r)
	return nil
}

// runVerifications fills in the verification of each snapshot the run
// made, from the repository of the run's job, which the config names. When
// that cannot be read it warns, and the run is shown without them.
func runVerifications(c *cli.Context, p *printer, r pass.Run, out *runJSON) {
	if len(r.Snapshots) == 0 {
		return
	}
	cfg, err := loadConfig(c, time.Now())
	if err != nil {
		p.Warnf("verification of the run's snapshots is not shown: %v", err)
		return
	}
	i := slices.IndexFunc(cfg.Jobs, func(j config.Job) bool { return j.Def.Name == r.Job })
	if i < 0 {
		p.Warnf("verification of the run's snapshots is not shown: job %s is no longer in the config", r.Job)
		return
	}
	rp, err := openJobRepository(c.Context, cfg, cfg.Jobs[i].Def.Repository)
	if err != nil {
		p.Warnf("verification of the run's snapshots is not shown: %v", err)
		return
	}
	defer rp.Close()
	verifyRunSnapshots(c.Context, p, rp, r, out.Snapshots)
}

// printRun writes a run for runs show: its times in the order they happen,
// then its counters by name and its skipped objects.
func printRun(p *printer, r pass.Run) {
	p.Printf("run %d of job %s: %s\n", r.ID, r.Job, describeRun(r))
	p.Printf("  kind %s, trigger %s, attempt %d, missed slots before it: %d\n", r.Kind, r.Trigger, r.Attempt, r.MissedSlots)
	if r.Status == pass.StatusRunning {
		p.Printf("  running: %s\n", runningProgress(r))
		p.Printf("  heartbeat %s\n", humanTime(r.HeartbeatAt))
	}
	for _, t := range []struct {
		label string
		at    time.Time
	}{{"scheduled", r.ScheduledAt}, {"started", r.StartedAt}, {"ended", r.EndedAt}} {
		if !t.at.IsZero() {
			p.Printf("  %-9s %s\n", t.label, humanTime(t.at))
		}
	}
	if r.HeldReason != "" {
		p.Printf("  held: %s\n", r.HeldReason)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Figures.Counters)) {
		p.Printf("  %s: %d\n", name, r.Figures.Counters[name])
	}
	for _, s := range r.Figures.Skipped {
		p.Printf("  skipped %s: %s\n", s.Object, s.Reason)
	}
}

func runRunsCancel(c *cli.Context, p *printer, state *db.DB, id int64) error {
	r, err := state.CancelRun(c.Context, id, actor())
	if err != nil {
		return jobError(fmt.Errorf("run %d: %w", id, err))
	}
	if r.Status == pass.StatusCancelled {
		p.Printf("run %d of job %s is cancelled\n", r.ID, r.Job)
	} else {
		p.Printf("run %d of job %s: cancellation requested; its runner stops it at its next heartbeat\n", r.ID, r.Job)
	}
	return nil
}
