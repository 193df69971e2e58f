package config

import (
	"time"

	"github.com/nightjar-backup/nightjar/status"
)

// DefaultProbeEvery is scheduler.probe_every when the config names none.
const DefaultProbeEvery = 10 * time.Minute

// statusSettings reads the [scheduler] keys of nightjar status:
// offline_after (status.DefaultOfflineAfter) and probe_every
// (DefaultProbeEvery). tick_interval must be read before.
func (l *loader) statusSettings(raw rawScheduler, cfg *Config) {
	cfg.OfflineAfter = l.duration("scheduler.offline_after", raw.OfflineAfter, status.DefaultOfflineAfter)
	cfg.ProbeEvery = l.duration("scheduler.probe_every", raw.ProbeEvery, DefaultProbeEvery)
	if cfg.OfflineAfter <= cfg.TickInterval {
		l.addf("scheduler.offline_after", "%s is not longer than tick_interval %s: serve would look offline between its passes; want more than tick_interval (default %s)",
			cfg.OfflineAfter, cfg.TickInterval, status.DefaultOfflineAfter)
	}
	if cfg.ProbeEvery < time.Minute {
		l.addf("scheduler.probe_every", "%s is too often: a probe opens the repository with its password; want 1m or more (default %s)", cfg.ProbeEvery, DefaultProbeEvery)
	}
}
