package config

import (
	"time"

	"github.com/nightjar-backup/nightjar/schedule"
)

// Defaults and bounds of the history the scheduler keeps
// (scheduler.keep_runs and scheduler.keep_audit).
const (
	DefaultKeepRuns  = 90 * 24 * time.Hour
	DefaultKeepAudit = 400 * 24 * time.Hour
	// MinKeep is the shortest history allowed, so that "3m" written for
	// three months (it is three minutes) is refused instead of deleting
	// the history.
	MinKeep = 24 * time.Hour
	// KeepForever is the spelling that keeps everything.
	KeepForever = "forever"
)

// History says how long the scheduler's passes keep ended runs and audit
// rows; 0 keeps them forever.
type History struct {
	KeepRuns  time.Duration
	KeepAudit time.Duration
}

// history reads scheduler.keep_runs and scheduler.keep_audit.
func (l *loader) history(raw rawScheduler, cfg *Config) {
	cfg.History = History{
		KeepRuns:  l.keep("scheduler.keep_runs", raw.KeepRuns, DefaultKeepRuns),
		KeepAudit: l.keep("scheduler.keep_audit", raw.KeepAudit, DefaultKeepAudit),
	}
}

// keep reads a history duration: absent is def, "forever" is 0.
func (l *loader) keep(key, text string, def time.Duration) time.Duration {
	const allowed = `want a duration of at least 1d such as "90d" or "52w", or "forever" to keep everything`
	switch text {
	case "":
		return def
	case KeepForever:
		return 0
	}
	d, err := schedule.ParseDuration(text)
	if err != nil || d < MinKeep {
		l.addf(key, "%q is not allowed: %s", text, allowed)
		return def
	}
	return d
}
