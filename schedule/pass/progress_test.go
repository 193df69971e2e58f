package pass

import (
	"context"
	"sync/atomic"
	"testing"
)

// The executor's latest progress goes to the store with the run's
// heartbeat (without the list of skipped objects, which only the result
// stores), so that the run can be shown with how far it got while it
// runs; the result replaces it.
func TestHeartbeatCarriesTheLatestProgress(t *testing.T) {
	f := newFixture(t, manual(t, "daten"))
	f.run(at(0))
	var reported atomic.Bool
	beats := make(chan struct{}, 64)
	f.store.mu.Lock()
	f.store.onBeat = func() {
		if reported.Load() {
			select {
			case beats <- struct{}{}:
			default:
			}
		}
	}
	f.store.mu.Unlock()
	sent := Progress{Current: "source /data", Figures: Figures{BytesRead: 2048, BytesAdded: 512, Files: 7, FilesSkipped: 1,
		Skipped: []Skipped{{Object: "/data/x", Reason: "permission denied"}}, Counters: map[string]int64{"sources_done": 1}}}
	var during Run
	f.pass.Executor = funcExecutor(func(ctx context.Context, _ JobDef, run Run, progress func(Progress)) (Result, error) {
		progress(sent)
		reported.Store(true)
		// The heartbeat after the one that began after the report has
		// stored it: heartbeats go one after another.
		<-beats
		<-beats
		during = f.store.get(run.ID)
		return Result{Figures: Figures{BytesRead: 4096, BytesAdded: 1024, Files: 9}}, nil
	})
	first := f.queued("daten", "normal", at(h))
	if sum := f.run(at(h)); len(sum.Finished) != 1 {
		t.Fatalf("finished %d runs, want 1", len(sum.Finished))
	}
	if during.Status != StatusRunning || during.Current != sent.Current || during.Figures.BytesRead != 2048 ||
		during.Figures.BytesAdded != 512 || during.Figures.Files != 7 || during.Figures.FilesSkipped != 1 ||
		during.Figures.Counters["sources_done"] != 1 || len(during.Figures.Skipped) != 0 {
		t.Errorf("while it ran the store had %+v (current %q); want the progress reported, without the skipped list", during.Figures, during.Current)
	}
	if got := f.store.get(first.ID); got.Figures.BytesRead != 4096 || got.Figures.Files != 9 {
		t.Errorf("the result did not replace the progress: %+v", got.Figures)
	}
}
