//go:build linux

package schede2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// hookRequest is one request a loopback test server received.
type hookRequest struct {
	Path, ContentType, UserAgent string
	Body                         []byte
}

// hookServer is a real HTTP server on 127.0.0.1 that records every
// request and answers 200. With hold set it never answers: each request
// waits until the client gives up or the test ends.
type hookServer struct {
	*httptest.Server
	mu   sync.Mutex
	got  []hookRequest
	hold bool
}

func newHookServer(t *testing.T, hold bool) *hookServer {
	t.Helper()
	s := &hookServer{hold: hold}
	release := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, hookRequest{Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), UserAgent: r.UserAgent(), Body: body})
		s.mu.Unlock()
		if s.hold {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() {
		close(release)
		s.Close()
	})
	return s
}

// requests returns what the server received under path prefix, in order.
func (s *hookServer) requests(prefix string) []hookRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []hookRequest
	for _, r := range s.got {
		if strings.HasPrefix(r.Path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// hookDoc is the webhook document as README (Notifications) documents it.
type hookDoc struct {
	Event        string           `json:"event"`
	Summary      string           `json:"summary"`
	RunID        int64            `json:"run_id"`
	Job          string           `json:"job"`
	Kind         string           `json:"kind"`
	Trigger      string           `json:"trigger"`
	Attempt      int              `json:"attempt"`
	Status       string           `json:"status"`
	ErrorClass   string           `json:"error_class"`
	ErrorCode    string           `json:"error_code"`
	Message      string           `json:"message"`
	BytesRead    int64            `json:"bytes_read"`
	BytesAdded   int64            `json:"bytes_added"`
	Files        int64            `json:"files"`
	FilesSkipped int64            `json:"files_skipped"`
	Counters     map[string]int64 `json:"counters"`
	Snapshots    []struct {
		SnapshotID string `json:"snapshot_id"`
		Source     string `json:"source"`
	} `json:"snapshots"`
	Repository      string     `json:"repository"`
	Schedule        string     `json:"schedule"`
	Host            string     `json:"host"`
	StartedAt       *time.Time `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at"`
	DurationSeconds *float64   `json:"duration_seconds"`
	Version         string     `json:"nightjar_version"`
}

// A tick with two jobs due: a backs up, b's source is missing. The
// webhook of [notify] gets, for each, a start document and then one with
// the run's outcome; a's healthcheck gets /start and then its URL, b's
// /start and then /fail. The run IDs, figures and snapshots are those
// tick --json reports.
func TestNotifyWebhooksAndHealthchecks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	srv := newHookServer(t, false)
	src := w.path("data")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("notify me"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(header("", "max_concurrent_runs = 2") +
		job("a", "hourly :00", "notify = { healthcheck = \""+srv.URL+"/ping/UUID-A\" }", src) +
		job("b", "hourly :00", "retry = { attempts = 1 }\nnotify = { healthcheck = \""+srv.URL+"/ping/UUID-B\" }", w.path("missing")) +
		"\n[notify]\nwebhooks = [\"" + srv.URL + "/hook/TOKEN\"]\n")
	w.tick(exitOK, "--at", "2026-06-01T09:30:00Z")
	res := w.must(exitFailure, "tick", "--json", "--at", "2026-06-01T10:00:05Z")
	var p passRec
	decodeWhole(t, res, &p)
	finished := map[string]runRec{}
	for _, r := range p.Finished {
		finished[r.Job] = r
	}
	if finished["a"].Status != "succeeded" || finished["b"].Status != "failed" {
		t.Fatalf("tick finished %+v, want a succeeded and b failed", p.Finished)
	}

	docs := map[string][]hookDoc{}
	for _, r := range srv.requests("/hook/TOKEN") {
		if r.ContentType != "application/json" || !strings.HasPrefix(r.UserAgent, "nightjar/") {
			t.Errorf("webhook request with Content-Type %q, User-Agent %q", r.ContentType, r.UserAgent)
		}
		var d hookDoc
		if err := json.Unmarshal(r.Body, &d); err != nil {
			t.Fatalf("webhook body is not JSON: %v\n%s", err, r.Body)
		}
		docs[d.Job] = append(docs[d.Job], d)
	}
	host, _ := os.Hostname()
	for _, name := range []string{"a", "b"} {
		run := finished[name]
		got := docs[name]
		if len(got) != 2 || got[0].Event != "started" || got[1].Event != run.Status {
			t.Fatalf("webhook documents of %s: %+v, want started then %s", name, got, run.Status)
		}
		for _, d := range got {
			if d.RunID != run.ID || d.Kind != "backup" || d.Trigger != "schedule" || d.Attempt != 1 || d.Host != host ||
				d.Version == "" || d.Repository != "main" || !strings.Contains(d.Schedule, "hour") || d.StartedAt == nil {
				t.Errorf("document %+v: want run %d of %s, backup, schedule, attempt 1, host %s, a version, repository main and the schedule in words", d, run.ID, name, host)
			}
		}
		if end := got[1]; end.Status != run.Status || end.EndedAt == nil || end.DurationSeconds == nil || !strings.Contains(end.Summary, "job "+name) {
			t.Errorf("end document of %s: %+v", name, end)
		}
	}
	a, b := docs["a"][1], docs["b"][1]
	if a.BytesRead != int64(len("notify me")) || a.Files != 1 || len(a.Snapshots) != 1 || a.Snapshots[0].SnapshotID != finished["a"].Snapshots[0].SnapshotID || a.ErrorCode != "" {
		t.Errorf("a's success document: %+v, want its figures and snapshot %+v", a, finished["a"].Snapshots)
	}
	if b.ErrorClass != "config" || b.ErrorCode != "SOURCE_MISSING" || b.Message == "" || b.Message != finished["b"].Message || len(b.Snapshots) != 0 {
		t.Errorf("b's failure document: %+v, want class config, SOURCE_MISSING and the run's message %q", b, finished["b"].Message)
	}

	for name, want := range map[string][]string{"a": {"/ping/UUID-A/start", "/ping/UUID-A"}, "b": {"/ping/UUID-B/start", "/ping/UUID-B/fail"}} {
		pings := srv.requests("/ping/UUID-" + strings.ToUpper(name))
		var paths []string
		for _, r := range pings {
			paths = append(paths, r.Path)
		}
		if strings.Join(paths, " ") != strings.Join(want, " ") {
			t.Errorf("healthcheck of %s got %q, want %q", name, paths, want)
			continue
		}
		if body := string(pings[1].Body); !strings.Contains(body, "backup run") || !strings.Contains(body, "job "+name) {
			t.Errorf("the end ping of %s carries %q, want a summary of the run", name, body)
		}
	}
	if strings.Contains(res.Stderr, "notification") {
		t.Errorf("tick warned about notifications that were delivered:\n%s", res)
	}
}

// A webhook that is down (a closed port) and one that never answers
// (held past its timeout): the backup still succeeds and tick exits 0;
// each notification that was not delivered is one warning on stderr
// naming the scheme and host only, never the URL's token.
func TestNotifyFailuresDoNotFailTheRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	down := newHookServer(t, false)
	down.Close()
	slow := newHookServer(t, true)
	src := w.path("data")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(header("", "") + job("a", "hourly :00", "", src) +
		"\n[notify]\nwebhooks = [\"" + down.URL + "/hook/DOWNTOKEN\", \"" + slow.URL + "/hook/SLOWTOKEN\"]\ntimeout = \"1s\"\nattempts = 2\n")
	w.tick(exitOK, "--at", "2026-06-01T09:30:00Z")
	// --verbose: tick prints its succeeded runs also when stdout is not a
	// terminal.
	res := w.must(exitOK, "tick", "--verbose", "--at", "2026-06-01T10:00:05Z")
	if !strings.Contains(res.Stdout, "succeeded") {
		t.Fatalf("the run did not succeed:\n%s", res)
	}
	if strings.Contains(res.Stderr, "TOKEN") || strings.Contains(res.Stdout, "TOKEN") {
		t.Errorf("the output shows a webhook's token:\n%s", res)
	}
	for _, want := range []string{
		"warning: notification to webhook " + down.URL + "/… (event started of run 1, job a) not delivered, after 2 attempts: ",
		"warning: notification to webhook " + down.URL + "/… (event succeeded of run 1, job a) not delivered, after 2 attempts: ",
		"warning: notification to webhook " + slow.URL + "/… (event started of run 1, job a) not delivered, after 2 attempts: no answer within 1s",
	} {
		if !strings.Contains(res.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.Stderr)
		}
	}
	if got := len(slow.requests("/hook/SLOWTOKEN")); got < 2 {
		t.Errorf("the slow server got %d requests, want the start document twice (retried after its timeout)", got)
	}
	if runs := w.runsOf("a"); len(runs) != 1 || runs[0].Status != "succeeded" {
		t.Errorf("runs of a: %+v, want one, succeeded", runs)
	}
}

