package metrics

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/nightjar-backup/nightjar/schedule/pass"
	"github.com/nightjar-backup/nightjar/status"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// world is a snapshot with a good job, a failed one, a paused manual one,
// a prune job, a held and a running run, a probed and an unprobed
// repository.
func world() Snapshot {
	good := now.Add(-2 * time.Hour)
	return Snapshot{
		Version: "1.2.3",
		Status: status.State{
			Now:    now,
			Passes: []status.Pass{{At: now.Add(-time.Minute), Host: "h", Mode: "tick"}, {At: now.Add(-time.Hour), Host: "old", Mode: "serve"}},
			Jobs: []status.Job{
				{Name: "good", Kind: pass.KindBackup, Repository: "main", RPO: 6 * time.Hour, LastGoodSnapshot: good, Created: now.Add(-48 * time.Hour),
					LastRuns: []status.Run{{ID: 1, Kind: pass.KindBackup, Status: pass.StatusSucceeded, Ended: good}}},
				{Name: "bad", Repository: "main", Created: now.Add(-48 * time.Hour),
					LastRuns: []status.Run{{ID: 2, Kind: pass.KindBackup, Status: pass.StatusFailed, Class: "source", Code: "ALL_SOURCES_FAILED", Ended: now.Add(-time.Hour)}}},
				{Name: "hand", Repository: "offsite", Paused: true, Manual: true},
				{Name: "repository:main", Kind: pass.KindPrune, Repository: "main"},
			},
			Queued: []status.QueuedRun{
				{ID: 5, Job: "hand", Repository: "offsite", QueuedAt: now.Add(-3 * time.Hour), HeldReason: "waiting: job is paused"},
				{ID: 6, Job: "good", Repository: "main", QueuedAt: now},
				{ID: 8, Job: "repository:main", Repository: "main", QueuedAt: now.Add(-time.Minute), NotBefore: now.Add(time.Minute),
					HeldReason: "waiting: the repository is locked"}, // a retry waiting for its time is queued, not held
			},
			Running: []status.RunningRun{{ID: 7, Job: "bad", Repository: "main", StartedAt: now, HeartbeatAt: now}},
			Repositories: []status.Repository{
				{Name: "main", Probe: &status.Probe{At: now.Add(-5 * time.Minute), Reachable: true, Encrypted: true, SpaceKnown: true, FreeBytes: 5 << 30, TotalBytes: 100 << 30}},
				{Name: "offsite"},
			},
		},
		RepositorySizes: map[string]int64{"main": 42 << 30, "gone": 7},
		Figures: map[string]JobFigures{
			"good": {LastSuccess: good, LastRuns: map[string]pass.Run{
				pass.KindBackup: {Status: pass.StatusSucceeded, StartedAt: good.Add(-90 * time.Second), EndedAt: good,
					Figures: pass.Figures{BytesRead: 4096, BytesAdded: 1024, Files: 12}},
				pass.KindVerify: {Status: pass.StatusSucceeded, StartedAt: good, EndedAt: good.Add(10 * time.Second)},
			}},
			"bad": {LastRuns: map[string]pass.Run{
				pass.KindBackup: {Status: pass.StatusFailed, StartedAt: now.Add(-time.Hour - 5*time.Second), EndedAt: now.Add(-time.Hour)},
			}},
		},
	}
}

// parse writes the snapshot's metrics as text and parses them back.
func parse(t *testing.T, s Snapshot) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, NewRegistry(func() (Snapshot, error) { return s, nil })); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("the text does not parse: %v\n%s", err, buf.String())
	}
	return families, buf.String()
}

