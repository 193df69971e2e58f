package cmd

import (
	"errors"
	"fmt"
	"os"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// pausedDrillError refuses a drill of a paused job, saying how to go on.
func pausedDrillError(name string) error {
	return codedError{code: ExitConflict, err: fmt.Errorf("job %s is paused: no drill was queued; nightjar job resume %s, or drill --force %s to drill it once and leave it paused", name, name, name)}
}

func drillCommand() *cli.Command {
	return &cli.Command{
		Name: "drill",
		Usage: "prove a job's backup restores: restore its newest snapshot of each source into a temporary folder, " +
			"compare every file with the repository, remove the folder; recorded as a run of kind drill",
		ArgsUsage: "JOB",
		Flags: append(append(configFlags(), atFlag()), jsonFlag(),
			&cli.StringFlag{Name: "temp-dir", EnvVars: []string{drillDirEnv},
				Usage: "make the temporary folder in `DIR` (default: TMPDIR); it needs room for the job's largest source"},
			&cli.BoolFlag{Name: "force", Usage: "drill a paused job once (the audit records it); it stays paused"}),
		Action: jobAction(runDrill),
	}
}

// runDrill queues a drill run of the job and runs it now through the
// scheduler's pass and executor, as job run --wait does, so that a drill by
// hand and a scheduled one are the same run.
func runDrill(c *cli.Context, p *printer, s *scheduler, name string) error {
	info, err := s.db.JobByName(c.Context, name)
	if err != nil {
		return jobError(err)
	}
	// A paused job is refused as job run refuses it: a drill by hand is
	// a run triggered by hand. The job's own pause decides, in the queueing
	// transaction when the drill is queued on the job itself.
	force := c.Bool("force")
	if info.Paused && !force {
		return pausedDrillError(name)
	}
	dir := c.String("temp-dir")
	if dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return usageError{fmt.Errorf("invalid --temp-dir %q: want an existing folder to make the drill's temporary folder in", dir)}
		}
	}
	if err := checkClock(c, s.db, true); err != nil { // the drill runs through passes
		return err
	}
	// A job with drill = SPEC has its drills under its scheduled work
	// (NAME:drill): a drill by hand is queued there too, so that all its
	// drills are listed together and none waits for the job's backup.
	queueOn := name
	if _, err := s.db.JobByName(c.Context, pass.DrillJobName(name)); err == nil {
		queueOn = pass.DrillJobName(name)
	} else if !errors.Is(err, pass.ErrUnknownJob) {
		return jobError(err)
	}
	var run pass.Run
	drill := pass.Run{Kind: pass.KindDrill, Trigger: pass.TriggerManual}
	if queueOn == name {
		run, err = s.db.QueueJobRun(c.Context, queueOn, drill, actor(), force)
	} else {
		run, err = s.db.QueueRun(c.Context, queueOn, drill, actor())
	}
	if errors.Is(err, db.ErrPaused) {
		return pausedDrillError(name)
	}
	if err != nil {
		return jobError(fmt.Errorf("job %s: %w", queueOn, err))
	}
	if info.Paused {
		p.Warnf("job %s is paused: this drill was forced, the job stays paused", name)
	}
	exec := newExecutor(s.cfg, s.now, s.db)
	exec.Drill.TempDir = dir
	s.pass.Executor = exec
	ended, held, err := awaitRun(c, p, s, run.ID)
	if err != nil {
		return err
	}
	if err := p.JSON(toRunJSON(ended)); err != nil {
		return err
	}
	if held != "" {
		p.Printf("drill run %d of job %s is queued but held: %s\n", run.ID, name, held)
		return codedError{code: ExitBusy, err: fmt.Errorf("run %d is held: %s", run.ID, held), silent: true}
	}
	k := ended.Figures.Counters
	p.Printf("drill run %d of job %s: %s\n", ended.ID, name, describeRun(ended))
	p.Printf("  %d snapshots restored, %d files (%s) compared with the repository, %d differ\n",
		k[jobs.CounterSnapshotsChecked], k[jobs.CounterFilesChecked], humanize.IBytes(uint64(k[jobs.CounterBytesChecked])), k[jobs.CounterMismatches])
	for _, sk := range ended.Figures.Skipped {
		p.WarnRunf(ended.ID, ended.Job, "not checked %s: %s", sk.Object, sk.Reason)
	}
	switch ended.Status {
	case pass.StatusSucceeded:
		return nil
	case pass.StatusPartialFailure:
		return codedError{code: ExitPartial, err: fmt.Errorf("drill run %d: %d objects not checked", ended.ID, ended.Figures.FilesSkipped), silent: true}
	}
	return codedError{code: ExitFailure, err: fmt.Errorf("drill run %d: %s", ended.ID, ended.Status), silent: true}
}
