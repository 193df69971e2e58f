package cmd

import (
	"context"
	"errors"
	"fmt"
	"github.com/nightjar-backup/nightjar/repo/backend/lease"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/cmd/internal/runnerid"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/notify"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// atFlag lets a command run at a simulated time, for tests and for trying
// a config on a state database of its own. The clock then advances from
// that instant. What the command writes (runs, snapshots, next-run times)
// is dated by that clock, so the flag is hidden, and checkClock refuses it
// on a state database that a live scheduler uses.
func atFlag() cli.Flag {
	return &cli.StringFlag{Name: "at", Hidden: true,
		Usage: "testing only: act as if the time were `RFC3339` and write what happens with that date; refused on a state database a live scheduler uses"}
}

// checkClock keeps the real and the simulated clock (--at) apart on one
// state database: --at is refused on a database that a pass on the real
// clock drove, and a pass on the real clock (passes set: tick, serve, job
// run --wait) on a database that --at drove. Both are usage errors.
func checkClock(c *cli.Context, state *db.DB, passes bool) error {
	mode := db.ClockSimulated
	if c.String("at") == "" {
		if !passes {
			return nil
		}
		mode = db.ClockReal
	}
	err := state.UseClock(c.Context, mode, time.Now())
	var mixed *db.ClockModeError
	if !errors.As(err, &mixed) {
		return err
	}
	if mode == db.ClockSimulated {
		return usageError{fmt.Errorf("--at refused: a live scheduler uses this state database (passes on the real clock since %s); "+
			"--at is for tests, with a state database of its own (--state FILE)", humanTime(mixed.Since))}
	}
	return usageError{fmt.Errorf("refused: this state database was driven by --at (simulated times since %s); "+
		"a live scheduler needs a state database of its own (--state FILE or [scheduler] state)", humanTime(mixed.Since))}
}

// clock returns the command's clock: the real time, or --at moving forward.
func clock(c *cli.Context) (func() time.Time, error) {
	at := c.String("at")
	if at == "" {
		return time.Now, nil
	}
	start, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return nil, usageError{fmt.Errorf("invalid --at %q: want RFC3339 such as 2026-03-29T01:30:00Z", at)}
	}
	began := time.Now()
	return func() time.Time { return start.Add(time.Since(began)) }, nil
}

// scheduler is what tick, serve and the job commands share.
type scheduler struct {
	cfg  *config.Config
	db   *db.DB
	pass *pass.Pass
	now  func() time.Time

	notifier *notify.Notifier // tells webhooks and healthchecks of runs (cmd/notify.go)
}

func openScheduler(c *cli.Context, withExecutor bool) (*scheduler, error) {
	now, err := clock(c)
	if err != nil {
		return nil, err
	}
	cfg, err := loadConfig(c, now())
	if err != nil {
		return nil, err
	}
	if withExecutor {
		tuneGCForBackup()
	}
	state, err := db.Open(c.Context, statePath(c, cfg), now)
	if err != nil {
		return nil, stateDamaged(statePath(c, cfg), err)
	}
	if err := checkClock(c, state, withExecutor); err != nil {
		state.Close()
		return nil, stateDamaged(statePath(c, cfg), err)
	}
	var exec pass.Executor
	if withExecutor {
		exec = newExecutor(cfg, now, state)
	}
	s := &scheduler{db: state, now: now, notifier: newNotifier()}
	s.configure(cfg, exec, newLogger(c, c.App.ErrWriter, c.Bool("verbose"), cfg))
	if withExecutor {
		if err := s.checkAfterUncleanStop(c.Context); err != nil {
			state.Close()
			return nil, stateDamaged(statePath(c, cfg), err)
		}
	}
	return s, nil
}

