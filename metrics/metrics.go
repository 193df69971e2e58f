package metrics

import (
	"cmp"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nightjar-backup/nightjar/schedule/pass"
	"github.com/nightjar-backup/nightjar/status"
)

// Snapshot is everything the metrics are made from, read by the caller at
// one moment.
type Snapshot struct {
	// Status is what status.Evaluate decides the warnings from: the time,
	// the passes, the jobs (with their rpo and newest good snapshot), the
	// queued and running runs, the repositories and their probes.
	Status status.State
	// Figures holds, by job name, what the job's last runs did.
	Figures map[string]JobFigures
	// RepositorySizes holds, by repository name, the bytes of the
	// repository's objects as its last probe listed them; a repository
	// missing here has no known size.
	RepositorySizes map[string]int64
	// Version is nightjar's version, for nightjar_build_info.
	Version string
}

// JobFigures are a job's last runs, as the state database keeps them.
type JobFigures struct {
	// LastRuns holds, per kind, the run of that kind that ended last among
	// those that started.
	LastRuns map[string]pass.Run
	// LastSuccess is the end of the newest backup run that fully
	// succeeded; zero: none.
	LastSuccess time.Time
}

// BackupStatuses are the end states of a run, the closed set of the status
// label of nightjar_backup_last_run_status.
var BackupStatuses = []string{
	pass.StatusSucceeded, pass.StatusPartialFailure, pass.StatusFailed,
	pass.StatusCancelled, pass.StatusInterrupted,
}

// scope says which subjects a warning code is exported for (with 0 when
// it is not active), so that an alert on `== 1` never misses a problem by
// the series' absence.
type scope int

const (
	scopeScheduler  scope = iota // one series: job="" repository=""
	scopeJob                     // one per job, with the job's repository
	scopeBackupJob               // one per backup job, with the job's repository
	scopeRepository              // one per configured repository, job=""
)

// scopes lists the scope of every code of status.Codes. A code missing
// here (a newer status) is exported only while it is active.
var scopes = map[status.Code]scope{
	status.CodeSchedulerOffline:      scopeScheduler,
	status.CodeJobPaused:             scopeJob,
	status.CodeScheduleDisabled:      scopeJob,
	status.CodeNoBackupYet:           scopeBackupJob,
	status.CodeBackupStale:           scopeBackupJob,
	status.CodeLastRunFailed:         scopeJob,
	status.CodeLastRunPartial:        scopeJob,
	status.CodeRepositoryUnavailable: scopeRepository,
	status.CodeRepositoryLowSpace:    scopeRepository,
	status.CodeRepositoryUnencrypted: scopeRepository,
	status.CodeVerifyFailed:          scopeBackupJob,
	status.CodeNeverDeepVerified:     scopeBackupJob,
	status.CodeRunHeld:               scopeJob,
	status.CodeRunStuck:              scopeJob,
}

