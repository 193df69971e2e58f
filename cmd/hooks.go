package cmd

import (
	"os"
	"strings"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/jobs"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// jobHooks gives the executor each job's [job.hooks].
func jobHooks(cfg *config.Config) jobs.JobHooks {
	return func(name string) jobs.Hooks {
		for _, j := range cfg.Jobs {
			if j.Def.Name == name {
				return j.Hooks
			}
		}
		return jobs.Hooks{}
	}
}

// hookEnviron is the environment hooks and command sources start from:
// the scheduler's own, without NIGHTJAR_PASSWORD* and without the
// password_env variable of any repository of the config.
func hookEnviron(cfg *config.Config) []string {
	var secret []string
	for _, r := range cfg.Repositories {
		if r.Password.Env != "" {
			secret = append(secret, r.Password.Env)
		}
	}
	return jobs.ScrubEnviron(os.Environ(), secret...)
}

// printRunOutput writes what a run's hooks and command sources printed,
// and the warnings the run itself wrote there, for runs show, after the
// run's other lines.
func printRunOutput(p *printer, r pass.Run) {
	if r.Output == "" {
		return
	}
	p.Printf("  output of its hooks, command sources and warnings:\n")
	for _, line := range strings.Split(strings.TrimSuffix(r.Output, "\n"), "\n") {
		p.Printf("    %s\n", line)
	}
}