// checkAfterUncleanStop runs SQLite's quick_check on the state database
// when a runner stopped without recording its runs: a running run whose
// lease ran out or whose process is gone (what the pass's reclaim is about
// to end) means a crash, a kill or a power loss, after which the file is
// worth a look before a pass writes into it. A clean stop leaves no such
// run, and the check (which reads the whole file) is skipped.
func (s *scheduler) checkAfterUncleanStop(ctx context.Context) error {
	st, err := s.db.AdmitState(ctx)
	if err == nil {
		unclean := false
		for _, r := range st.Running {
			unclean = unclean || s.pass.Orphaned(r)
		}
		if !unclean {
			return nil
		}
	}
	// The state could not even be read: as much reason to check.
	if cerr := s.db.QuickCheck(ctx); cerr != nil {
		return cerr
	}
	return err
}

// stateDamaged says what to do about a damaged state database, in one
// line; any other error passes through.
func stateDamaged(path string, err error) error {
	var damaged *db.DamagedError
	if !errors.As(err, &damaged) {
		return err
	}
	return codedError{code: ExitStateDamaged, err: fmt.Errorf("state database %s is damaged (%s): nothing in it is needed to restore; "+
		"move it aside (with its -wal and -shm files): the next command starts a new one, and serve or each job's next retention run rebuilds the catalog from the repositories",
		path, strings.Join(damaged.Problems, "; "))}
}

// configure (re)builds the pass from a loaded config.
func (s *scheduler) configure(cfg *config.Config, exec pass.Executor, logger *slog.Logger) {
	self := runnerid.Self()
	s.cfg = cfg
	s.pass = &pass.Pass{
		Store: s.db, Executor: exec, Jobs: cfg.JobDefs(), Windows: cfg.Windows, Limits: cfg.Limits,
		Now: s.now, Heartbeat: cfg.Heartbeat, StaleAfter: cfg.StaleAfter, Grace: cfg.Grace,
		Runner:     self.String(),
		RunnerDead: runnerDead(self),
		Logger:     logger,
		Observers:  s.notifyObservers(cfg),
	}
}

// reload re-reads the config between passes of serve. A config that no
// longer loads keeps the previous one running, with a warning.
func (s *scheduler) reload(c *cli.Context, p *printer) {
	cfg, err := loadConfig(c, s.now())
	if err != nil {
		p.Warnf("config not reloaded, the previous one stays in force: %s", errorMessage(err))
		return
	}
	s.configure(cfg, newExecutor(cfg, s.now, s.db), newLogger(c, c.App.ErrWriter, c.Bool("verbose"), cfg))
}

// drillDirEnv names the folder drills restore into (default: TMPDIR):
// a drill needs room for the job's newest snapshots, one source at a time.
const drillDirEnv = "NIGHTJAR_DRILL_DIR"

// newExecutor is the executor of the config's jobs, which keeps state's
// catalog in step around retention runs.
func newExecutor(cfg *config.Config, now func() time.Time, state *db.DB) *jobs.Executor {
	open, fresh := repositoryOpeners(cfg, state)
	return &jobs.Executor{Open: open, Fresh: fresh, Lookup: lookupOpener(cfg), Sources: jobSources(cfg), Version: version, Now: now,
		Catalog: catalogHook(state), Drill: jobs.DrillOptions{TempDir: os.Getenv(drillDirEnv)},
		Hooks: jobHooks(cfg), Environ: hookEnviron(cfg),
		ProgressEvery: cfg.Heartbeat} // each heartbeat stores a backup's figures of that moment
}

// localProcesses answers runnerid's questions about this system's
// processes.
var localProcesses = runnerid.Prober{Gone: lease.ProcessGone, StartTime: runnerid.StartTime}

// runnerDead reports a runner of this host, boot and PID namespace whose
// process is gone (or whose PID a later process took). Any other runner is
// judged by its lease alone.
func runnerDead(self runnerid.ID) func(string) bool {
	return func(runner string) bool { return self.Dead(runner, localProcesses) }
}

func actor() db.Actor {
	a := db.Actor{}
	if u, err := user.Current(); err == nil {
		a.User = u.Username
	} else {
		a.User = strconv.Itoa(os.Getuid())
	}
	a.Host, _ = os.Hostname()
	return a
}