// serve tells webhooks of the runs of its passes, and warns of a
// notification that was not delivered while it goes on running.
func TestNotifyServe(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	good := newHookServer(t, false)
	down := newHookServer(t, false)
	down.Close()
	src := w.path("data")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(header(`tick_interval = "1s"`, "") + job("a", "manual", "", src) +
		"\n[notify]\nwebhooks = [\"" + good.URL + "/hook\", \"" + down.URL + "/hook/DOWNTOKEN\"]\nattempts = 1\n")
	w.must(exitOK, "job", "run", "a")
	out := w.serveUntil("(event succeeded of run 1, job a) not delivered")
	if !strings.Contains(out, "warning: notification to webhook "+down.URL+"/… (event succeeded of run 1, job a) not delivered, after 1 attempt: ") ||
		strings.Contains(out, "DOWNTOKEN") {
		t.Errorf("serve's warning of the server that is down is missing, or shows its token:\n%s", out)
	}
	var events []string
	for _, r := range good.requests("/hook") {
		var d hookDoc
		if err := json.Unmarshal(r.Body, &d); err != nil {
			t.Fatalf("webhook body is not JSON: %v\n%s", err, r.Body)
		}
		events = append(events, d.Event+" "+d.Job+" "+d.Trigger)
	}
	if want := []string{"started a manual", "succeeded a manual"}; strings.Join(events, ", ") != strings.Join(want, ", ") {
		t.Errorf("serve told the webhook %q, want %q", events, want)
	}
}
