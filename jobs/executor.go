package jobs

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/backup"
	"github.com/nightjar-backup/nightjar/backup/filter"
	"github.com/nightjar-backup/nightjar/backup/limit"
	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// RepositoryOpener opens a repository by its config name, creating it when
// the config allows. It is wired by cmd.
type RepositoryOpener func(ctx context.Context, name string) (*repo.Repository, error)

// JobSources gives the sources of a job: each path with its excludes.
type JobSources func(job string) ([]SourceSpec, []string)

// SourceSpec is one source a job backs up: a path with its excludes, or a
// command whose standard output is backed up as the file
// backup.StreamPath(name), which is then its Path.
type SourceSpec struct {
	Path    string
	Exclude []string
	Command []string      // argv of a command source; nil: a path
	Timeout time.Duration // a command source's; 0: none
}

// Executor runs the runs of scheduled jobs, by their kind. A backup makes
// one snapshot per source, in one repository opened once per run.
type Executor struct {
	Open RepositoryOpener
	// Fresh opens a repository for the runs that judge it (verify and
	// drill): everything read comes from the repository itself, never
	// from a local copy (cmd's cache of a remote repository's index and
	// trees), so that damage there is seen. nil: Open.
	Fresh RepositoryOpener
	// Lookup opens a repository to look into it (RunSnapshots): never
	// creating one, and read only; nil: no lookups.
	Lookup  RepositoryOpener
	Sources JobSources
	Version string
	Now     func() time.Time // the clock snapshots are dated by; nil: time.Now
	Catalog CatalogSync      // rebuilds the state database's catalog around retention runs; nil: none
	Drill   DrillOptions     // where drill runs restore
	Hooks   JobHooks         // the hooks of each job's backup runs; nil: none
	// Environ is the environment hooks and command sources start from:
	// the scheduler's own, which cmd gives without the variables that
	// may hold a password (ScrubEnviron); nil: empty.
	Environ []string
	// ProgressEvery is how often a backup run reports its figures while
	// a source is backed up (cmd: the heartbeat, which stores them); 0:
	// only as it begins each source.
	ProgressEvery time.Duration

	progressTicker func() (<-chan time.Time, func()) // tests: the ticker of the reports during a source
}

var _ pass.Executor = (*Executor)(nil)

// Error codes of the Executor.
const (
	CodeUnknownKind = "UNKNOWN_KIND" // the run's kind is not one this nightjar runs
)

// Execute runs a run by its kind. An unknown kind is a config error.
func (e *Executor) Execute(ctx context.Context, job pass.JobDef, run pass.Run, progress func(pass.Progress)) (pass.Result, error) {
	switch run.Kind {
	case pass.KindPrune:
		return e.pruneRun(ctx, job, progress)
	case pass.KindBackup:
		return e.backupRun(ctx, job, run, progress)
	case pass.KindRetention:
		return e.retentionRun(ctx, job, run, progress)
	case pass.KindVerify:
		return e.verifyRun(ctx, job, progress)
	case pass.KindDrill:
		return e.drillRun(ctx, job, progress)
	}
	return pass.Result{}, &pass.ClassError{Class: pass.ClassConfig, Code: CodeUnknownKind,
		Err: fmt.Errorf("run %d of job %s has kind %q, which this nightjar cannot run: upgrade nightjar", run.ID, job.Name, run.Kind)}
}

// openShared opens the job's repository, takes its shared lock for the
// purpose ("backup", "verify", "drill": the lock says "PURPOSE of job
// NAME") and loads its index, as every run that reads or adds data does;
// release unlocks and closes it, and sets *errp, when nil, to the classed
// error of a lock lost meanwhile. Its errors carry a class.
func (e *Executor) openShared(ctx context.Context, job pass.JobDef, purpose string) (r *repo.Repository, release func(errp *error), err error) {
	open := e.Open
	if (purpose == "verify" || purpose == "drill") && e.Fresh != nil {
		open = e.Fresh
	}
	r, err = e.openRepository(ctx, job, open)
	if err != nil {
		return nil, nil, err
	}
	lock, err := r.Lock(ctx, false, purpose+" of job "+job.Name)
	if err != nil {
		r.Close()
		return nil, nil, Classify(err)
	}
	release = func(errp *error) {
		if err := lock.Unlock(); err != nil && *errp == nil {
			*errp = Classify(err)
		}
		r.Close()
	}
	if err := r.LoadIndex(ctx); err != nil {
		release(&err)
		return nil, nil, Classify(err)
	}
	return r, release, nil
}

// openRepository opens the job's repository for a run with open (the
// executor's Open or Fresh). An error that carries no class of its own is
// class repository (OPEN_FAILED): the repository could not be set up, and
// only this job's run fails for it.
func (e *Executor) openRepository(ctx context.Context, job pass.JobDef, open RepositoryOpener) (*repo.Repository, error) {
	r, err := open(ctx, job.Repository)
	if err == nil {
		return r, nil
	}
	err = Classify(fmt.Errorf("open repository %s: %w", job.Repository, err))
	var ce *pass.ClassError
	if errors.As(err, &ce) && ce.Class == pass.ClassUnknown {
		ce.Class, ce.Code = pass.ClassRepository, CodeOpenFailed
	}
	return nil, err
}