func tickCommand() *cli.Command {
	return &cli.Command{
		Name:  "tick",
		Usage: "run one scheduler pass: start the due jobs and wait for them",
		Description: "On a terminal tick prints a line for everything the pass did. When stdout is not a terminal\n" +
			"(cron, which mails any output) a pass that did nothing noteworthy prints nothing: only a failed or\n" +
			"partial run, a run given up, a warning or an error print a line, so that cron mails exactly then.",
		ArgsUsage: " ",
		Flags: append(configFlags(), atFlag(), jsonFlag(),
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print every line also when stdout is not a terminal, and log what the pass decides to stderr"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only failed and partial runs, runs given up, warnings and errors, also on a terminal"}),
		Action: runTick,
	}
}

func runTick(c *cli.Context) error {
	exitOnSecondSignal(c.Context)
	p := newPrinter(c)
	s, err := openScheduler(c, true)
	if err != nil {
		return err
	}
	defer s.db.Close()
	defer s.closeNotifications(c.Context, p)
	// The heartbeat's renewals and the pass may warn at once: one at a time.
	var warnMu sync.Mutex
	warn := func(format string, args ...any) {
		warnMu.Lock()
		defer warnMu.Unlock()
		p.Warnf(format, args...)
	}
	endStatus := statusPass(c.Context, s.cfg, s.db, s.now, db.PassTick, warn, func() {
		warnMu.Lock()
		defer warnMu.Unlock()
		metricsAfterTick(s, p)
	})
	stopNotice := context.AfterFunc(c.Context, func() { warn("%s", shutdownNotice) })
	sum, err := s.pass.Run(c.Context)
	stopNotice()
	endStatus()
	metricsAfterTick(s, p)
	if err != nil {
		return fmt.Errorf("tick: %w", err)
	}
	sum.Warnings = append(sum.Warnings, passWarnings(c.Context, s.cfg, s.db, s.pass.Jobs, sum.Started)...)
	if err := purgeHistory(c.Context, s.db, s.cfg.History, s.now(), s.pass.Logger); err != nil {
		p.Warnf("%v", err)
	}
	if err := reportPass(p, sum, tickPrintsAll(c)); err != nil {
		return err
	}
	if sum.Shutdown {
		return codedError{code: ExitInterrupted, err: errors.New("interrupted: running runs were recorded as interrupted and queued again")}
	}
	return nil
}

// shutdownNotice is what tick and serve say when a signal stops them.
var shutdownNotice = fmt.Sprintf("stopping: running runs get up to %s to record themselves as interrupted (a second signal stops at once)", pass.DefaultShutdownWait)

// passJSON is what tick --json prints.
type passJSON struct {
	Claimed   []runJSON `json:"claimed"`
	Started   []runJSON `json:"started"`
	Finished  []runJSON `json:"finished"`
	Requeued  []runJSON `json:"requeued"`
	Reclaimed []runJSON `json:"reclaimed"`
	Lost      []lostRun `json:"lost"`
	Held      []heldRun `json:"held"`
	Missed    []missed  `json:"missed"`
	Warnings  []string  `json:"warnings"`
	Shutdown  bool      `json:"shutdown"`
}

// lostRun is a run the pass gave up: nothing was written for it.
type lostRun struct {
	runJSON
	LostReason string `json:"lost_reason"`
}

type heldRun struct {
	RunID  int64  `json:"run_id"`
	Job    string `json:"job"`
	Reason string `json:"reason"`
}

type missed struct {
	Job      string    `json:"job"`
	Slots    int       `json:"slots"`
	Latest   time.Time `json:"latest"`
	CaughtUp bool      `json:"caught_up"`
}

// tickPrintsAll reports whether tick prints every line of its pass (on a
// terminal, or with --verbose) or only what must reach the operator (when
// stdout is not a terminal, as under cron, which mails any output; or
// with --quiet).
func tickPrintsAll(c *cli.Context) bool {
	if c.Bool("verbose") {
		return true
	}
	return !c.Bool("quiet") && isTerminal(c.App.Writer)
}

