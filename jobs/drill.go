package jobs

import (
	"context"
	"errors"
	"fmt"
	"github.com/nightjar-backup/nightjar/repo/backend/lease"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nightjar-backup/nightjar/repo"
	"github.com/nightjar-backup/nightjar/restore"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// Counters of a drill run.
const (
	CounterSnapshotsChecked = "snapshots_checked" // restored and compared: the newest of each source
	CounterFilesChecked     = "files_checked"     // files read back and found equal to the repository
	CounterBytesChecked     = "bytes_checked"     // their content
	CounterMismatches       = "mismatches"        // files that differ from the repository
	CounterAbandonedRemoved = "abandoned_removed" // folders of killed drills removed before this one
)

// Error codes of a drill run. All but NO_SNAPSHOT are class integrity.
const (
	CodeNoSnapshot      = "NO_SNAPSHOT"      // the job has made no snapshot on this host
	CodeDrillMismatch   = "DRILL_MISMATCH"   // a restored file differs from the repository's hashes
	CodeDrillUnreadable = "DRILL_UNREADABLE" // a tree or a chunk of the snapshot cannot be read or decrypted
)

// mismatchesNamed is how many differing files a drill's message names.
const mismatchesNamed = 3

// DrillOptions say where drill runs restore.
type DrillOptions struct {
	TempDir string     // the folder drills make their temporary folders in; "": the system's (TMPDIR)
	FS      restore.FS // the file system restores write through; nil: the OS (tests wrap it)
}

// drillRun restores the newest snapshot the job made of each of its
// sources on this host, one after the other, each into a fresh temporary
// folder (0700) that is removed whatever happens, and reads every restored
// file back against the repository's hashes (restore's verify: content,
// size and mtime). It holds a shared lock, like a restore, so that no
// prune runs beside it. A file that differs fails the run with
// DRILL_MISMATCH, a chunk or tree that cannot be read with
// DRILL_UNREADABLE, both of class integrity; a job without a snapshot with
// NO_SNAPSHOT. Sources without a snapshot yet, unreadable snapshot records
// and entries the restore could not make are skipped objects.
func (e *Executor) drillRun(ctx context.Context, job pass.JobDef, progress func(pass.Progress)) (_ pass.Result, err error) {
	res := pass.Result{Figures: pass.Figures{Counters: map[string]int64{
		CounterSnapshotsChecked: 0, CounterFilesChecked: 0, CounterBytesChecked: 0, CounterMismatches: 0, CounterAbandonedRemoved: 0}}}
	host, err := os.Hostname()
	if err != nil {
		return res, Classify(fmt.Errorf("host name: %w", err))
	}
	r, release, err := e.openShared(ctx, job, "drill")
	if err != nil {
		return res, err
	}
	defer release(&err)
	removeAbandonedDrills(e.Drill.TempDir, &res.Figures)
	targets, err := drillTargets(ctx, r, job, host, &res.Figures)
	if err != nil {
		return res, err
	}
	if len(targets) == 0 {
		return res, &pass.ClassError{Class: pass.ClassConfig, Code: CodeNoSnapshot,
			Err: fmt.Errorf("job %s has no snapshot of its sources on host %s to drill: run a backup first (nightjar job run %s --wait)", job.Name, host, job.Name)}
	}
	for _, s := range targets {
		progress(pass.Progress{Figures: res.Figures.Clone(), Current: fmt.Sprintf("drill snapshot %s of source %s", s.ID, s.Paths[0])})
		if err := e.drillSnapshot(ctx, r, s, &res.Figures); err != nil {
			return res, err
		}
	}
	return res, nil
}

// drillTargets returns the newest snapshot the job made of each of its
// sources on host, in the order of the sources, leaving out snapshots
// being forgotten. A source without one and a snapshot record that cannot
// be read are skipped objects in f.
func drillTargets(ctx context.Context, r *repo.Repository, job pass.JobDef, host string, f *pass.Figures) ([]*repo.Snapshot, error) {
	snaps, unreadable, err := ReadSnapshots(ctx, r)
	if err != nil {
		return nil, Classify(err)
	}
	forgetting, err := r.ForgettingIDs(ctx)
	if err != nil {
		return nil, Classify(err)
	}
	made := MadeByJob(job.Name, host, job.Sources)
	newest := map[string]*repo.Snapshot{}
	for _, s := range snaps { // oldest first: the last one of a source wins
		if made(s) && !slices.Contains(forgetting, s.ID) {
			newest[s.Paths[0]] = s
		}
	}
	for _, u := range unreadable {
		skip(f, "snapshot "+u.ID, "its record cannot be read, so it may be one of this job's: "+u.Err.Error())
	}
	var targets []*repo.Snapshot
	for _, src := range job.Sources {
		if s, ok := newest[src]; ok {
			targets = append(targets, s)
		} else {
			skip(f, "source "+src, "no snapshot of it on this host yet")
		}
	}
	return targets, nil
}

func skip(f *pass.Figures, object, reason string) {
	f.FilesSkipped++
	f.Skipped = append(f.Skipped, pass.Skipped{Object: object, Reason: reason})
}

// drillSnapshot restores s into a fresh temporary folder with verify, adds
// what was checked to f, and removes the folder.
func (e *Executor) drillSnapshot(ctx context.Context, r *repo.Repository, s *repo.Snapshot, f *pass.Figures) (err error) {
	dir, err := os.MkdirTemp(e.Drill.TempDir, fmt.Sprintf("%s%d-", drillFolderPrefix, os.Getpid()))
	if err != nil {
		return Classify(fmt.Errorf("drill folder: %w", err))
	}
	defer func() {
		if rerr := removeAll(dir); rerr != nil {
			skip(f, "drill folder "+dir, "not removed: "+rerr.Error())
		}
	}()
	out, err := restore.Run(ctx, r, s, restore.Options{Target: dir, Verify: true, FS: e.Drill.FS})
	if out != nil {
		f.Counters[CounterSnapshotsChecked]++
		f.Counters[CounterFilesChecked] += out.Verified
		f.Counters[CounterBytesChecked] += out.BytesVerified
		f.Counters[CounterMismatches] += int64(len(out.VerifyFailures))
		for _, sk := range out.Skipped {
			skip(f, sk.Path, "not restored, so not checked: "+sk.Reason)
		}
	}
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return &pass.ClassError{Class: pass.ClassCancelled, Code: pass.CodeCancelled, Err: ctx.Err()}
	case errors.Is(err, restore.ErrVerifyFailed) && out != nil:
		var named []string
		for _, m := range out.VerifyFailures[:min(len(out.VerifyFailures), mismatchesNamed)] {
			named = append(named, m.Path+" ("+m.Reason+")")
		}
		return &pass.ClassError{Class: pass.ClassIntegrity, Code: CodeDrillMismatch,
			Err: fmt.Errorf("snapshot %s: %d restored files differ from the repository: %s", s.ID, len(out.VerifyFailures), strings.Join(named, ", "))}
	case errors.Is(err, repo.ErrIntegrity), errors.Is(err, repo.ErrNotFound):
		return &pass.ClassError{Class: pass.ClassIntegrity, Code: CodeDrillUnreadable,
			Err: fmt.Errorf("snapshot %s cannot be restored: %w", s.ID, err)}
	}
	return Classify(fmt.Errorf("drill of snapshot %s: %w", s.ID, err))
}

