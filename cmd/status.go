package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/redact"
	"github.com/nightjar-backup/nightjar/schedule/pass"
	"github.com/nightjar-backup/nightjar/status"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "say what is wrong, worst first, and how fresh each job's backups are; exit 1 when something is critical",
		Description: "Reads the state database, the config and the last probe of each repository (no repository is opened).\n" +
			"Exit status: 0 when no warning is critical, 1 when one is (a monitoring check can call it), 2 for a bad config.",
		ArgsUsage: " ",
		Flags:     append(configFlags(), jsonFlag(), atFlag()),
		Action:    runStatus,
	}
}

// statusJSON is what status --json prints.
type statusJSON struct {
	Warnings []status.Warning `json:"warnings"`
	Jobs     []jobStatusJSON  `json:"jobs"`
	Passes   []status.Pass    `json:"passes"`
	Critical bool             `json:"critical"`
}

// jobStatusJSON is one job's line of status.
type jobStatusJSON struct {
	Name             string     `json:"name"`
	Repository       string     `json:"repository"`
	Paused           bool       `json:"paused"`
	Manual           bool       `json:"manual"`
	RPOSeconds       int64      `json:"rpo_seconds"`
	LastGoodSnapshot *time.Time `json:"last_good_snapshot"` // null: none
	AgeSeconds       *int64     `json:"age_seconds"`        // of the last good snapshot; null: none
	NextRun          *time.Time `json:"next_run"`           // null: none scheduled
}

func runStatus(c *cli.Context) error {
	p := newPrinter(c)
	now, err := clock(c)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(c, now())
	if err != nil {
		return err
	}
	facts, err := readStatusFacts(c.Context, statePath(c, cfg), now)
	if err != nil {
		return err
	}
	state := statusState(cfg, facts, now())
	if !p.jsonOut {
		state.TimeZone = time.Local // the one rule for times in human output
	}
	warnings := redactWarnings(appRedactor(c.App), status.Evaluate(state))
	critical := false
	for _, w := range warnings {
		critical = critical || w.Severity == status.SeverityCritical
	}
	jobs := jobStatuses(state)
	if p.jsonOut {
		out := statusJSON{Warnings: warnings, Jobs: jobs, Passes: state.Passes, Critical: critical}
		out.Warnings = nonNil(out.Warnings)
		out.Jobs = nonNil(out.Jobs)
		out.Passes = nonNil(out.Passes)
		if err := p.JSON(out); err != nil {
			return err
		}
	} else {
		printStatus(p, warnings, jobs, state.Passes, state.Now)
	}
	if critical {
		return codedError{code: ExitCritical, err: errors.New("a warning is critical"), silent: true}
	}
	return nil
}

// redactWarnings takes what r says out of the warnings' messages: the
// config's secrets, which a run message stored by an older nightjar (or a
// hook's output) may still show.
func redactWarnings(r redact.Redactor, warnings []status.Warning) []status.Warning {
	for i := range warnings {
		warnings[i].Message = r.Text(warnings[i].Message)
	}
	return warnings
}

// readStatusFacts reads the state database at path. A missing one is no
// error: nothing ran yet, which status says (scheduler_offline,
// no_backup_yet), and it is not created.
func readStatusFacts(ctx context.Context, path string, now func() time.Time) (db.StatusFacts, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return db.StatusFacts{}, nil
	}
	state, err := db.Open(ctx, path, now)
	if err != nil {
		return db.StatusFacts{}, err
	}
	defer state.Close()
	return state.StatusFacts(ctx)
}

// statusState puts the config and the facts of the state database together
// for status.Evaluate. The config says which jobs and repositories exist.
func statusState(cfg *config.Config, facts db.StatusFacts, now time.Time) status.State {
	s := status.State{Now: now, OfflineAfter: cfg.OfflineAfter, StuckAfter: cfg.StaleAfter}
	for _, b := range facts.Passes {
		s.Passes = append(s.Passes, status.Pass{At: b.At, Host: b.Host, PID: b.PID, Version: b.Version, Mode: b.Mode})
	}
	stored := map[string]db.JobFacts{}
	for _, f := range facts.Jobs {
		stored[f.Name] = f
	}
	rpo := map[string]time.Duration{}
	for _, j := range cfg.Jobs {
		rpo[j.Def.Name] = j.RPO
	}
	defs := cfg.JobDefs()
	for _, name := range sortedKeys(defs) {
		s.Jobs = append(s.Jobs, jobState(defs[name], rpo[name], stored[name], now))
	}
	repositoryOf := func(job string) string { return defs[job].Repository }
	for _, r := range facts.Queued {
		s.Queued = append(s.Queued, status.QueuedRun{ID: r.ID, Job: r.Job, Repository: repositoryOf(r.Job),
			QueuedAt: r.QueuedAt, NotBefore: r.NotBefore, HeldReason: r.HeldReason})
	}
	for _, r := range facts.Running {
		s.Running = append(s.Running, status.RunningRun{ID: r.ID, Job: r.Job, Repository: repositoryOf(r.Job),
			StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt, LeaseUntil: r.LeaseUntil, Runner: r.Runner})
	}
	probes := map[string]db.RepositoryProbe{}
	for _, p := range facts.Probes {
		probes[p.Name] = p
	}
	for _, name := range sortedKeys(cfg.Repositories) {
		r := status.Repository{Name: name, Location: cfg.Repositories[name].Location(), LastBackupAdded: facts.LastBackupAdded[name]}
		if p, ok := probes[name]; ok {
			r.Probe = &status.Probe{At: p.At, Reachable: p.Reachable, Error: p.Error, Encrypted: p.Encrypted,
				SpaceKnown: p.SpaceKnown, FreeBytes: p.FreeBytes, TotalBytes: p.TotalBytes}
		}
		s.Repositories = append(s.Repositories, r)
	}
	return s
}