var (
	buildInfo = prometheus.NewDesc("nightjar_build_info",
		"Always 1; the version label is the version of nightjar that wrote these metrics.", []string{"version"}, nil)
	lastPass = prometheus.NewDesc("nightjar_scheduler_last_pass_timestamp_seconds",
		"Unix time of the newest scheduler pass (tick or serve) recorded on any host; 0 when none was ever recorded.", nil, nil)
	runs = prometheus.NewDesc("nightjar_runs",
		"Active runs by state: queued (waiting for their time or a free slot), held (due, and not started by a pass that said why) and running; the three are disjoint.", []string{"state"}, nil)
	warning = prometheus.NewDesc("nightjar_warning",
		"1 while the warning of this code (a closed set, see nightjar status) is active for this job or repository, 0 when not; every code is exported for every job or repository it can apply to.", []string{"code", "severity", "job", "repository"}, nil)
	lastSuccess = prometheus.NewDesc("nightjar_backup_last_success_timestamp_seconds",
		"Unix time at which the job's newest fully succeeded backup run ended; absent when it has none.", []string{"job"}, nil)
	lastSnapshot = prometheus.NewDesc("nightjar_backup_last_snapshot_timestamp_seconds",
		"Unix time at which the job's newest backup run that made a snapshot (succeeded, or partial_failure) ended; absent when it has none. Compared with the rpo for backup_stale.", []string{"job"}, nil)
	rpo = prometheus.NewDesc("nightjar_backup_rpo_seconds",
		"The job's rpo: how old its newest good snapshot may grow.", []string{"job"}, nil)
	lastStatus = prometheus.NewDesc("nightjar_backup_last_run_status",
		"1 for the status of the job's last backup run that started and ended, 0 for the other statuses; all 0 when it has none.", []string{"job", "status"}, nil)
	lastDuration = prometheus.NewDesc("nightjar_run_last_duration_seconds",
		"How long the job's last run of this kind took, from its start to its end.", []string{"job", "kind"}, nil)
	lastEnd = prometheus.NewDesc("nightjar_run_last_end_timestamp_seconds",
		"Unix time at which the job's last run of this kind that started ended.", []string{"job", "kind"}, nil)
	lastRead = prometheus.NewDesc("nightjar_backup_last_read_bytes",
		"Bytes the job's last backup run read from its sources.", []string{"job"}, nil)
	lastAdded = prometheus.NewDesc("nightjar_backup_last_added_bytes",
		"Bytes the job's last backup run added to its repository (new packs and index, after deduplication and compression).", []string{"job"}, nil)
	lastFiles = prometheus.NewDesc("nightjar_backup_last_files",
		"Files the job's last backup run backed up.", []string{"job"}, nil)
	lastSkipped = prometheus.NewDesc("nightjar_backup_last_skipped_files",
		"Files and other objects the job's last backup run could not back up (the run is then partial_failure).", []string{"job"}, nil)
	repoUp = prometheus.NewDesc("nightjar_repository_up",
		"1 when the repository's last probe opened it with its password and wrote to it, 0 when it did not; absent until it is probed.", []string{"repository"}, nil)
	repoProbed = prometheus.NewDesc("nightjar_repository_last_probe_timestamp_seconds",
		"Unix time of the repository's last probe.", []string{"repository"}, nil)
	repoFree = prometheus.NewDesc("nightjar_repository_free_bytes",
		"Bytes free for the repository on its storage, as its last probe read them; absent when unknown.", []string{"repository"}, nil)
	repoTotal = prometheus.NewDesc("nightjar_repository_total_bytes",
		"Size in bytes of the storage (file system) that holds the repository, as its last probe read it; absent when unknown.", []string{"repository"}, nil)
	repoSize = prometheus.NewDesc("nightjar_repository_size_bytes",
		"Bytes of the repository's objects (config, keys, packs, indexes, snapshots, ...), as its last probe listed them; absent when unknown.", []string{"repository"}, nil)
	collectFailed = prometheus.NewDesc("nightjar_metrics_collect_error",
		"The state could not be read for the metrics.", nil, nil)
)

var descs = []*prometheus.Desc{buildInfo, lastPass, runs, warning, lastSuccess, lastSnapshot, rpo, lastStatus,
	lastDuration, lastEnd, lastRead, lastAdded, lastFiles, lastSkipped, repoUp, repoProbed, repoFree, repoTotal, repoSize}

// Collector is a prometheus.Collector that reads a Snapshot at each
// collection (each scrape of /metrics, each textfile write).
type Collector struct {
	read func() (Snapshot, error)
}

// NewCollector returns a Collector that calls read at each collection; an
// error of read fails the collection.
func NewCollector(read func() (Snapshot, error)) *Collector { return &Collector{read: read} }

// NewRegistry returns a registry holding only a Collector of read.
func NewRegistry(read func() (Snapshot, error)) *prometheus.Registry {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewCollector(read))
	return reg
}

// Describe sends the description of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// Collect reads a snapshot and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.read()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(collectFailed, err)
		return
	}
	for _, m := range Metrics(s) {
		ch <- m
	}
}

