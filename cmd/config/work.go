package config

import (
	"github.com/nightjar-backup/nightjar/schedule"
	"github.com/nightjar-backup/nightjar/schedule/pass"
)

// maintenance reads a repository's prune key, in its time_zone (UTC when
// it names none, as a job's schedule).
func (l *loader) maintenance(key, name string, raw rawRepository) *pass.JobDef {
	loc, err := schedule.LoadLocation(raw.TimeZone)
	if err != nil {
		l.addf(key+".time_zone", "%v", err)
		return nil
	}
	if raw.Prune == "" {
		return nil
	}
	when, err := schedule.Parse(raw.Prune, loc)
	if err != nil {
		l.addf(key+".prune", "%v", err)
		return nil
	}
	def := pass.PruneJob(name, when)
	return &def
}

// ScheduledWork returns the jobs of the config's scheduled work: each
// job's drills, in file order, then each repository's maintenance, by
// repository name.
func (c *Config) ScheduledWork() []pass.JobDef {
	var work []pass.JobDef
	for _, j := range c.Jobs {
		if j.Drill != nil {
			work = append(work, *j.Drill)
		}
	}
	for _, name := range sortedNames(c.Repositories) {
		if r := c.Repositories[name]; r.Prune != nil {
			work = append(work, *r.Prune)
		}
	}
	return work
}

// JobDefs returns every job the scheduler runs, by name: the config's jobs
// and its scheduled work.
func (c *Config) JobDefs() map[string]pass.JobDef {
	defs := map[string]pass.JobDef{}
	for _, j := range c.Jobs {
		defs[j.Def.Name] = j.Def
	}
	for _, w := range c.ScheduledWork() {
		defs[w.Name] = w
	}
	return defs
}