// value finds the series of family name with exactly labels; ok false when absent.
func value(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		for _, l := range m.Label {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

func TestMetricsOfASnapshot(t *testing.T) {
	families, text := parse(t, world())
	l := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	good := float64(now.Add(-2 * time.Hour).Unix())
	cases := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
		absent bool
	}{
		{"build info", "nightjar_build_info", l("version", "1.2.3"), 1, false},
		{"newest pass of any host", "nightjar_scheduler_last_pass_timestamp_seconds", nil, float64(now.Add(-time.Minute).Unix()), false},
		{"queued runs exclude held ones, include a retry waiting for its time", "nightjar_runs", l("state", "queued"), 2, false},
		{"held runs", "nightjar_runs", l("state", "held"), 1, false},
		{"running runs", "nightjar_runs", l("state", "running"), 1, false},
		{"last success", "nightjar_backup_last_success_timestamp_seconds", l("job", "good"), good, false},
		{"no success: absent", "nightjar_backup_last_success_timestamp_seconds", l("job", "bad"), 0, true},
		{"last good snapshot", "nightjar_backup_last_snapshot_timestamp_seconds", l("job", "good"), good, false},
		{"rpo of the job", "nightjar_backup_rpo_seconds", l("job", "good"), 6 * 3600, false},
		{"default rpo", "nightjar_backup_rpo_seconds", l("job", "bad"), status.DefaultRPO.Seconds(), false},
		{"no rpo for a prune job", "nightjar_backup_rpo_seconds", l("job", "repository:main"), 0, true},
		{"status of the last backup", "nightjar_backup_last_run_status", l("job", "good", "status", "succeeded"), 1, false},
		{"other statuses are 0", "nightjar_backup_last_run_status", l("job", "good", "status", "failed"), 0, false},
		{"failed last backup", "nightjar_backup_last_run_status", l("job", "bad", "status", "failed"), 1, false},
		{"never run: every status 0", "nightjar_backup_last_run_status", l("job", "hand", "status", "succeeded"), 0, false},
		{"duration of a backup", "nightjar_run_last_duration_seconds", l("job", "good", "kind", "backup"), 90, false},
		{"duration of a verify", "nightjar_run_last_duration_seconds", l("job", "good", "kind", "verify"), 10, false},
		{"end of a verify", "nightjar_run_last_end_timestamp_seconds", l("job", "good", "kind", "verify"), good + 10, false},
		{"bytes read", "nightjar_backup_last_read_bytes", l("job", "good"), 4096, false},
		{"bytes added", "nightjar_backup_last_added_bytes", l("job", "good"), 1024, false},
		{"files", "nightjar_backup_last_files", l("job", "good"), 12, false},
		{"files skipped", "nightjar_backup_last_skipped_files", l("job", "good"), 0, false},
		{"reachable repository", "nightjar_repository_up", l("repository", "main"), 1, false},
		{"unprobed repository: absent", "nightjar_repository_up", l("repository", "offsite"), 0, true},
		{"free bytes", "nightjar_repository_free_bytes", l("repository", "main"), 5 << 30, false},
		{"total bytes", "nightjar_repository_total_bytes", l("repository", "main"), 100 << 30, false},
		{"repository size", "nightjar_repository_size_bytes", l("repository", "main"), 42 << 30, false},
		{"unprobed repository: no size", "nightjar_repository_size_bytes", l("repository", "offsite"), 0, true},
		{"a size of a repository not configured: absent", "nightjar_repository_size_bytes", l("repository", "gone"), 0, true},
		{"probe time", "nightjar_repository_last_probe_timestamp_seconds", l("repository", "main"), float64(now.Add(-5 * time.Minute).Unix()), false},
		{"active: failed run", "nightjar_warning", l("code", "last_run_failed", "severity", "warning", "job", "bad", "repository", "main"), 1, false},
		{"inactive: good job did not fail", "nightjar_warning", l("code", "last_run_failed", "severity", "warning", "job", "good", "repository", "main"), 0, false},
		{"inactive: scheduler online", "nightjar_warning", l("code", "scheduler_offline", "severity", "critical", "job", "", "repository", ""), 0, false},
		{"active: low space (5%)", "nightjar_warning", l("code", "repository_low_space", "severity", "warning", "job", "", "repository", "main"), 1, false},
		{"inactive: unprobed repository invents nothing", "nightjar_warning", l("code", "repository_unavailable", "severity", "critical", "job", "", "repository", "offsite"), 0, false},
		{"active: paused job", "nightjar_warning", l("code", "job_paused", "severity", "info", "job", "hand", "repository", "offsite"), 1, false},
		{"active: held run, with the job's repository", "nightjar_warning", l("code", "run_held", "severity", "warning", "job", "hand", "repository", "offsite"), 1, false},
		{"inactive: backup_stale within rpo", "nightjar_warning", l("code", "backup_stale", "severity", "critical", "job", "good", "repository", "main"), 0, false},
		{"backup codes not exported for a prune job", "nightjar_warning", l("code", "backup_stale", "severity", "critical", "job", "repository:main", "repository", "main"), 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := value(families, c.metric, c.labels)
			if c.absent {
				if ok {
					t.Errorf("%s%v = %v, want it absent", c.metric, c.labels, got)
				}
				return
			}
			if !ok {
				t.Fatalf("%s%v is missing\n%s", c.metric, c.labels, text)
			}
			if got != c.want {
				t.Errorf("%s%v = %v, want %v", c.metric, c.labels, got, c.want)
			}
		})
	}
	for name, f := range families {
		if f.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
		if f.GetType() != dto.MetricType_GAUGE {
			t.Errorf("%s is a %v, want a gauge", name, f.GetType())
		}
	}
}