// backupSources backs up each source of the job into its own snapshot,
// reporting progress as it begins each and every ProgressEvery while it
// runs; h collects the standard error of its command sources. A source
// that fails is a skipped object and does
// not stop the others; all sources failing is a failure with code
// ALL_SOURCES_FAILED.
func (e *Executor) backupSources(ctx context.Context, job pass.JobDef, run pass.Run, progress func(pass.Progress), h *hookRun) (res pass.Result, err error) {
	sources, tags := e.Sources(job.Name)
	if len(sources) == 0 {
		return res, &pass.ClassError{Class: pass.ClassConfig, Code: "NO_SOURCES", Err: fmt.Errorf("job %s has no sources", job.Name)}
	}
	r, release, err := e.openShared(ctx, job, "backup")
	if err != nil {
		return res, err
	}
	defer release(&err)
	defer func() { reportUnreadable(r, &res.Figures) }()
	sweepTemp(ctx, r, &res.Figures)
	var limiter *limit.Limiter
	if job.Backup.Bandwidth > 0 {
		limiter = limit.New(job.Backup.Bandwidth)
	}
	var failed []string // "path: reason" of each source that could not be read
	missing := 0        // of them, the sources that did not exist
	for _, src := range sources {
		progress(pass.Progress{Figures: res.Figures.Clone(), Current: "source " + src.Path})
		if src.Command != nil {
			opts := backup.StreamOptions{
				Name: path.Base(src.Path), Tags: append(append([]string{}, tags...), JobTag(job.Name)),
				Limiter: limiter, Run: run.ID, Version: e.Version, Now: e.Now, Progress: &backup.Progress{},
			}
			stopReports := e.reportDuring(progress, res.Figures, "source "+src.Path, opts.Progress)
			out, err := e.commandSource(ctx, r, src, opts, h)
			stopReports()
			var cerr *CommandError
			switch {
			case err == nil:
				res.Figures.BytesRead += out.Snapshot.Summary.BytesRead
				res.Figures.BytesAdded += out.Snapshot.Summary.BytesAdded
				res.Figures.Files++
				res.Snapshots = append(res.Snapshots, pass.SnapshotRef{RepositoryID: r.ID(), SnapshotID: out.Snapshot.ID, Source: src.Path})
			case ctx.Err() != nil:
				return res, &pass.ClassError{Class: pass.ClassCancelled, Code: pass.CodeCancelled, Err: ctx.Err()}
			case errors.As(err, &cerr):
				// The command failed: no snapshot was saved of what it
				// wrote, which may be cut short.
				reason := commandReason(cerr) + "; no snapshot was saved"
				failed = append(failed, src.Path+": "+reason)
				res.Figures.FilesSkipped++
				res.Figures.Skipped = append(res.Figures.Skipped, pass.Skipped{Object: "source " + src.Path, Reason: reason})
			default:
				return res, Classify(fmt.Errorf("source %s: %w", src.Path, err))
			}
			continue
		}
		opts := backup.Options{
			Paths:    []string{src.Path},
			Tags:     append(append([]string{}, tags...), JobTag(job.Name)),
			Excludes: src.Exclude,
			Limiter:  limiter,
			Run:      run.ID,
			Version:  e.Version,
			Now:      e.Now,
		}
		if len(src.Exclude) > 0 {
			m, err := filter.Compile(src.Exclude)
			if err != nil {
				return res, &pass.ClassError{Class: pass.ClassConfig, Code: "BAD_EXCLUDE", Err: err}
			}
			opts.Exclude = m
		}
		opts.Progress = &backup.Progress{}
		stopReports := e.reportDuring(progress, res.Figures, "source "+src.Path, opts.Progress)
		out, err := backup.Backup(ctx, r, opts)
		stopReports()
		if err != nil {
			if ctx.Err() != nil {
				return res, &pass.ClassError{Class: pass.ClassCancelled, Code: pass.CodeCancelled, Err: ctx.Err()}
			}
			if !errors.Is(err, backup.ErrNothingSaved) {
				// A repository error stops the run: the next source would
				// meet it too.
				return res, Classify(fmt.Errorf("source %s: %w", src.Path, err))
			}
			reason := err.Error()
			var nothing *backup.NothingSavedError
			if errors.As(err, &nothing) && len(nothing.Skipped) == 1 {
				reason = nothing.Skipped[0].Reason
			}
			if nothing != nil && nothing.SourcesMissing() {
				missing++
			}
			failed = append(failed, src.Path+": "+reason)
			res.Figures.FilesSkipped++
			res.Figures.Skipped = append(res.Figures.Skipped, pass.Skipped{Object: "source " + src.Path, Reason: reason})
			continue
		}
		s := out.Snapshot.Summary
		res.Figures.BytesRead += s.BytesRead
		res.Figures.BytesAdded += s.BytesAdded
		res.Figures.Files += s.FilesNew + s.FilesChanged + s.FilesUnchanged
		res.Figures.FilesSkipped += s.FilesSkipped
		for _, sk := range s.Skipped {
			res.Figures.Skipped = append(res.Figures.Skipped, pass.Skipped{Object: sk.Path, Reason: sk.Reason})
		}
		res.Snapshots = append(res.Snapshots, pass.SnapshotRef{RepositoryID: r.ID(), SnapshotID: out.Snapshot.ID, Source: src.Path})
	}
	if len(failed) == len(sources) && missing == len(sources) {
		// No retry finds a path that was not there: the config or a
		// mount must change first.
		return res, &pass.ClassError{Class: pass.ClassConfig, Code: CodeSourceMissing,
			Err: fmt.Errorf("no source exists (%s): nothing was backed up; fix the job's source paths, or mount what holds them", strings.Join(failed, "; "))}
	}
	if len(failed) == len(sources) {
		// Each reason once: backup's own error already says "no source
		// could be read", and wrapping it would say it twice.
		return res, &pass.ClassError{Class: pass.ClassSource, Code: "ALL_SOURCES_FAILED",
			Err: fmt.Errorf("no source could be read (%s)", strings.Join(failed, "; "))}
	}
	return res, nil
}
