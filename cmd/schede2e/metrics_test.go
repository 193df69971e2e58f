//go:build linux

package schede2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsWorld is a world with a job that succeeds (good: two files) and
// one that fails (bad: its only source is missing), without retries, in a
// repository that runs both at once.
func metricsWorld(t *testing.T, metricsTable string) *world {
	t.Helper()
	w := newWorld(t)
	src := w.path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"a.txt": "alpha\n", "b.txt": "bravo!\n"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w.writeConfig(header("", "max_concurrent_runs = 2") +
		job("good", "daily 02:00", "", src) +
		job("bad", "daily 02:00", "retry = { attempts = 1 }", w.path("missing")) +
		"\n" + metricsTable)
	return w
}

// families parses a Prometheus text exposition.
func families(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("the metrics do not parse: %v\n%s", err, text)
	}
	return fams
}

// gauge is the value of the series of name with exactly labels (given as
// name, value pairs); ok false when absent.
func gauge(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.Metric {
		if len(m.Label) != len(want) {
			continue
		}
		for _, l := range m.Label {
			if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

// A tick writes the textfile after its pass: it parses, and holds the
// right values for a job that succeeded and one that failed. A textfile
// that cannot be written is a warning, and the pass's outcome stands.
func TestMetricsTextfileAfterTick(t *testing.T) {
	t.Parallel()
	w := metricsWorld(t, "[metrics]\ntextfile = \"{{dir}}/textfile/nightjar.prom\"\n")
	textfile := w.path("textfile/nightjar.prom")
	if err := os.MkdirAll(filepath.Dir(textfile), 0o755); err != nil {
		t.Fatal(err)
	}
	w.must(exitOK, "job", "run", "good")
	w.must(exitOK, "job", "run", "bad")
	before := time.Now()
	w.must(exitFailure, "tick")
	after := time.Now()

	info, err := os.Stat(textfile)
	if err != nil {
		t.Fatalf("tick wrote no textfile: %v", err)
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("textfile mode %v, want 0644 (node_exporter reads it as another user)", info.Mode().Perm())
	}
	if names := dirEntries(t, filepath.Dir(textfile)); len(names) != 1 {
		t.Errorf("textfile folder holds %v, want only the textfile", names)
	}
	text, err := os.ReadFile(textfile)
	if err != nil {
		t.Fatal(err)
	}
	fams := families(t, text)
	size := float64(repositoryBytes(t, w.repo)) // nothing wrote to it since the tick's probe
	inWindow := func(v float64) bool {
		return v >= float64(before.Unix()) && v <= float64(after.Unix()+1)
	}
	cases := []struct {
		name   string
		metric string
		labels []string
		check  func(v float64) bool
		want   string
	}{
		{"good's last backup succeeded", "nightjar_backup_last_run_status", []string{"job", "good", "status", "succeeded"}, eq(1), "1"},
		{"good's last backup did not fail", "nightjar_backup_last_run_status", []string{"job", "good", "status", "failed"}, eq(0), "0"},
		{"bad's last backup failed", "nightjar_backup_last_run_status", []string{"job", "bad", "status", "failed"}, eq(1), "1"},
		{"bad's last backup did not succeed", "nightjar_backup_last_run_status", []string{"job", "bad", "status", "succeeded"}, eq(0), "0"},
		{"good's success is this tick's", "nightjar_backup_last_success_timestamp_seconds", []string{"job", "good"}, inWindow, "within the tick"},
		{"good's files", "nightjar_backup_last_files", []string{"job", "good"}, eq(2), "2"},
		{"good's bytes read", "nightjar_backup_last_read_bytes", []string{"job", "good"}, eq(13), "13"},
		{"good added bytes", "nightjar_backup_last_added_bytes", []string{"job", "good"}, func(v float64) bool { return v > 0 }, "> 0"},
		{"good skipped nothing", "nightjar_backup_last_skipped_files", []string{"job", "good"}, eq(0), "0"},
		{"good's backup took its time", "nightjar_run_last_duration_seconds", []string{"job", "good", "kind", "backup"},
			func(v float64) bool { return v >= 0 && v <= after.Sub(before).Seconds() }, "within the tick"},
		{"the pass is this tick", "nightjar_scheduler_last_pass_timestamp_seconds", nil, inWindow, "within the tick"},
		{"nothing queued", "nightjar_runs", []string{"state", "queued"}, eq(0), "0"},
		{"nothing running", "nightjar_runs", []string{"state", "running"}, eq(0), "0"},
		{"bad's failure is a warning", "nightjar_warning", []string{"code", "last_run_failed", "severity", "warning", "job", "bad", "repository", "main"}, eq(1), "1"},
		{"good has no failure warning", "nightjar_warning", []string{"code", "last_run_failed", "severity", "warning", "job", "good", "repository", "main"}, eq(0), "0"},
		{"bad has no backup yet", "nightjar_warning", []string{"code", "no_backup_yet", "severity", "warning", "job", "bad", "repository", "main"}, eq(1), "1"},
		{"the scheduler is online", "nightjar_warning", []string{"code", "scheduler_offline", "severity", "critical", "job", "", "repository", ""}, eq(0), "0"},
		{"the pass probed the repository", "nightjar_repository_up", []string{"repository", "main"}, eq(1), "1"},
		{"the probe read the free space", "nightjar_repository_free_bytes", []string{"repository", "main"}, func(v float64) bool { return v > 0 }, "> 0"},
		{"the probe listed the repository's size", "nightjar_repository_size_bytes", []string{"repository", "main"}, eq(size), "the bytes of its files"},
		{"an inactive repository code is exported as 0", "nightjar_warning", []string{"code", "repository_unavailable", "severity", "critical", "job", "", "repository", "main"}, eq(0), "0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, ok := gauge(fams, c.metric, c.labels...)
			if !ok {
				t.Fatalf("%s%v is missing from the textfile:\n%s", c.metric, c.labels, text)
			}
			if !c.check(v) {
				t.Errorf("%s%v = %v, want %s", c.metric, c.labels, v, c.want)
			}
		})
	}
	if _, ok := gauge(fams, "nightjar_backup_last_success_timestamp_seconds", "job", "bad"); ok {
		t.Error("bad never succeeded, yet has a last success")
	}

	t.Run("promtool check metrics", func(t *testing.T) {
		promtool, err := exec.LookPath("promtool")
		if err != nil {
			t.Skip("promtool is not installed (CI installs Debian's prometheus package for it)")
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	})

	// The textfile's folder is gone: the next pass (nothing due) still
	// succeeds, and says why no metrics were written.
	if err := os.RemoveAll(filepath.Dir(textfile)); err != nil {
		t.Fatal(err)
	}
	res := w.must(exitOK, "tick")
	if !strings.Contains(res.Stderr, "warning: metrics not written") || !strings.Contains(res.Stderr, textfile) {
		t.Errorf("an unwritable textfile must be a warning naming it:\n%s", res)
	}
}

// serve answers GET /metrics on [metrics] listen (port 0: the port it
// prints), with the state of its passes.
func TestMetricsServeListen(t *testing.T) {
	t.Parallel()
	w := metricsWorld(t, "[metrics]\nlisten = \"127.0.0.1:0\"\n")
	w.must(exitOK, "job", "run", "good")

	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := w.command(ctx, "serve", "--config", w.cfg)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	// waitFor reads serve's stdout until a line matches re.
	waitFor := func(re *regexp.Regexp) []string {
		t.Helper()
		for line := range lines {
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		}
		t.Fatalf("serve ended before printing a line matching %s\n--- stderr:\n%s", re, stderr.String())
		return nil
	}
	url := "http://" + waitFor(regexp.MustCompile(`^metrics on http://(127\.0\.0\.1:\d+)/metrics$`))[1] + "/metrics"
	waitFor(regexp.MustCompile(`^run \d+ of job good: succeeded`))

	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v\n%s", url, resp.Status, err, body)
	}
	fams := families(t, body)
	if v, ok := gauge(fams, "nightjar_backup_last_run_status", "job", "good", "status", "succeeded"); !ok || v != 1 {
		t.Errorf("good's last backup status succeeded = %v (present %v), want 1\n%s", v, ok, body)
	}
	if v, ok := gauge(fams, "nightjar_scheduler_last_pass_timestamp_seconds"); !ok || v == 0 {
		t.Errorf("last pass = %v (present %v), want serve's pass", v, ok)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range lines {
	}
	// A signal stops serve as it stops tick: exit 130 (interrupted).
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 130 {
		t.Errorf("serve after SIGTERM: %v, want exit 130\n%s", err, stderr.String())
	}
}

// An address serve cannot listen on stops it at once, with one line
// naming the address.
func TestMetricsServeListenError(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	w := metricsWorld(t, "[metrics]\nlisten = \""+addr+"\"\n")
	res := w.must(exitFailure, "serve")
	msg := strings.TrimSpace(res.Stderr)
	if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, addr) || !strings.Contains(msg, "[metrics] listen") {
		t.Errorf("want one line naming %s and the key:\n%s", addr, res)
	}
}

func eq(want float64) func(float64) bool { return func(v float64) bool { return v == want } }
