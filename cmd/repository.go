package cmd

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/redact"
	"github.com/nightjar-backup/nightjar/schedule/pass"
	"github.com/nightjar-backup/nightjar/status"
)

func repositoryCommand() *cli.Command {
	return &cli.Command{
		Name:  "repository",
		Usage: "see the repositories of the config",
		Subcommands: []*cli.Command{{
			Name: "list",
			Usage: "probe every repository of the config now and say whether it accepts backups; " +
				"exit 1 when one is unreachable",
			ArgsUsage: " ",
			Flags:     append(configFlags(), jsonFlag(), atFlag()),
			Action:    runRepositoryList,
		}, repositoryForgetIDCommand()},
	}
}

// repositoryJSON is one repository of repository list --json.
type repositoryJSON struct {
	Name           string   `json:"name"`
	Location       string   `json:"location"`
	Created        bool     `json:"created"` // false: not yet, its first backup creates it (create_if_missing)
	Reachable      bool     `json:"reachable"`
	Error          string   `json:"error,omitempty"`
	Encrypted      *bool    `json:"encrypted"`   // null: not known
	FreeBytes      *int64   `json:"free_bytes"`  // null: not known
	TotalBytes     *int64   `json:"total_bytes"` // null: not known
	SizeBytes      *int64   `json:"size_bytes"`  // the repository's objects; null: not known
	Jobs           []string `json:"jobs"`        // the backup jobs that write into it
	AcceptsBackups bool     `json:"accepts_backups"`
	WhyNot         []string `json:"why_not"` // why it does not accept backups now
	Notes          []string `json:"notes"`   // warnings that do not stop backups
}

func runRepositoryList(c *cli.Context) error {
	p := newPrinter(c)
	now, err := clock(c)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(c, now())
	if err != nil {
		return err
	}
	state, err := db.Open(c.Context, statePath(c, cfg), now)
	if err != nil {
		return err
	}
	defer state.Close()
	if err := checkClock(c, state, false); err != nil { // probes are recorded with --at's date
		return err
	}
	names := sortedKeys(cfg.Repositories)
	probes := make([]db.RepositoryProbe, len(names))
	probed := make([]bool, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			probes[i], probed[i] = probeRepository(c.Context, cfg.Repositories[name], state, now)
		}()
	}
	wg.Wait()
	if err := c.Context.Err(); err != nil {
		return err
	}
	for i := range names {
		if probed[i] {
			if err := state.RecordProbe(c.Context, probes[i]); err != nil {
				p.Warnf("probe of repository %s not recorded: %s", names[i], errorMessage(err))
			}
		}
	}
	facts, err := state.StatusFacts(c.Context)
	if err != nil {
		return err
	}
	st := statusState(cfg, facts, now())
	if !p.jsonOut {
		st.TimeZone = time.Local // the one rule for times in human output
	}
	warnings := redactWarnings(appRedactor(c.App), status.Evaluate(st))
	var out []repositoryJSON
	var unreachable []string
	for i, name := range names {
		r := repositoryRow(st, warnings, facts, name, probes[i], probed[i])
		if r.Created && !r.Reachable {
			unreachable = append(unreachable, name)
		}
		out = append(out, r)
	}
	if p.jsonOut {
		if err := p.JSON(map[string]any{"repositories": nonNil(out)}); err != nil {
			return err
		}
	} else {
		printRepositories(p, out)
	}
	if len(unreachable) > 0 {
		return codedError{code: ExitFailure, err: fmt.Errorf("unreachable repositories: %s", strings.Join(unreachable, ", ")), silent: p.jsonOut}
	}
	return nil
}

