package cmd

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/schedule/pass"
	"github.com/nightjar-backup/nightjar/status"
)

// metricsStatusState reads the status.State that the metrics evaluate
// their warnings from: the config's jobs as the state database knows them,
// their last runs and newest good snapshot, the queued and running runs,
// and the configured repositories. passes are the passes known (this
// process's newest). The status stream's own reader of status.State (with
// the passes every host recorded and the repositories' probes) replaces
// this one when the two are merged.
func metricsStatusState(ctx context.Context, cfg *config.Config, state *db.DB, now time.Time, passes []status.Pass, figures db.MetricsState) (status.State, error) {
	jobs, err := state.Jobs(ctx)
	if err != nil {
		return status.State{}, err
	}
	defs := cfg.JobDefs()
	rpo := map[string]time.Duration{}
	for _, j := range cfg.Jobs {
		rpo[j.Def.Name] = j.RPO
	}
	last := map[string]db.MetricsJob{}
	for _, j := range figures.Jobs {
		last[j.Name] = j
	}
	st := status.State{Now: now, Passes: passes}
	for _, j := range jobs {
		sj := status.Job{Name: j.Name, Repository: j.Repository, Paused: j.Paused, NextRun: j.NextRun,
			Created: j.CreatedAt, RPO: rpo[j.Name]}
		if def, ok := defs[j.Name]; ok {
			_, scheduled := def.Schedule.Next(now)
			sj.Kind, sj.Manual = def.Kind, !scheduled
			sj.Verify, sj.DeepVerify = def.Verify.Enabled, def.Verify.DeepEvery >= 0
			sj.DeepVerifyWithin = max(def.Verify.DeepEvery, 0)
		}
		f := last[j.Name]
		sj.LastGoodSnapshot = f.LastSnapshot
		for kind, r := range f.LastRuns {
			switch r.Status {
			case pass.StatusSucceeded, pass.StatusPartialFailure, pass.StatusFailed:
				sj.LastRuns = append(sj.LastRuns, status.Run{ID: r.ID, Kind: kind, Status: r.Status,
					Class: r.ErrorClass, Code: r.ErrorCode, Message: r.Message, Ended: r.EndedAt})
			}
		}
		if v, ok := f.LastRuns[pass.KindVerify]; ok {
			switch {
			case v.Status == pass.StatusFailed && v.ErrorClass == pass.ClassIntegrity:
				sj.VerifyFailed, sj.VerifyFailure = true, v.Message
			case v.Status == pass.StatusSucceeded && v.Figures.Counters["deep"] == 1:
				sj.LastDeepVerify = v.EndedAt
			}
		}
		st.Jobs = append(st.Jobs, sj)
		if a := j.Active; a != nil {
			switch a.Status {
			case pass.StatusQueued:
				st.Queued = append(st.Queued, status.QueuedRun{ID: a.ID, Job: j.Name, Repository: j.Repository,
					QueuedAt: a.QueuedAt, NotBefore: a.NotBefore, HeldReason: a.HeldReason})
			case pass.StatusRunning:
				st.Running = append(st.Running, status.RunningRun{ID: a.ID, Job: j.Name, Repository: j.Repository,
					StartedAt: a.StartedAt, HeartbeatAt: a.HeartbeatAt, Runner: a.Runner})
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Repositories)) {
		st.Repositories = append(st.Repositories, status.Repository{Name: name, Location: cfg.Repositories[name].Path})
	}
	return st, nil
}
