package cmd

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/urfave/cli/v2"
)

// scheduleCommand is "nightjar schedule": looking at schedule specs without a config.
func scheduleCommand() *cli.Command {
	return &cli.Command{
		Name:  "schedule",
		Usage: "look at schedule specs",
		Subcommands: []*cli.Command{{
			Name:      "preview",
			Usage:     "show when a schedule spec runs",
			ArgsUsage: "SPEC",
			Description: `Prints the description of SPEC and its next slots, each in local time with
its offset and in UTC, with a note where a daylight saving change moves or
doubles a slot. SPEC is written as in a job's schedule key, for example
"daily 02:00", "every 6h" or "cron */15 9-17 * * mon-fri"; quote it. See
docs/SCHEDULES.md.`,
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "tz", Value: "UTC", Usage: "IANA time zone the schedule runs in, such as Europe/Berlin"},
				&cli.StringFlag{Name: "from", Usage: "show slots after this RFC 3339 instant (default: now)"},
				&cli.IntFlag{Name: "count", Value: 10, Usage: "how many slots to show (1 to 1000)"},
				&cli.BoolFlag{Name: "json", Usage: `print {"description": ..., "slots": [RFC 3339 UTC, ...]}`},
			},
			Action: func(c *cli.Context) error {
				// An unquoted spec arrives as several arguments.
				spec := strings.Join(c.Args().Slice(), " ")
				if strings.TrimSpace(spec) == "" {
					return usageError{errors.New(`schedule preview needs a schedule spec, such as: nightjar schedule preview "daily 02:00" --tz Europe/Berlin`)}
				}
				opts := previewOptions{spec: spec, zone: c.String("tz"), from: c.String("from"), count: c.Int("count"), json: c.Bool("json")}
				p := &printer{stdout: c.App.Writer, stderr: c.App.ErrWriter, jsonOut: opts.json}
				return runSchedulePreview(opts, time.Now(), p)
			},
		}},
	}
}

// previewOptions are the arguments of "schedule preview".
type previewOptions struct {
	spec  string
	zone  string
	from  string // RFC 3339; empty means now
	count int
	json  bool
}

// previewJSON is the --json document of "schedule preview".
type previewJSON struct {
	Description string   `json:"description"`
	Slots       []string `json:"slots"`
}

// runSchedulePreview prints the next slots of opts.spec after opts.from, or after now.
func runSchedulePreview(opts previewOptions, now time.Time, p *printer) error {
	loc, err := schedule.LoadLocation(opts.zone)
	if err != nil {
		return usageError{fmt.Errorf("--tz: %w", err)}
	}
	from := now
	if opts.from != "" {
		if from, err = time.Parse(time.RFC3339, opts.from); err != nil {
			return usageError{fmt.Errorf("--from %q is not an RFC 3339 time, such as 2026-03-29T00:00:00Z or 2026-03-29T02:00:00+02:00", opts.from)}
		}
	}
	if opts.count < 1 || opts.count > 1000 {
		return usageError{fmt.Errorf("--count %d is not from 1 to 1000", opts.count)}
	}
	s, err := schedule.Parse(opts.spec, loc)
	if err != nil {
		return usageError{err}
	}
	slots := s.Preview(from, opts.count)
	if p.jsonOut {
		doc := previewJSON{Description: s.Description(), Slots: []string{}}
		for _, slot := range slots {
			doc.Slots = append(doc.Slots, slot.Time.UTC().Format(time.RFC3339))
		}
		return p.JSON(doc)
	}
	p.Printf("%s\n", s.Description())
	if len(slots) == 0 {
		p.Printf("no slots: it runs only when started by hand\n")
		return nil
	}
	p.Printf("next %d after %s:\n", len(slots), from.In(loc).Format("Mon 2006-01-02 15:04:05 -07:00 MST"))
	var table strings.Builder
	w := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	// UTC times all have the width of utcWidth; only the local time varies.
	const utcWidth = len("2006-01-02T15:04:05Z")
	fmt.Fprintf(w, "  LOCAL TIME\t%-*s  NOTE\n", utcWidth, "UTC")
	for _, slot := range slots {
		fmt.Fprintf(w, "  %s\t%s", slot.Time.Format("Mon 2006-01-02 15:04 -07:00 MST"), slot.Time.UTC().Format(time.RFC3339))
		if slot.Note != "" {
			fmt.Fprintf(w, "  %s", slot.Note)
		}
		fmt.Fprintln(w)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	p.Printf("%s", table.String())
	return nil
}