// reportPass prints what a pass did, and fails the command when a run it
// finished did not fully succeed, so that cron mails the operator. With
// all unset it prints only the runs that failed or partly failed (one
// line each, which then stand for the command's error) and the runs given
// up and the warnings (on stderr): a pass that did nothing noteworthy
// prints nothing.
func reportPass(p *printer, sum pass.Summary, all bool) error {
	out := passJSON{Claimed: runsJSON(sum.Claimed), Started: runsJSON(sum.Started), Finished: runsJSON(sum.Finished),
		Requeued: runsJSON(sum.Requeued), Reclaimed: runsJSON(sum.Reclaimed), Lost: []lostRun{}, Held: []heldRun{}, Missed: []missed{},
		Warnings: nonNil(sum.Warnings), Shutdown: sum.Shutdown}
	for _, l := range sum.Lost {
		out.Lost = append(out.Lost, lostRun{runJSON: toRunJSON(l.Run), LostReason: l.Reason})
	}
	for _, h := range sum.Held {
		out.Held = append(out.Held, heldRun{RunID: h.RunID, Job: h.Job, Reason: h.Reason})
	}
	for _, m := range sum.Missed {
		out.Missed = append(out.Missed, missed{Job: m.Job, Slots: m.Slots, Latest: m.Latest.UTC(), CaughtUp: m.CaughtUp})
	}
	if err := p.JSON(out); err != nil {
		return err
	}
	// info prints what is worth a line on a terminal only.
	info := func(format string, args ...any) {
		if all {
			p.Printf(format, args...)
		}
	}
	for _, r := range sum.Reclaimed {
		info("reclaimed run %d of job %s: its runner stopped answering (%s)\n", r.ID, r.Job, r.Message)
	}
	claimed := map[string]bool{}
	for _, r := range sum.Claimed {
		claimed[r.Job] = true
	}
	for _, m := range sum.Missed {
		what := "nothing runs until the next slot (catch_up = skip)"
		switch {
		case m.CaughtUp:
			what = "one catch-up run was queued for them"
		case claimed[m.Job]:
			what = "the run of the latest slot covers them; missed slots never run one by one"
		}
		info("job %s missed %d slots (latest %s): %s\n", m.Job, m.Slots, humanTime(m.Latest), what)
	}
	for _, r := range sum.Finished {
		if all || r.Status == pass.StatusFailed || r.Status == pass.StatusPartialFailure {
			p.Printf("run %d of job %s: %s\n", r.ID, r.Job, describeRun(r))
		}
	}
	for _, l := range sum.Lost {
		// A warning, so that it is logged in both modes: nothing else records it.
		p.WarnRunf(l.ID, l.Job, "run %d of job %s was given up, nothing was recorded for it: %s", l.ID, l.Job, l.Reason)
	}
	for _, h := range sum.Held {
		info("run %d of job %s is held: %s\n", h.RunID, h.Job, h.Reason)
	}
	for _, r := range sum.Requeued {
		info("run %d of job %s queued (%s, attempt %d, not before %s)\n", r.ID, r.Job, r.Trigger, r.Attempt, humanTime(r.NotBefore))
	}
	for _, w := range sum.Warnings {
		p.Warnf("%s", w)
	}
	if len(sum.Claimed)+len(sum.Finished)+len(sum.Held)+len(sum.Reclaimed)+len(sum.Requeued)+len(sum.Lost) == 0 {
		info("nothing was due\n")
	}
	worst := ExitOK
	for _, r := range sum.Finished {
		switch r.Status {
		case pass.StatusFailed:
			worst = ExitFailure
		case pass.StatusPartialFailure:
			if worst == ExitOK {
				worst = ExitPartial
			}
		}
	}
	if worst != ExitOK {
		// Without all, the lines of those runs are the whole message.
		return codedError{code: worst, err: errors.New("some runs did not fully succeed"), silent: p.jsonOut || !all}
	}
	return nil
}

