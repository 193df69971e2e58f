package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// purgeBatch is the most runs, and the most audit rows, one pass deletes:
// a large backlog (a first pass after keep_runs was lowered, a state
// database from years of every-minute jobs) is worked off over the next
// passes, and no pass holds the database's write lock for long.
const purgeBatch = 500

// purgeHistory deletes, after a pass, the ended runs older than keep_runs
// and the audit rows older than keep_audit, purgeBatch of each at most
// (db.PurgeRuns keeps the runs that status, dependencies and job list
// read), and the heartbeats of hosts whose last pass is older than
// keep_runs (db.PurgePasses keeps the newest of tick and of serve). What it deleted is logged at level info; a failure is returned
// for the caller to warn about, and never fails the pass.
func purgeHistory(ctx context.Context, state *db.DB, h config.History, now time.Time, log *slog.Logger) error {
	if ctx.Err() != nil {
		return nil // shutting down: the next pass purges
	}
	var runs, passes, audit int
	var err error
	if h.KeepRuns > 0 {
		if runs, err = state.PurgeRuns(ctx, now.Add(-h.KeepRuns), purgeBatch); err != nil {
			return fmt.Errorf("old runs not purged (keep_runs %s): %w", keepString(h.KeepRuns), err)
		}
		if passes, err = state.PurgePasses(ctx, now.Add(-h.KeepRuns)); err != nil {
			return fmt.Errorf("old pass heartbeats not purged (keep_runs %s): %w", keepString(h.KeepRuns), err)
		}
	}
	if h.KeepAudit > 0 {
		if audit, err = state.PurgeAudit(ctx, now.Add(-h.KeepAudit), purgeBatch); err != nil {
			return fmt.Errorf("old audit rows not purged (keep_audit %s): %w", keepString(h.KeepAudit), err)
		}
	}
	if runs+passes+audit > 0 {
		log.Info("history purged", "runs", runs, "passes", passes, "audit_rows", audit,
			"keep_runs", keepString(h.KeepRuns), "keep_audit", keepString(h.KeepAudit),
			"more_left", runs == purgeBatch || audit == purgeBatch)
	}
	return nil
}

// keepString is a keep_runs or keep_audit as the config writes it.
func keepString(d time.Duration) string {
	if d == 0 {
		return config.KeepForever
	}
	return deepEveryString(d)
}

// runStatuses are the statuses --status takes for runs, in their order of
// life.
var runStatuses = []string{pass.StatusQueued, pass.StatusRunning, pass.StatusSucceeded, pass.StatusPartialFailure,
	pass.StatusFailed, pass.StatusCancelled, pass.StatusInterrupted}

// runKinds are the kinds --kind takes.
var runKinds = []string{pass.KindBackup, pass.KindVerify, pass.KindRetention, pass.KindPrune, pass.KindDrill}

// jobStates are what job list --status takes: the status of the job's
// active or last run, paused, or never (no run has ended).
var jobStates = append(slices.Clone(runStatuses), db.JobStatePaused, db.JobStateNever)

// statusFlag is the repeatable --status flag of runs and job list.
func statusFlag(usage string) cli.Flag {
	return &cli.StringSliceFlag{Name: "status", Usage: usage + " (repeat it, or give a comma list)"}
}