// repositoryRow says what a probe found of a repository and whether it
// accepts backups now: not when it is unreachable, when it has less room
// than the newest backup into it added, when a prune or retention run
// holds it, or when every job writing into it is paused.
func repositoryRow(st status.State, warnings []status.Warning, facts db.StatusFacts, name string, probe db.RepositoryProbe, probed bool) repositoryJSON {
	i := slices.IndexFunc(st.Repositories, func(r status.Repository) bool { return r.Name == name })
	repository := st.Repositories[i]
	row := repositoryJSON{Name: name, Location: repository.Location, Created: probed, Reachable: probe.Reachable,
		Error: probe.Error, Jobs: []string{}, WhyNot: []string{}, Notes: []string{}}
	if !probed {
		row.Notes = append(row.Notes, "not created yet: the first backup creates it (create_if_missing)")
	}
	if probe.EncryptionKnown {
		row.Encrypted = &probe.Encrypted
	}
	if probe.SpaceKnown {
		row.FreeBytes, row.TotalBytes = &probe.FreeBytes, &probe.TotalBytes
	}
	if probe.SizeKnown {
		row.SizeBytes = &probe.SizeBytes
	}
	paused := 0
	for _, j := range st.Jobs {
		if j.Repository == name && j.Kind == pass.KindBackup {
			row.Jobs = append(row.Jobs, j.Name)
			if j.Paused {
				paused++
			}
		}
	}
	if probed && !probe.Reachable {
		row.WhyNot = append(row.WhyNot, "unreachable: "+redact.Text(probe.Error))
	}
	if added := repository.LastBackupAdded; probe.SpaceKnown && added > 0 && probe.FreeBytes < added {
		row.WhyNot = append(row.WhyNot, fmt.Sprintf("low space: %s free, less than the newest backup added (%s)", humanize.IBytes(uint64(probe.FreeBytes)), humanize.IBytes(uint64(added))))
	}
	for _, r := range facts.Running {
		if (r.Kind == pass.KindPrune || r.Kind == pass.KindRetention) && repositoryOfJob(st, r.Job) == name {
			row.WhyNot = append(row.WhyNot, fmt.Sprintf("a %s holds it: run %d of job %s", r.Kind, r.ID, r.Job))
		}
	}
	if len(row.Jobs) > 0 && paused == len(row.Jobs) {
		row.WhyNot = append(row.WhyNot, "paused: every job that writes into it is paused ("+strings.Join(row.Jobs, ", ")+")")
	}
	for _, w := range warnings {
		if w.Repository == name && w.Job == "" && w.Code != status.CodeRepositoryUnavailable {
			row.Notes = append(row.Notes, string(w.Code)+": "+w.Message)
		}
	}
	row.AcceptsBackups = len(row.WhyNot) == 0
	return row
}

func repositoryOfJob(st status.State, job string) string {
	for _, j := range st.Jobs {
		if j.Name == job {
			return j.Repository
		}
	}
	return ""
}

func printRepositories(p *printer, rows []repositoryJSON) {
	if len(rows) == 0 {
		p.Printf("the config has no repository\n")
	}
	for _, r := range rows {
		p.Printf("repository %s at %s\n", r.Name, r.Location)
		reach := "reachable"
		switch {
		case !r.Created:
			reach = "not created yet"
		case !r.Reachable:
			reach = "UNREACHABLE: " + redact.Text(r.Error)
		}
		encrypted := "encryption unknown"
		if r.Encrypted != nil {
			encrypted = map[bool]string{true: "encrypted", false: "NOT ENCRYPTED"}[*r.Encrypted]
		}
		space := "free space unknown"
		if r.FreeBytes != nil && *r.TotalBytes > 0 {
			space = fmt.Sprintf("%s free of %s (%.1f%%)", humanize.IBytes(uint64(*r.FreeBytes)), humanize.IBytes(uint64(*r.TotalBytes)), 100*float64(*r.FreeBytes)/float64(*r.TotalBytes))
		}
		size := "size unknown"
		if r.SizeBytes != nil {
			size = "holds " + humanize.IBytes(uint64(*r.SizeBytes))
		}
		p.Printf("  %s; %s; %s; %s\n", reach, encrypted, space, size)
		if r.AcceptsBackups {
			p.Printf("  accepts backups: yes\n")
		} else {
			p.Printf("  accepts backups: NO (%s)\n", strings.Join(r.WhyNot, "; "))
		}
		for _, n := range r.Notes {
			p.Printf("  note: %s\n", n)
		}
	}
}