func describeRun(r pass.Run) string {
	var b strings.Builder
	b.WriteString(r.Status)
	if r.ErrorCode != "" {
		fmt.Fprintf(&b, " [%s]", pass.ErrorLabel(r.ErrorClass, r.ErrorCode))
	}
	if r.Message != "" {
		b.WriteString(": " + r.Message)
	}
	if len(r.Snapshots) > 0 {
		var ids []string
		for _, s := range r.Snapshots {
			ids = append(ids, shortID(s.SnapshotID))
		}
		fmt.Fprintf(&b, " (snapshots %s; read %s, added %s)", strings.Join(ids, ", "),
			humanize.IBytes(uint64(r.Figures.BytesRead)), humanize.IBytes(uint64(r.Figures.BytesAdded)))
	}
	return b.String()
}

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "run a scheduler pass every tick_interval until stopped",
		ArgsUsage: " ",
		Flags: append(configFlags(),
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "log what the passes decide to stderr"}),
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	exitOnSecondSignal(c.Context)
	p := newPrinter(c)
	s, err := openScheduler(c, true)
	if err != nil {
		return err
	}
	defer s.db.Close()
	defer s.closeNotifications(c.Context, p)
	p.Printf("nightjar serve: %d jobs, a pass every %s; the config is re-read before each pass (stop with SIGTERM or Ctrl-C)\n", len(s.cfg.Jobs), s.cfg.TickInterval)
	m := newMetricsSource(s)
	stopMetrics, err := m.listen(p)
	if err != nil {
		return err
	}
	defer stopMetrics()
	// Each pass runs in its own goroutine, so that a long backup does not
	// hold up the next passes: they still claim, admit (within the limits,
	// which count the runs of every pass), reclaim and record. The state
	// database hands each run to one pass only.
	var (
		passes sync.WaitGroup
		outMu  sync.Mutex
	)
	// The catalog is rebuilt from the repositories beside the first
	// passes, so that a slow repository does not hold them up.
	passes.Add(1)
	go func(cfg *config.Config) {
		defer passes.Done()
		syncAllCatalogs(c.Context, cfg, s.db, func(line string, failed bool) {
			outMu.Lock()
			defer outMu.Unlock()
			if failed {
				p.Warnf("%s", line)
			} else {
				p.Printf("%s\n", line)
			}
		})
	}(s.cfg)
	warn := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		p.Warnf(format, args...)
	}
	startPass := func(ps *pass.Pass) {
		passes.Add(1)
		cfg := s.cfg
		m.setConfig(cfg)
		go func() {
			defer passes.Done()
			endStatus := statusPass(c.Context, cfg, s.db, s.now, db.PassServe, warn, func() {
				outMu.Lock()
				defer outMu.Unlock()
				m.writeTextfile(p)
			})
			sum, err := ps.Run(c.Context)
			endStatus()
			perr := purgeHistory(c.Context, s.db, cfg.History, ps.Now(), ps.Logger)
			outMu.Lock()
			defer outMu.Unlock()
			if perr != nil {
				p.Warnf("%v", perr)
			}
			m.writeTextfile(p)
			if err != nil {
				p.Warnf("pass: %v", err)
				return
			}
			sum.Warnings = append(sum.Warnings, passWarnings(c.Context, cfg, s.db, ps.Jobs, sum.Started)...)
			if len(sum.Finished)+len(sum.Reclaimed)+len(sum.Lost)+len(sum.Warnings)+len(sum.Abandoned) > 0 || sum.Shutdown {
				_ = reportPass(p, sum, !c.Bool("quiet"))
			}
			if len(sum.Abandoned) > 0 {
				p.Warnf("%d runs did not stop in time: the next pass reclaims them", len(sum.Abandoned))
			}
			reportNotifications(p, s.notifier)
		}()
	}
	ticker := time.NewTicker(s.cfg.TickInterval)
	defer ticker.Stop()
	for {
		startPass(s.pass)
		select {
		case <-ticker.C:
		case <-c.Context.Done():
			warn("%s", shutdownNotice)
			passes.Wait()
			// As tick: a serve stopped by a signal was interrupted.
			return codedError{code: ExitInterrupted, err: errors.New("interrupted: running runs were recorded as interrupted and queued again")}
		}
		s.reload(c, p)
	}
}
