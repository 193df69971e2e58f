package cmd

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name: "audit",
		Usage: "show who created, changed, removed, paused, resumed, ran (trigger) or cancelled which job or run, " +
			"and when, newest first",
		ArgsUsage: " ",
		Flags: append(configFlags(), jsonFlag(),
			&cli.StringFlag{Name: "job", Usage: "only what was done to job `NAME` and its runs (its drills included)"},
			limitFlag(20, "rows"),
			&cli.Int64Flag{Name: "before", Usage: "only rows older than row `ID` (the next page)"}),
		Action: runAudit,
	}
}

// auditJSON is an audit row in audit --json.
type auditJSON struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	User   string    `json:"user"`
	Host   string    `json:"host"`
	Action string    `json:"action"`
	Target string    `json:"target"` // a job name, or "run N"
	Job    string    `json:"job,omitempty"`
	Detail string    `json:"detail"`
}

func runAudit(c *cli.Context) error {
	p := newPrinter(c)
	limit, err := pageFlags(c)
	if err != nil {
		return err
	}
	cfg, state, err := openState(c)
	if err != nil {
		return err
	}
	defer state.Close()
	if err := checkJobFlag(c, cfg, state); err != nil {
		return err
	}
	f := db.AuditFilter{Before: c.Int64("before"), Limit: pageLimit(limit)}
	if job := c.String("job"); job != "" {
		f.Jobs = []string{job, pass.DrillJobName(job)}
	}
	entries, err := state.Audit(c.Context, f)
	if err != nil {
		return err
	}
	entries, more := onePage(entries, limit)
	out := []auditJSON{}
	for _, e := range entries {
		out = append(out, auditJSON{ID: e.ID, At: e.At.UTC(), User: e.Actor.User, Host: e.Actor.Host, Action: e.Action,
			Target: e.Target, Job: e.Job, Detail: e.Detail})
	}
	if p.jsonOut {
		return p.JSON(out)
	}
	if len(out) == 0 {
		p.Printf("no audit rows%s\n", filtersSaid(c, "job"))
		return nil
	}
	p.Printf("%-6s %-20s %-24s %-8s %-20s %s\n", "ID", "WHEN", "WHO", "ACTION", "TARGET", "DETAIL")
	for _, e := range entries {
		p.Printf("%-6d %-20s %-24s %-8s %-20s %s\n", e.ID, humanTime(e.At), e.Actor.String(),
			e.Action, e.Target, e.Detail)
	}
	if more {
		p.Printf("more: %s --before %d\n", nextPage(c, "job"), entries[len(entries)-1].ID)
	}
	return nil
}