// Every code of status.Codes is exported for every subject of its scope,
// and the series count stays what the scopes promise.
func TestWarningSeriesCoverEveryCode(t *testing.T) {
	s := world()
	families, _ := parse(t, s)
	byCode := map[string]int{}
	for _, m := range families["nightjar_warning"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "code" {
				byCode[l.GetValue()]++
			}
		}
	}
	jobs, backupJobs, repos := 4, 3, 2
	want := map[scope]int{scopeScheduler: 1, scopeJob: jobs, scopeBackupJob: backupJobs, scopeRepository: repos}
	for _, code := range status.Codes() {
		sc, ok := scopes[code]
		if !ok {
			t.Errorf("code %s has no scope: it would only be exported while active", code)
			continue
		}
		if byCode[string(code)] != want[sc] {
			t.Errorf("code %s: %d series, want %d", code, byCode[string(code)], want[sc])
		}
	}
}

// An active warning about a subject outside the scopes (a job no longer
// configured) is still exported, never dropped.
func TestWarningOutsideTheScopesIsKept(t *testing.T) {
	st := world().Status
	got := warningSeries(st, []status.Warning{{Code: status.CodeRunHeld, Job: "removed", Repository: "old"},
		{Code: "a_future_code", Job: "good"}})
	var found []string
	for _, s := range got {
		if s.active {
			found = append(found, string(s.code)+"/"+s.job+"/"+s.repository)
		}
	}
	sort.Strings(found)
	if strings.Join(found, " ") != "a_future_code/good/ run_held/removed/old" {
		t.Errorf("active series %v, want the removed job's run_held and the unknown code", found)
	}
}

func TestCollectError(t *testing.T) {
	reg := NewRegistry(func() (Snapshot, error) { return Snapshot{}, errors.New("database is locked") })
	var buf bytes.Buffer
	err := Write(&buf, reg)
	if err == nil || !strings.Contains(err.Error(), "database is locked") {
		t.Fatalf("Write = %v, want the read's error", err)
	}
}

func TestWriteTextfile(t *testing.T) {
	ok := NewRegistry(func() (Snapshot, error) { return world(), nil })
	failing := NewRegistry(func() (Snapshot, error) { return Snapshot{}, errors.New("no state") })
	cases := []struct {
		name     string
		old      string // content before; "" none
		reg      prometheus.Gatherer
		wantErr  bool
		wantText string // a line the file must hold after
	}{
		{"new file", "", ok, false, "nightjar_build_info{version=\"1.2.3\"} 1"},
		{"replaces an old file", "old content\n", ok, false, "nightjar_runs{state=\"held\"} 1"},
		{"a failed gather keeps the old file", "old content\n", failing, true, "old content"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "nightjar.prom")
			if c.old != "" {
				if err := os.WriteFile(path, []byte(c.old), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := WriteTextfile(path, c.reg)
			if (err != nil) != c.wantErr {
				t.Fatalf("WriteTextfile = %v, want error %v", err, c.wantErr)
			}
			data, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !strings.Contains(string(data), c.wantText) {
				t.Errorf("file does not hold %q:\n%s", c.wantText, data)
			}
			if !c.wantErr {
				info, _ := os.Stat(path)
				if info.Mode().Perm() != TextfileMode {
					t.Errorf("mode %v, want %v", info.Mode().Perm(), os.FileMode(TextfileMode))
				}
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("folder holds %v, want only the textfile (no temporary file left)", names)
			}
		})
	}
	if err := WriteTextfile(filepath.Join(t.TempDir(), "missing", "x.prom"), ok); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing folder: %v, want an error naming the path", err)
	}
}
