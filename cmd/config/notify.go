package config

import (
	"slices"
	"strings"
	"time"

	"github.com/nightjar-backup/nightjar/notify"
	"github.com/nightjar-backup/nightjar/schedule"
)

// rawNotify is a [notify] table (for every job) or a job's [job.notify].
type rawNotify struct {
	Webhooks    []string `toml:"webhooks"`
	Healthcheck string   `toml:"healthcheck"` // a job's only
	Kinds       []string `toml:"kinds"`
	Timeout     string   `toml:"timeout"`
	Attempts    *int     `toml:"attempts"`
}

// notifyKeys are the keys of a [notify] or [job.notify] table.
var notifyKeys = []string{"webhooks", "healthcheck", "kinds", "timeout", "attempts"}

// MinNotifyTimeout is the shortest timeout a notification attempt may
// have (and notify.MaxTimeout, 5m, the longest; the message spells both).
const MinNotifyTimeout = time.Second

// globalNotify reads the top-level [notify] table: what every job's runs
// tell, unless a job's own table says otherwise.
func (l *loader) globalNotify(raw *rawNotify, cfg *Config) {
	if raw == nil {
		return
	}
	if raw.Healthcheck != "" {
		l.addf("notify.healthcheck", "not allowed in [notify]: a healthcheck watches one job, set it in that job's [job.notify]")
	}
	cfg.Notify = l.notifyTable("notify", raw)
}

// jobNotify reads a job's [job.notify] over the global route (cfg.Notify):
// its webhooks add to the global ones, its healthcheck is its own (and no
// other job's of cfg.Jobs, the jobs before it), and its kinds, timeout and
// attempts replace the global ones.
func (l *loader) jobNotify(key string, raw *rawNotify, cfg *Config) notify.Route {
	route := cfg.Notify
	route.Webhooks = slices.Clone(cfg.Notify.Webhooks)
	if raw == nil {
		return route
	}
	own := l.notifyTable(key, raw)
	for _, u := range own.Webhooks {
		if !slices.Contains(route.Webhooks, u) {
			route.Webhooks = append(route.Webhooks, u)
		}
	}
	if raw.Healthcheck != "" {
		if err := notify.CheckURL(raw.Healthcheck); err != nil {
			l.addf(key+".healthcheck", "%v (the URL is not shown: it may hold a secret)", err)
		}
		for _, other := range cfg.Jobs {
			if other.Notify.Healthcheck == raw.Healthcheck {
				l.addf(key+".healthcheck", "job %s pings the same healthcheck: a dead man's switch watches one job, give each its own", other.Def.Name)
			}
		}
		route.Healthcheck = raw.Healthcheck
	}
	if raw.Kinds != nil {
		route.Kinds = own.Kinds
	}
	if raw.Timeout != "" {
		route.Timeout = own.Timeout
	}
	if raw.Attempts != nil {
		route.Attempts = own.Attempts
	}
	return route
}

// notifyTable reads the keys [notify] and [job.notify] share.
func (l *loader) notifyTable(key string, raw *rawNotify) notify.Route {
	var route notify.Route
	for i, u := range raw.Webhooks {
		if err := notify.CheckURL(u); err != nil {
			l.addf(key+".webhooks", "element %d: %v (the URL is not shown: it may hold a secret)", i+1, err)
			continue
		}
		if !slices.Contains(route.Webhooks, u) {
			route.Webhooks = append(route.Webhooks, u)
		}
	}
	if raw.Kinds != nil {
		if len(raw.Kinds) == 0 {
			l.addf(key+".kinds", "empty: name the run kinds whose runs webhooks hear of, some of %s (default [%q])",
				strings.Join(notify.Kinds, ", "), notify.DefaultKinds[0])
		}
		for _, k := range raw.Kinds {
			if !slices.Contains(notify.Kinds, k) {
				l.addf(key+".kinds", "%q is not a run kind: want some of %s", k, strings.Join(notify.Kinds, ", "))
			}
		}
		route.Kinds = raw.Kinds
	}
	if raw.Timeout != "" {
		d, err := schedule.ParseDuration(raw.Timeout)
		if err != nil || d < MinNotifyTimeout || d > notify.MaxTimeout {
			l.addf(key+".timeout", "%q is not allowed: want a duration from 1s to 5m, such as \"10s\" (the default)", raw.Timeout)
		} else {
			route.Timeout = d
		}
	}
	if raw.Attempts != nil {
		if *raw.Attempts < 1 || *raw.Attempts > notify.MaxAttempts {
			l.addf(key+".attempts", "%d is not allowed: want 1 to %d attempts in all (1: no retry; default %d)",
				*raw.Attempts, notify.MaxAttempts, notify.DefaultAttempts)
		} else {
			route.Attempts = *raw.Attempts
		}
	}
	return route
}

// NotifyRoutes returns where the runs of every job the scheduler runs
// are told, by job name: a job's own route; a job's drills (scheduled
// work for it) its route; a repository's maintenance the [notify] one.
func (c *Config) NotifyRoutes() notify.Routes {
	own := map[string]notify.Route{}
	for _, j := range c.Jobs {
		own[j.Def.Name] = j.Notify
	}
	routes := notify.Routes{}
	for name, def := range c.JobDefs() {
		switch route, ok := own[name]; {
		case ok:
			routes[name] = route
		case def.ForJob != "":
			routes[name] = own[def.ForJob]
		default:
			routes[name] = c.Notify
		}
	}
	return routes
}