// statusValues reads --status: each value a comma list of names from
// allowed. A name not allowed is a usage error that lists them.
func statusValues(c *cli.Context, allowed []string) ([]string, error) {
	var out []string
	for _, list := range tagLists(c.StringSlice("status")) {
		for _, s := range list {
			if !slices.Contains(allowed, s) {
				return nil, usageError{fmt.Errorf("invalid --status %q: want one of %s", s, strings.Join(allowed, ", "))}
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// limitFlag is the --limit flag of a paged listing; def is its default.
func limitFlag(def int, what string) cli.Flag {
	return &cli.IntFlag{Name: "limit", Value: def, Usage: "at most `N` " + what + " (0: all)"}
}

// pageFlags checks --limit (and --before, where there is one) and returns
// the limit.
func pageFlags(c *cli.Context) (int, error) {
	limit := c.Int("limit")
	if limit < 0 {
		return 0, usageError{fmt.Errorf("invalid --limit %d: want 0 (all) or more", limit)}
	}
	if c.Int64("before") < 0 {
		return 0, usageError{fmt.Errorf("invalid --before %d: want an ID from the list's last line (more: ...)", c.Int64("before"))}
	}
	return limit, nil
}

// pageLimit is what to ask the database for to show limit rows and know
// whether there are more: one more row (0: all).
func pageLimit(limit int) int {
	if limit <= 0 {
		return 0
	}
	return limit + 1
}

// onePage cuts rows, read with pageLimit, to limit and reports whether
// there were more.
func onePage[T any](rows []T, limit int) ([]T, bool) {
	if limit > 0 && len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

// nextPage is the command line that lists the next page: this command with
// the filters given (the flags named), to which the caller adds its
// cursor.
func nextPage(c *cli.Context, filters ...string) string {
	var parts []string // the program's name, then the command's
	lineage := c.Lineage()
	for i := len(lineage) - 1; i >= 0; i-- {
		if cmd := lineage[i].Command; cmd != nil && cmd.Name != "" {
			parts = append(parts, cmd.Name)
		}
	}
	for _, name := range append(filters, "limit", "config", "state") {
		if !c.IsSet(name) {
			continue
		}
		if name == "status" {
			parts = append(parts, "--status", shellWord(strings.Join(c.StringSlice("status"), ",")))
			continue
		}
		parts = append(parts, "--"+name, shellWord(c.String(name)))
	}
	return strings.Join(parts, " ")
}

// filtersSaid names the filters given, for "no runs" lines.
func filtersSaid(c *cli.Context, filters ...string) string {
	var said []string
	for _, name := range filters {
		if !c.IsSet(name) {
			continue
		}
		v := c.String(name)
		if name == "status" {
			v = strings.Join(c.StringSlice("status"), ",")
		}
		said = append(said, "--"+name+" "+shellWord(v))
	}
	if len(said) == 0 {
		return ""
	}
	return " matching " + strings.Join(said, " ")
}

// shellWord quotes s for a shell when it holds more than a plain word.
func shellWord(s string) string {
	plain := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/:,@=+", r))
	}) < 0
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxNamesSaid is how many allowed names a usage error lists before "…".
const maxNamesSaid = 10

// namesSaid lists names for a usage error: the first maxNamesSaid, then
// "…" for the rest; "none" when there are none.
func namesSaid(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > maxNamesSaid {
		return strings.Join(names[:maxNamesSaid], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

// checkRepositoryFlag checks --repository: a name the config does not
// have is a usage error listing those it has (a filter that names nothing
// would list nothing, and look like a repository without runs).
func checkRepositoryFlag(c *cli.Context, cfg *config.Config) error {
	name := c.String("repository")
	if name == "" {
		return nil
	}
	if _, ok := cfg.Repositories[name]; ok {
		return nil
	}
	return usageError{fmt.Errorf("unknown --repository %s: want a repository of the config: %s",
		shellWord(name), namesSaid(sortedKeys(cfg.Repositories)))}
}

// checkJobFlag checks --job: a job neither in the config nor ever stored
// in the state database (a removed job keeps its runs and audit rows) is
// a usage error listing those there are.
func checkJobFlag(c *cli.Context, cfg *config.Config, state *db.DB) error {
	name := c.String("job")
	if name == "" {
		return nil
	}
	defs := cfg.JobDefs()
	if _, ok := defs[name]; ok {
		return nil
	}
	stored, err := state.JobNames(c.Context)
	if err != nil {
		return err
	}
	if slices.Contains(stored, name) {
		return nil
	}
	known := stored
	for _, j := range cfg.Jobs {
		if !slices.Contains(known, j.Def.Name) {
			known = append(known, j.Def.Name)
		}
	}
	slices.Sort(known)
	return usageError{fmt.Errorf("unknown --job %s: want a job of the config or of the state database: %s",
		shellWord(name), namesSaid(known))}
}