// Metrics returns the metrics of a snapshot.
func Metrics(s Snapshot) []prometheus.Metric {
	var out []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	st := s.Status
	gauge(buildInfo, 1, cmp.Or(s.Version, "unknown"))

	var newest time.Time
	for _, p := range st.Passes {
		if p.At.After(newest) {
			newest = p.At
		}
	}
	gauge(lastPass, seconds(newest))

	// Held is what status's run_held counts as held: a run that is due
	// (its retry backoff, NotBefore, is over) and that a pass did not
	// start, saying why. A run waiting for its time keeps the held reason
	// of an earlier pass, and is queued.
	held := 0
	for _, q := range st.Queued {
		if q.HeldReason != "" && !q.NotBefore.After(st.Now) {
			held++
		}
	}
	gauge(runs, float64(len(st.Queued)-held), "queued")
	gauge(runs, float64(held), "held")
	gauge(runs, float64(len(st.Running)), "running")

	for _, j := range st.Jobs {
		figures := s.Figures[j.Name]
		if isBackup(j) {
			if !figures.LastSuccess.IsZero() {
				gauge(lastSuccess, seconds(figures.LastSuccess), j.Name)
			}
			if !j.LastGoodSnapshot.IsZero() {
				gauge(lastSnapshot, seconds(j.LastGoodSnapshot), j.Name)
			}
			gauge(rpo, cmp.Or(j.RPO, status.DefaultRPO).Seconds(), j.Name)
			last, ran := figures.LastRuns[pass.KindBackup]
			for _, st := range BackupStatuses {
				gauge(lastStatus, boolValue(ran && last.Status == st), j.Name, st)
			}
			if ran {
				gauge(lastRead, float64(last.Figures.BytesRead), j.Name)
				gauge(lastAdded, float64(last.Figures.BytesAdded), j.Name)
				gauge(lastFiles, float64(last.Figures.Files), j.Name)
				gauge(lastSkipped, float64(last.Figures.FilesSkipped), j.Name)
			}
		}
		for _, kind := range sortedKinds(figures.LastRuns) {
			r := figures.LastRuns[kind]
			gauge(lastEnd, seconds(r.EndedAt), j.Name, kind)
			gauge(lastDuration, max(r.EndedAt.Sub(r.StartedAt), 0).Seconds(), j.Name, kind)
		}
	}

	for _, r := range st.Repositories {
		p := r.Probe
		if p == nil {
			continue
		}
		gauge(repoUp, boolValue(p.Reachable), r.Name)
		gauge(repoProbed, seconds(p.At), r.Name)
		if p.SpaceKnown {
			gauge(repoFree, float64(p.FreeBytes), r.Name)
			gauge(repoTotal, float64(p.TotalBytes), r.Name)
		}
		if size, ok := s.RepositorySizes[r.Name]; ok {
			gauge(repoSize, float64(size), r.Name)
		}
	}

	for _, w := range warningSeries(st, status.Evaluate(st)) {
		gauge(warning, boolValue(w.active), string(w.code), string(w.code.Severity()), w.job, w.repository)
	}
	return out
}

// series is one nightjar_warning series.
type series struct {
	code            status.Code
	job, repository string
	active          bool
}

// warningSeries returns a series for every code of status.Codes and every
// subject of its scope, active or not, and one for each active warning
// outside those (a job or repository no longer configured, a code this
// package does not know), sorted.
func warningSeries(st status.State, active []status.Warning) []series {
	type key struct {
		code            status.Code
		job, repository string
	}
	all := map[key]*series{}
	add := func(code status.Code, job, repository string) {
		k := key{code, job, repository}
		if all[k] == nil {
			all[k] = &series{code: code, job: job, repository: repository}
		}
	}
	jobRepository := map[string]string{}
	for _, j := range st.Jobs {
		jobRepository[j.Name] = j.Repository
	}
	for _, code := range status.Codes() {
		sc, known := scopes[code]
		if !known {
			continue
		}
		switch sc {
		case scopeScheduler:
			add(code, "", "")
		case scopeJob, scopeBackupJob:
			for _, j := range st.Jobs {
				if sc == scopeJob || isBackup(j) {
					add(code, j.Name, j.Repository)
				}
			}
		case scopeRepository:
			for _, r := range st.Repositories {
				add(code, "", r.Name)
			}
		}
	}
	for _, w := range active {
		job, repository := w.Job, w.Repository
		sc, known := scopes[w.Code]
		switch {
		case !known:
		case sc == scopeScheduler:
			job, repository = "", ""
		case sc == scopeJob || sc == scopeBackupJob:
			if r, ok := jobRepository[w.Job]; ok {
				repository = r
			}
		case sc == scopeRepository:
			job = ""
		}
		add(w.Code, job, repository)
		all[key{w.Code, job, repository}].active = true
	}
	out := make([]series, 0, len(all))
	for _, s := range all {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b series) int {
		return cmp.Or(cmp.Compare(a.code, b.code), cmp.Compare(a.job, b.job), cmp.Compare(a.repository, b.repository))
	})
	return out
}

func isBackup(j status.Job) bool { return j.Kind == "" || j.Kind == pass.KindBackup }

func sortedKinds(m map[string]pass.Run) []string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// seconds is t as Unix seconds (with a fraction); 0 for the zero time.
func seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
