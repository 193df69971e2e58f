package cmd

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/jobs"
)

// statusPass is what a pass of tick or serve does for nightjar status. It
// records the pass's runtime heartbeat at once and renews it every
// heartbeat (cfg.Heartbeat) while the pass runs, calling onBeat after each
// renewal (the metrics textfile; nil: nothing), so that a tick held by a
// long backup, which systemd's timer does not start again while it runs,
// is not called offline. It returns end, which the pass calls when its
// runs are done: end stops the renewals and probes every repository no
// pass probed within probe_every (after the runs, so that a repository
// its first backup creates, create_if_missing, is not probed half made).
// A failure of either is a warning, never a failed pass.
func statusPass(ctx context.Context, cfg *config.Config, state *db.DB, now func() time.Time, mode string, warn func(format string, args ...any), onBeat func()) (end func()) {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	beat := func() {
		b := db.PassBeat{Host: host, Mode: mode, PID: os.Getpid(), Version: version, At: now()}
		if err := state.RecordPass(ctx, b); err != nil && ctx.Err() == nil {
			warn("the pass's heartbeat was not recorded (nightjar status may call the scheduler offline): %s", errorMessage(err))
		}
	}
	beat()
	stop := make(chan struct{})
	var renewing sync.WaitGroup
	renewing.Add(1)
	go func() {
		defer renewing.Done()
		ticker := time.NewTicker(cfg.Heartbeat)
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C:
				beat()
				if onBeat != nil {
					onBeat()
				}
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(stop)
		renewing.Wait()
		probeDue(ctx, cfg, state, now, warn)
	}
}

// probeDue probes, at once, every repository of cfg that no pass probed
// within probe_every, and records what it found.
func probeDue(ctx context.Context, cfg *config.Config, state *db.DB, now func() time.Time, warn func(format string, args ...any)) {
	if ctx.Err() != nil {
		return // shutting down: a probe now would say nothing true
	}
	var probes sync.WaitGroup
	for _, name := range sortedKeys(cfg.Repositories) {
		claimedAt := now()
		claimed, err := state.ClaimProbe(ctx, name, claimedAt, cfg.ProbeEvery)
		if err != nil {
			warn("probe of repository %s not started: %s", name, errorMessage(err))
			continue
		}
		if !claimed {
			continue
		}
		probes.Add(1)
		go func(rc config.Repository) {
			defer probes.Done()
			p, ok := probeRepository(ctx, rc, state, now)
			if !ok {
				// Nothing to record: give the claim back, or the next
				// probe would come up to probe_every late.
				if err := state.ReleaseProbe(context.WithoutCancel(ctx), rc.Name, claimedAt); err != nil {
					warn("probe of repository %s not released: %s", rc.Name, errorMessage(err))
				}
				return
			}
			if err := state.RecordProbe(context.WithoutCancel(ctx), p); err != nil {
				warn("probe of repository %s not recorded: %s", rc.Name, errorMessage(err))
			}
		}(cfg.Repositories[name])
	}
	probes.Wait()
}

// probeRepository probes a configured repository. It reports false, with
// nothing to record, when there is nothing to say yet: a repository with
// create_if_missing that no backup has created yet (one that held backups
// and is gone is unavailable: a disk not mounted), and a probe cut short
// by a shutdown.
func probeRepository(ctx context.Context, rc config.Repository, state *db.DB, now func() time.Time) (db.RepositoryProbe, bool) {
	found := jobs.ProbeRepository(ctx, configLocation(rc), rc.Options, func() ([]byte, error) { return repositoryPassword(ctx, rc) })
	if ctx.Err() != nil {
		return db.RepositoryProbe{}, false
	}
	if found.Missing && rc.CreateIfMissing {
		if used, err := state.RepositoryUsed(ctx, rc.Name); err == nil && !used {
			return db.RepositoryProbe{}, false
		}
	}
	return db.RepositoryProbe{
		Name: rc.Name, Location: rc.Location(), At: now(), Reachable: found.Reachable, Error: found.Error,
		EncryptionKnown: found.EncryptionKnown, Encrypted: found.Encrypted,
		SpaceKnown: found.SpaceKnown, FreeBytes: found.FreeBytes, TotalBytes: found.TotalBytes,
		SizeKnown: found.SizeKnown, SizeBytes: found.SizeBytes,
	}, true
}