// drillFolderPrefix begins the name of every drill's folder, followed by
// the pid of the process whose drill made it and a dash.
const drillFolderPrefix = "nightjar-drill-"

// removeAbandonedDrills removes the folders in tempDir ("" is the system's
// temporary folder) of drills whose process is gone: a drill killed
// (SIGKILL, a crash, a power cut) could not remove its restored copy
// itself. Folders of processes that still run are left alone; each one
// removed is counted, and one that cannot be removed is a skipped object
// of this run.
func removeAbandonedDrills(tempDir string, f *pass.Figures) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	entries, err := os.ReadDir(tempDir)
	if err != nil {
		skip(f, "drill folders in "+tempDir, "not searched for abandoned drills: "+err.Error())
		return
	}
	for _, entry := range entries {
		rest, ok := strings.CutPrefix(entry.Name(), drillFolderPrefix)
		pidText, _, dashed := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || !dashed || err != nil || !entry.IsDir() || pid == os.Getpid() || !lease.ProcessGone(pid) {
			continue
		}
		dir := filepath.Join(tempDir, entry.Name())
		if err := removeAll(dir); err != nil {
			skip(f, "drill folder "+dir, "abandoned by process "+pidText+", not removed: "+err.Error())
			continue
		}
		f.Counters[CounterAbandonedRemoved]++
	}
}

// removeAll removes a drill's folder. The restore gave its folders their
// modes from the snapshot, some of which forbid removing their entries,
// so each folder is made the owner's to change before it is emptied.
func removeAll(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			// WalkDir reads a folder after this call: open it up first.
			// A failure here shows in RemoveAll's error.
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
