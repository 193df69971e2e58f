package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nightjar-backup/nightjar/cmd/config"
	"github.com/nightjar-backup/nightjar/db"
	"github.com/nightjar-backup/nightjar/metrics"
)

// metricsReadTimeout bounds one read of the state for the metrics (a
// scrape, a textfile write), so that a locked database fails the read
// instead of hanging a scrape.
const metricsReadTimeout = 10 * time.Second

// metricsSource reads the metrics of tick and serve. serve's passes, its
// reloads and its scrapes share it, so it holds the config under a lock.
type metricsSource struct {
	state *db.DB
	now   func() time.Time

	mu      sync.Mutex
	cfg     *config.Config
	writeMu sync.Mutex // one textfile write at a time
}

func newMetricsSource(s *scheduler) *metricsSource {
	return &metricsSource{state: s.db, now: s.now, cfg: s.cfg}
}

// setConfig makes cfg the config of the next writes and scrapes.
func (m *metricsSource) setConfig(cfg *config.Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg = cfg
}

// snapshot reads what the metrics are made from: the state nightjar
// status evaluates, and the figures of each job's last runs.
func (m *metricsSource) snapshot() (metrics.Snapshot, error) {
	m.mu.Lock()
	cfg := m.cfg
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), metricsReadTimeout)
	defer cancel()
	now := m.now()
	// One read transaction for the status facts and the figures
	// (db.MetricsState returns both): a run that ended between two reads
	// would make nightjar_backup_last_run_status disagree with
	// nightjar_warning's last_run_failed.
	state, err := m.state.MetricsState(ctx)
	if err != nil {
		return metrics.Snapshot{}, err
	}
	snap := metrics.Snapshot{Status: statusState(cfg, state.Status, now), Version: version, Figures: map[string]metrics.JobFigures{},
		RepositorySizes: map[string]int64{}}
	for _, p := range state.Status.Probes {
		if p.SizeKnown {
			snap.RepositorySizes[p.Name] = p.SizeBytes
		}
	}
	for _, j := range state.Jobs {
		snap.Figures[j.Name] = metrics.JobFigures{LastRuns: j.LastRuns, LastSuccess: j.LastSuccess}
	}
	return snap, nil
}

// metricsAfterTick writes tick's textfile after its pass.
func metricsAfterTick(s *scheduler, p *printer) {
	newMetricsSource(s).writeTextfile(p)
}

// writeTextfile writes the metrics to the config's [metrics] textfile, when
// it names one. A failure is a warning: it never fails the pass.
func (m *metricsSource) writeTextfile(p *printer) {
	m.mu.Lock()
	path := m.cfg.Metrics.Textfile
	m.mu.Unlock()
	if path == "" {
		return
	}
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	if err := metrics.WriteTextfile(path, metrics.NewRegistry(m.snapshot)); err != nil {
		p.Warnf("metrics not written (the pass itself is not affected): %v", err)
	}
}

// listen starts answering GET /metrics on the config's [metrics] listen
// address, when it names one, and returns the function that stops it.
// An address that cannot be listened on is an error naming it.
func (m *metricsSource) listen(p *printer) (stop func(), err error) {
	addr := m.cfg.Metrics.Listen
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner // the address is said once
		}
		return nil, fmt.Errorf("metrics: cannot listen on %s ([metrics] listen): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.NewRegistry(m.snapshot), promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.Warnf("metrics: serving on %s stopped: %v", ln.Addr(), err)
		}
	}()
	p.Printf("metrics on http://%s/metrics\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}