// jobState is one job for status.Evaluate. A job's deep verifications are
// expected every deep_verify_every plus a day, and at least within
// status.DefaultDeepVerifyWithin.
func jobState(def pass.JobDef, rpo time.Duration, f db.JobFacts, now time.Time) status.Job {
	next, scheduled := def.Schedule.Next(now)
	if f.ID != 0 {
		next = f.NextRun // no pass has stored the job yet: its first pass would store next
	}
	j := status.Job{
		Name: def.Name, Kind: def.RunKind(), Repository: def.Repository, Paused: f.Paused, Manual: !scheduled,
		RPO: rpo, NextRun: next, Created: f.CreatedAt, LastGoodSnapshot: f.LastGoodSnapshot,
		Verify: def.Verify.Enabled, DeepVerify: def.Verify.Enabled && def.Verify.DeepEvery >= 0,
		LastDeepVerify:   f.LastDeepVerify,
		DeepVerifyWithin: max(status.DefaultDeepVerifyWithin, def.Verify.DeepEvery+24*time.Hour),
	}
	for _, r := range f.LastRuns {
		j.LastRuns = append(j.LastRuns, status.Run{ID: r.ID, Kind: r.Kind, Status: r.Status, Class: r.ErrorClass,
			Code: r.ErrorCode, Message: r.Message, Ended: r.EndedAt})
	}
	if v := f.LastVerify; v != nil && v.Status == pass.StatusFailed && v.ErrorClass == pass.ClassIntegrity {
		j.VerifyFailed = true
		j.VerifyFailure = fmt.Sprintf("verify run %d: %s", v.ID, v.Message)
	}
	if len(f.VerifyFailedSnapshots) > 0 {
		j.VerifyFailed = true
		j.VerifyFailure = strings.TrimPrefix(j.VerifyFailure+"; ", "; ") +
			fmt.Sprintf("the catalog records snapshot %s as verify_failed", strings.Join(f.VerifyFailedSnapshots, ", "))
	}
	return j
}

// jobStatuses are the lines of the config's backup jobs.
func jobStatuses(s status.State) []jobStatusJSON {
	var out []jobStatusJSON
	for _, j := range s.Jobs {
		if j.Kind != pass.KindBackup {
			continue
		}
		line := jobStatusJSON{Name: j.Name, Repository: j.Repository, Paused: j.Paused, Manual: j.Manual,
			RPOSeconds: int64(cmp.Or(j.RPO, status.DefaultRPO) / time.Second)}
		if !j.LastGoodSnapshot.IsZero() {
			at := j.LastGoodSnapshot.UTC()
			age := int64(s.Now.Sub(at) / time.Second)
			line.LastGoodSnapshot, line.AgeSeconds = &at, &age
		}
		if !j.NextRun.IsZero() && !j.Paused {
			next := j.NextRun.UTC()
			line.NextRun = &next
		}
		out = append(out, line)
	}
	return out
}

func printStatus(p *printer, warnings []status.Warning, jobs []jobStatusJSON, passes []status.Pass, now time.Time) {
	if len(warnings) == 0 {
		p.Printf("no warnings\n")
	}
	for _, w := range warnings {
		var about strings.Builder
		if w.Job != "" {
			about.WriteString(" job=" + w.Job)
		}
		if w.Repository != "" {
			about.WriteString(" repository=" + w.Repository)
		}
		p.Printf("%s %s%s: %s\n", strings.ToUpper(string(w.Severity)), w.Code, about.String(), w.Message)
	}
	for _, j := range jobs {
		last := "no good snapshot yet"
		if j.LastGoodSnapshot != nil {
			last = fmt.Sprintf("last good snapshot %s (%s ago)", humanTime(*j.LastGoodSnapshot), ageText(now.Sub(*j.LastGoodSnapshot)))
		}
		next := "next run: none scheduled"
		switch {
		case j.Paused:
			next = "paused"
		case j.Manual:
			next = "manual: runs only when asked"
		case j.NextRun != nil:
			next = "next run " + humanTime(*j.NextRun)
		}
		p.Printf("job %s (repository %s): %s; %s\n", j.Name, j.Repository, last, next)
	}
	if len(passes) == 0 {
		p.Printf("scheduler: no pass recorded\n")
		return
	}
	newest := slices.MaxFunc(passes, func(a, b status.Pass) int { return a.At.Compare(b.At) })
	p.Printf("scheduler: newest pass %s on %s (pid %d, version %s) at %s (%s ago)\n",
		newest.Mode, newest.Host, newest.PID, newest.Version, humanTime(newest.At), ageText(now.Sub(newest.At)))
}

// ageText rounds an age for reading.
func ageText(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd%dh", d/(24*time.Hour), (d%(24*time.Hour))/time.Hour)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
